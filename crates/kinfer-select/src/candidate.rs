//! Selection inputs: the candidate templates and the service's request.
//!
//! Contract: plain data with no behaviour beyond parsing and display. Enum values parse
//! case-insensitively; metric and precision accept any non-blank string (unknown values are
//! kept, match overrides case-insensitively and rank last) and a blank one means "not set"
//! (`None`), never a value. Absent values display as [`ABSENT`] everywhere. The operator maps
//! its CRD types onto these.

use std::fmt;

use crate::gpu::GpuModel;
pub use crate::status::{NotReady, ProfileType, TemplateStatus};

/// How an absent value is displayed in messages and tables.
pub const ABSENT: &str = "-";

/// `value` displayed, or [`ABSENT`].
pub(crate) fn or_absent<T: fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| ABSENT.to_owned(), |v| v.to_string())
}

/// Where a template lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// An AIMServiceTemplate in the service's namespace. Declared first: it ranks first.
    Namespace,
    /// An AIMClusterServiceTemplate.
    Cluster,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::Namespace => "Namespace",
            Scope::Cluster => "Cluster",
        })
    }
}

/// Declares a case-insensitive string enum with an `Other` fallback, in preference order.
macro_rules! open_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $(
                #[doc = concat!("`", $text, "`")]
                $variant,
            )+
            /// Any other non-blank value, lower-cased. Ranks after every known value.
            Other(String),
        }

        impl $name {
            /// Known values, best first.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// Parses case-insensitively; `None` for a blank string (the value is not set),
            /// [`Self::Other`] for any other unknown value.
            pub fn parse(s: &str) -> Option<Self> {
                let lower = s.trim().to_ascii_lowercase();
                Some(match lower.as_str() {
                    "" => return None,
                    $($text => $name::$variant,)+
                    _ => $name::Other(lower),
                })
            }

            /// Lower-case spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)+
                    $name::Other(s) => s,
                }
            }

            /// Position in the preference order; `None` for [`Self::Other`].
            pub fn preference(&self) -> Option<usize> {
                Self::KNOWN.iter().position(|k| k == self)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

open_enum! {
    /// Optimisation goal, latency preferred.
    Metric { Latency => "latency", Throughput => "throughput" }
}

open_enum! {
    /// Numeric precision, smallest first.
    Precision {
        Fp4 => "fp4", Int4 => "int4", Fp8 => "fp8", Int8 => "int8",
        Fp16 => "fp16", Bf16 => "bf16", Fp32 => "fp32",
    }
}

/// A template that could serve the service's model.
///
/// Field order is the canonical order of verdicts (scope, then name, then the rest), which
/// makes the output independent of the input order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Candidate {
    /// Namespace or cluster template.
    pub scope: Scope,
    /// Template name.
    pub name: String,
    /// `status.status`.
    pub status: TemplateStatus,
    /// Profile type; `None` when not discovered yet (treated as unoptimized, ranks last).
    pub profile_type: Option<ProfileType>,
    /// GPU model the template pins; `None` for a GPU-less (or any-GPU) template.
    pub gpu_model: Option<GpuModel>,
    /// GPUs per replica; 0 when unspecified.
    pub gpu_count: u32,
    /// Optimisation metric.
    pub metric: Option<Metric>,
    /// Precision.
    pub precision: Option<Precision>,
}

impl Candidate {
    /// A Ready, optimized namespace template with nothing else set; adjust with the builders.
    pub fn new(name: impl Into<String>) -> Self {
        Candidate {
            scope: Scope::Namespace,
            name: name.into(),
            status: TemplateStatus::Ready,
            profile_type: Some(ProfileType::Optimized),
            gpu_model: None,
            gpu_count: 0,
            metric: None,
            precision: None,
        }
    }

    /// Sets the scope.
    #[must_use]
    pub fn scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    /// Sets the status.
    #[must_use]
    pub fn status(mut self, status: TemplateStatus) -> Self {
        self.status = status;
        self
    }

    /// Sets the profile type.
    #[must_use]
    pub fn profile(mut self, profile_type: Option<ProfileType>) -> Self {
        self.profile_type = profile_type;
        self
    }

    /// Sets the GPU model (normalised) and count.
    #[must_use]
    pub fn gpu(mut self, model: &str, count: u32) -> Self {
        self.gpu_model = GpuModel::new(model);
        self.gpu_count = count;
        self
    }

    /// Sets the metric (parsed; blank unsets it).
    #[must_use]
    pub fn metric(mut self, metric: &str) -> Self {
        self.metric = Metric::parse(metric);
        self
    }

    /// Sets the precision (parsed; blank unsets it).
    #[must_use]
    pub fn precision(mut self, precision: &str) -> Self {
        self.precision = Precision::parse(precision);
        self
    }

    /// The GPU cell of every rendering: `2 x MI300X`, `MI300X` (count unspecified), `no GPU`,
    /// `2 x any GPU`.
    pub fn gpu_label(&self) -> String {
        match (&self.gpu_model, self.gpu_count) {
            (Some(m), 0) => m.to_string(),
            (Some(m), n) => format!("{n} x {m}"),
            (None, 0) => "no GPU".to_owned(),
            (None, n) => format!("{n} x any GPU"),
        }
    }
}

/// What the service asks for: `spec.overrides` and `spec.template.allowUnoptimized`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Request {
    /// Required metric.
    pub metric: Option<Metric>,
    /// Required precision.
    pub precision: Option<Precision>,
    /// Required GPU model (normalised); templates that pin no model pass.
    pub gpu_model: Option<GpuModel>,
    /// Required GPUs per replica; `None` or 0 means any. Templates with count 0 pass.
    pub gpu_count: Option<u32>,
    /// Admit preview and unoptimized profiles.
    pub allow_unoptimized: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing() {
        assert_eq!(Metric::parse("LATENCY"), Some(Metric::Latency));
        assert_eq!(Metric::parse("Cost"), Some(Metric::Other("cost".into())));
        assert_eq!(Precision::parse(" BF16 "), Some(Precision::Bf16));
        assert_eq!(Precision::parse("auto").and_then(|p| p.preference()), None);
        assert_eq!(Precision::Fp8.preference(), Some(2));
    }

    #[test]
    fn blank_metric_and_precision_are_unset() {
        assert_eq!(Metric::parse(""), None);
        assert_eq!(Metric::parse("  "), None);
        assert_eq!(Precision::parse(""), None);
        assert_eq!(Precision::parse("\t"), None);
        let c = Candidate::new("t").metric("latency").precision("fp8");
        let c = c.metric(" ").precision("");
        assert_eq!((c.metric, c.precision), (None, None));
    }

    #[test]
    fn gpu_label() {
        let label = |c: Candidate| c.gpu_label();
        assert_eq!(label(Candidate::new("t").gpu("MI300X", 2)), "2 x MI300X");
        assert_eq!(label(Candidate::new("t").gpu("MI300X", 0)), "MI300X");
        assert_eq!(label(Candidate::new("t")), "no GPU");
        assert_eq!(label(Candidate::new("t").gpu(" ", 2)), "2 x any GPU");
        assert_eq!(or_absent(None::<Metric>), ABSENT);
    }

    #[test]
    fn builder() {
        let c = Candidate::new("t")
            .scope(Scope::Cluster)
            .gpu("Instinct MI300X", 8)
            .metric("Throughput")
            .precision("FP16");
        assert_eq!(c.gpu_model.as_ref().map(GpuModel::as_str), Some("MI300X"));
        assert_eq!(c.metric, Some(Metric::Throughput));
        assert_eq!(c.precision, Some(Precision::Fp16));
    }
}
