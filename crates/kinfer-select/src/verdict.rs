//! Per-candidate verdicts and their reasons.
//!
//! Contract: every candidate gets exactly one [`Verdict`]: chosen, or rejected with the
//! *first* rule that removed it, in rule order: not Ready, unoptimized filtered, overrides not
//! matched (listing every mismatched override), GPU not in the cluster, lower preference rank
//! (naming the most significant key it lost on; scope counts as a key, so a cluster template
//! shadowed by a namespace one is rejected here), or tied at the best rank. [`Reason`] carries
//! the upstream CamelCase reason strings; `detail()` the human explanation.

use std::fmt;

use crate::candidate::{Candidate, NotReady, ProfileType};
use crate::gpu::GpuModel;
use crate::rank::RankField;

/// A per-candidate reason, displayed as its CamelCase name (the upstream strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The chosen candidate.
    BestMatch,
    /// Not Ready: Pending.
    TemplatePending,
    /// Not Ready: Progressing.
    TemplateProgressing,
    /// Not Ready: Degraded.
    TemplateDegraded,
    /// Not Ready: Failed.
    TemplateFailed,
    /// Not Ready: NotAvailable.
    TemplateNotAvailable,
    /// Preview or unoptimized profile without `allowUnoptimized`.
    UnoptimizedTemplateFiltered,
    /// A service override does not match.
    ServiceOverridesNotMatched,
    /// The template's GPU model is on no node.
    RequiredGPUNotInCluster,
    /// Passed every filter, ranked below the best.
    LowerPreferenceRank,
    /// Tied with another candidate at the best rank.
    TemplateSelectionAmbiguous,
}

impl Reason {
    /// The CamelCase reason string.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BestMatch => "BestMatch",
            Reason::TemplatePending => "TemplatePending",
            Reason::TemplateProgressing => "TemplateProgressing",
            Reason::TemplateDegraded => "TemplateDegraded",
            Reason::TemplateFailed => "TemplateFailed",
            Reason::TemplateNotAvailable => "TemplateNotAvailable",
            Reason::UnoptimizedTemplateFiltered => "UnoptimizedTemplateFiltered",
            Reason::ServiceOverridesNotMatched => "ServiceOverridesNotMatched",
            Reason::RequiredGPUNotInCluster => "RequiredGPUNotInCluster",
            Reason::LowerPreferenceRank => "LowerPreferenceRank",
            Reason::TemplateSelectionAmbiguous => "TemplateSelectionAmbiguous",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The filters, in the order they apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Filter {
    /// Only Ready templates.
    NotReady,
    /// Only optimized profiles unless `allowUnoptimized`.
    Unoptimized,
    /// The service's overrides.
    Overrides,
    /// The template's GPU must be in the cluster.
    GpuNotInCluster,
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Filter::NotReady => "not Ready",
            Filter::Unoptimized => "unoptimized",
            Filter::Overrides => "overrides",
            Filter::GpuNotInCluster => "GPU not in cluster",
        })
    }
}

/// A service override field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OverrideField {
    /// `overrides.metric`.
    Metric,
    /// `overrides.precision`.
    Precision,
    /// `overrides.hardware.gpu.model`.
    GpuModel,
    /// `overrides.hardware.gpu.requests`.
    GpuCount,
}

impl fmt::Display for OverrideField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OverrideField::Metric => "metric",
            OverrideField::Precision => "precision",
            OverrideField::GpuModel => "GPU model",
            OverrideField::GpuCount => "GPU count",
        })
    }
}

/// One override the candidate does not satisfy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OverrideMismatch {
    /// Which override.
    pub field: OverrideField,
    /// The service's value.
    pub wanted: String,
    /// The template's value (`-` when it has none).
    pub actual: String,
}

impl fmt::Display for OverrideMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} wanted, template has {}",
            self.field, self.wanted, self.actual
        )
    }
}

