//! Rendering a selection for people: a condition reason and message, and a CLI table.
//!
//! Contract: [`Outcome::reason`] gives the upstream service condition reasons (`Resolved`,
//! `TemplateNotFound`, `TemplatesExistButNotReady`, `TemplateSelectionAmbiguous`);
//! [`Selection::message`] is one line, bounded in length (at most [`MAX_LISTED`] names are
//! listed), for a condition message; [`Selection::explain`] (also `Display`) is the full
//! multi-line report `kinfer explain template` prints: the outcome, the cluster's GPUs and a
//! table with one row per candidate. Output is deterministic.

use std::fmt::{self, Write as _};

use crate::candidate::{Candidate, or_absent};
use crate::select::{Outcome, Selection};
use crate::verdict::Filter;

/// Names listed in a one-line message before "and N more".
pub const MAX_LISTED: usize = 5;

/// The service-level reason for a selection outcome, displayed in CamelCase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OutcomeReason {
    /// A template was chosen.
    Resolved,
    /// No candidate, or none passes the filters.
    TemplateNotFound,
    /// Candidates exist but none is Ready yet.
    TemplatesExistButNotReady,
    /// A tie at the best rank.
    TemplateSelectionAmbiguous,
}

impl fmt::Display for OutcomeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutcomeReason::Resolved => "Resolved",
            OutcomeReason::TemplateNotFound => "TemplateNotFound",
            OutcomeReason::TemplatesExistButNotReady => "TemplatesExistButNotReady",
            OutcomeReason::TemplateSelectionAmbiguous => "TemplateSelectionAmbiguous",
        })
    }
}

impl Outcome<'_> {
    /// The condition reason.
    pub fn reason(&self) -> OutcomeReason {
        match self {
            Outcome::Chosen(_) => OutcomeReason::Resolved,
            Outcome::NoCandidates | Outcome::AllFiltered { .. } => OutcomeReason::TemplateNotFound,
            Outcome::NoneReady { .. } => OutcomeReason::TemplatesExistButNotReady,
            Outcome::Ambiguous { .. } => OutcomeReason::TemplateSelectionAmbiguous,
        }
    }
}

/// `a, b, c and 2 more`.
fn list<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    let mut shown: Vec<String> = items.iter().take(MAX_LISTED).map(show).collect();
    if items.len() > MAX_LISTED {
        shown.push(format!("and {} more", items.len() - MAX_LISTED));
    }
    shown.join(", ")
}

/// `optimized, 1 x MI300X, latency, fp8`: the same cells as the table's.
fn profile(c: &Candidate) -> String {
    format!(
        "{}, {}, {}, {}",
        or_absent(c.profile_type),
        c.gpu_label(),
        or_absent(c.metric.as_ref()),
        or_absent(c.precision.as_ref()),
    )
}

impl Selection<'_> {
    /// A one-line summary for a condition message.
    pub fn message(&self) -> String {
        let total = self.verdicts.len();
        match &self.outcome {
            Outcome::Chosen(c) => format!(
                "Selected {} template {:?} ({}) from {total} candidate(s)",
                c.scope.to_string().to_lowercase(),
                c.name,
                profile(c)
            ),
            Outcome::NoCandidates => "No templates exist for the model".to_owned(),
            Outcome::NoneReady { waiting } => format!(
                "{} template(s) exist but none is Ready yet: {}",
                waiting.len(),
                list(waiting, |c| format!("{} ({})", c.name, c.status))
            ),
            Outcome::AllFiltered { removed } => {
                let mut msg = format!(
                    "No template matches: {}",
                    list(removed, |(c, f)| format!("{} ({f})", c.name))
                );
                if removed.iter().any(|(_, f)| *f == Filter::Unoptimized) {
                    msg.push_str(
                        ". Set spec.template.allowUnoptimized to admit preview and unoptimized \
                         templates",
                    );
                }
                msg
            }
            Outcome::Ambiguous { tied } => format!(
                "{} templates tie at the best rank ({}): {}. Set spec.template.name or \
                 overrides to choose one",
                tied.len(),
                tied.first().map(|c| profile(c)).unwrap_or_default(),
                list(tied, |c| format!(
                    "{} ({})",
                    c.name,
                    c.scope.to_string().to_lowercase()
                ))
            ),
        }
    }

    /// The full report: outcome, cluster GPUs, one table row per candidate.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}: {}", self.outcome.reason(), self.message());
        let gpus: Vec<String> = self.cluster_gpus.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "Cluster GPUs: {}",
            if gpus.is_empty() {
                "none".to_owned()
            } else {
                gpus.join(", ")
            }
        );
        if self.verdicts.is_empty() {
            return out;
        }
        let header = [
            "TEMPLATE",
            "SCOPE",
            "STATUS",
            "PROFILE",
            "GPU",
            "METRIC",
            "PRECISION",
            "RANK",
            "VERDICT",
            "REASON",
        ];
        let rows: Vec<[String; 10]> = self
            .verdicts
            .iter()
            .map(|v| {
                let c = v.candidate;
                let detail = v.detail();
                [
                    c.name.clone(),
                    c.scope.to_string(),
                    c.status.to_string(),
                    or_absent(c.profile_type),
                    c.gpu_label(),
                    or_absent(c.metric.as_ref()),
                    or_absent(c.precision.as_ref()),
                    or_absent(v.rank),
                    v.verdict.status().to_owned(),
                    format!("{}: {detail}", v.verdict.reason()),
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut line = |cells: &[&str]| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i + 1 == cells.len() {
                    text.push_str(cell);
                } else {
                    let _ = write!(text, "{cell:<width$}  ", width = widths[i]);
                }
            }
            let _ = writeln!(out, "{}", text.trim_end());
        };
        line(&header);
        for row in &rows {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            line(&cells);
        }
        out
    }
}

impl fmt::Display for Selection<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}
