//! The one lifecycle phase every kinfer kind and the reconcile engine speak.
//!
//! Contract: six states, declared (and ordered by `Ord`) as Pending, Progressing, Ready,
//! Degraded, Failed, NotAvailable. The serde spelling and the JSON schema are exactly those of
//! the AIM `status.status` enum (`AIMStatus` is an alias of [`Phase`]), so CRDs generated from
//! kinds embedding it do not change. [`Phase::priority`] is upstream's aggregation order (the
//! lowest wins); [`Phase::is_error`] marks Failed, Degraded and NotAvailable. Kinds whose CRD
//! enum spells some states differently (AIMService: `Starting`, `Running`) map from a
//! [`Phase`] with a total `match`.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The lifecycle state of models, templates, template caches and artifacts (`status.status`).
#[derive(
    Serialize,
    Deserialize,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    JsonSchema,
)]
#[schemars(rename = "AIMStatus")]
pub enum Phase {
    /// Waiting for something upstream (a referenced object, a discovery slot).
    #[default]
    Pending,
    /// Work is under way (discovery, download).
    Progressing,
    /// Usable.
    Ready,
    /// Running with errors expected to clear (infrastructure problems).
    Degraded,
    /// Stopped on an error that needs a change (invalid spec, authentication, missing object).
    Failed,
    /// Cannot run in this cluster (e.g. the required GPU is absent).
    NotAvailable,
}

/// A string that is not one of the six phases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown phase {0:?} (want Pending, Progressing, Ready, Degraded, Failed or NotAvailable)")]
pub struct UnknownPhase(pub String);

impl Phase {
    /// Every phase, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::Pending,
        Self::Progressing,
        Self::Ready,
        Self::Degraded,
        Self::Failed,
        Self::NotAvailable,
    ];

    /// Upstream's priority: Ready 6 > Progressing 5 > Pending 3 > Degraded 2 > NotAvailable 1 >
    /// Failed 0. The lowest wins when phases are aggregated.
    pub fn priority(self) -> u8 {
        match self {
            Self::Ready => 6,
            Self::Progressing => 5,
            Self::Pending => 3,
            Self::Degraded => 2,
            Self::NotAvailable => 1,
            Self::Failed => 0,
        }
    }

    /// Failed, Degraded and NotAvailable.
    pub fn is_error(self) -> bool {
        matches!(self, Self::Failed | Self::Degraded | Self::NotAvailable)
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Progressing => "Progressing",
            Self::Ready => "Ready",
            Self::Degraded => "Degraded",
            Self::Failed => "Failed",
            Self::NotAvailable => "NotAvailable",
        }
    }

    /// The worst (lowest priority) of `phases`; `None` when empty.
    pub fn worst(phases: impl IntoIterator<Item = Self>) -> Option<Self> {
        phases.into_iter().min_by_key(|p| p.priority())
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Phase {
    type Err = UnknownPhase;

    /// Case-insensitive; an empty string (status not written yet) is `Pending`.
    fn from_str(s: &str) -> Result<Self, UnknownPhase> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(Self::Pending);
        }
        Self::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownPhase(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling_parse_and_priority() {
        for p in Phase::ALL {
            assert_eq!(p.as_str().parse::<Phase>(), Ok(p));
            assert_eq!(p.to_string().to_lowercase().parse::<Phase>(), Ok(p));
            assert_eq!(
                serde_json::to_value(p).ok(),
                Some(serde_json::Value::String(p.as_str().to_owned()))
            );
        }
        assert_eq!("".parse::<Phase>(), Ok(Phase::Pending));
        assert!("Running".parse::<Phase>().is_err());
        assert_eq!(
            Phase::worst([Phase::Ready, Phase::Degraded, Phase::Pending]),
            Some(Phase::Degraded)
        );
        assert_eq!(
            Phase::ALL.iter().filter(|p| p.is_error()).count(),
            3,
            "Failed, Degraded, NotAvailable"
        );
    }
}