/// Why a candidate was not chosen.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rejection {
    /// Not Ready, with its status (never Ready: the type has no such value).
    NotReady(NotReady),
    /// A preview or unoptimized profile (or none) without `allowUnoptimized`.
    Unoptimized(Option<ProfileType>),
    /// Overrides it does not satisfy (never empty).
    OverridesNotMatched(Vec<OverrideMismatch>),
    /// Its GPU model is on no node.
    GpuNotInCluster(GpuModel),
    /// Ranked below the best on `field`.
    LowerRank {
        /// The most significant key it lost on.
        field: RankField,
        /// Its value on that key.
        value: String,
        /// The best candidate's value on that key.
        best: String,
    },
    /// Tied at the best rank with at least one other candidate.
    Ambiguous,
}

impl Rejection {
    /// The CamelCase reason.
    pub fn reason(&self) -> Reason {
        match self {
            Rejection::NotReady(status) => match status {
                NotReady::Pending => Reason::TemplatePending,
                NotReady::Progressing => Reason::TemplateProgressing,
                NotReady::Degraded => Reason::TemplateDegraded,
                NotReady::Failed => Reason::TemplateFailed,
                NotReady::NotAvailable => Reason::TemplateNotAvailable,
            },
            Rejection::Unoptimized(_) => Reason::UnoptimizedTemplateFiltered,
            Rejection::OverridesNotMatched(_) => Reason::ServiceOverridesNotMatched,
            Rejection::GpuNotInCluster(_) => Reason::RequiredGPUNotInCluster,
            Rejection::LowerRank { .. } => Reason::LowerPreferenceRank,
            Rejection::Ambiguous => Reason::TemplateSelectionAmbiguous,
        }
    }

    /// The filter that removed the candidate; `None` for ranking rejections.
    pub fn filter(&self) -> Option<Filter> {
        match self {
            Rejection::NotReady(_) => Some(Filter::NotReady),
            Rejection::Unoptimized(_) => Some(Filter::Unoptimized),
            Rejection::OverridesNotMatched(_) => Some(Filter::Overrides),
            Rejection::GpuNotInCluster(_) => Some(Filter::GpuNotInCluster),
            Rejection::LowerRank { .. } | Rejection::Ambiguous => None,
        }
    }

    /// A one-line human explanation.
    pub fn detail(&self) -> String {
        match self {
            Rejection::NotReady(status) => format!("status is {status}, not Ready"),
            Rejection::Unoptimized(profile) => format!(
                "profile type is {}; set allowUnoptimized to admit it",
                profile.map_or("unknown", ProfileType::as_str)
            ),
            Rejection::OverridesNotMatched(mismatches) => mismatches
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
            Rejection::GpuNotInCluster(model) => format!("no node has a {model}"),
            Rejection::LowerRank { field, value, best } => {
                format!("{field} {value} ranks after {best}")
            }
            Rejection::Ambiguous => "tied with another candidate on every preference".to_owned(),
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.reason(), f)
    }
}

/// Chosen, or rejected with a reason.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// The selected template.
    Chosen,
    /// Not selected.
    Rejected(Rejection),
}

impl Verdict {
    /// The CamelCase reason (`BestMatch` when chosen).
    pub fn reason(&self) -> Reason {
        match self {
            Verdict::Chosen => Reason::BestMatch,
            Verdict::Rejected(r) => r.reason(),
        }
    }

    /// `chosen` or `rejected`, as upstream's `status.templateCandidates[].status`.
    pub fn status(&self) -> &'static str {
        match self {
            Verdict::Chosen => "chosen",
            Verdict::Rejected(_) => "rejected",
        }
    }

    /// The rejection, if any.
    pub fn rejection(&self) -> Option<&Rejection> {
        match self {
            Verdict::Chosen => None,
            Verdict::Rejected(r) => Some(r),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.reason(), f)
    }
}

/// One candidate and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateVerdict<'a> {
    /// The candidate.
    pub candidate: &'a Candidate,
    /// Its verdict.
    pub verdict: Verdict,
    /// Dense preference rank among the candidates that passed every filter (1 = best).
    pub rank: Option<usize>,
}

impl CandidateVerdict<'_> {
    /// A one-line human explanation of the verdict.
    pub fn detail(&self) -> String {
        match &self.verdict {
            Verdict::Chosen => "highest preference rank".to_owned(),
            Verdict::Rejected(r) => r.detail(),
        }
    }
}
