//! Template status and profile type: the closed enums of a candidate, parsed strictly.
//!
//! Contract: values parse case-insensitively from their CRD spellings and display as them;
//! anything else is an [`Error`]. [`NotReady`] is a status other than Ready, so a rejection
//! for not being Ready cannot carry Ready.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A template's `status.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TemplateStatus {
    /// Not started (also an unset status).
    Pending,
    /// Discovery running.
    Progressing,
    /// Usable.
    Ready,
    /// Partly working.
    Degraded,
    /// Failed.
    Failed,
    /// Its GPU is not in the cluster.
    NotAvailable,
}

impl TemplateStatus {
    const ALL: [TemplateStatus; 6] = [
        TemplateStatus::Pending,
        TemplateStatus::Progressing,
        TemplateStatus::Ready,
        TemplateStatus::Degraded,
        TemplateStatus::Failed,
        TemplateStatus::NotAvailable,
    ];

    /// The CRD spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            TemplateStatus::Pending => "Pending",
            TemplateStatus::Progressing => "Progressing",
            TemplateStatus::Ready => "Ready",
            TemplateStatus::Degraded => "Degraded",
            TemplateStatus::Failed => "Failed",
            TemplateStatus::NotAvailable => "NotAvailable",
        }
    }
}

impl fmt::Display for TemplateStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TemplateStatus {
    type Err = Error;

    /// Case-insensitive; an empty string (status not written yet) is `Pending`.
    fn from_str(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(TemplateStatus::Pending);
        }
        Self::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| Error::UnknownStatus(s.to_owned()))
    }
}

/// A [`TemplateStatus`] other than Ready: the status of a template the Ready filter removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NotReady {
    /// Not started.
    Pending,
    /// Discovery running.
    Progressing,
    /// Partly working.
    Degraded,
    /// Failed.
    Failed,
    /// Its GPU is not in the cluster.
    NotAvailable,
}

impl TemplateStatus {
    /// The status as a [`NotReady`]; `None` for Ready.
    pub fn not_ready(self) -> Option<NotReady> {
        match self {
            TemplateStatus::Ready => None,
            TemplateStatus::Pending => Some(NotReady::Pending),
            TemplateStatus::Progressing => Some(NotReady::Progressing),
            TemplateStatus::Degraded => Some(NotReady::Degraded),
            TemplateStatus::Failed => Some(NotReady::Failed),
            TemplateStatus::NotAvailable => Some(NotReady::NotAvailable),
        }
    }
}

impl From<NotReady> for TemplateStatus {
    fn from(status: NotReady) -> Self {
        match status {
            NotReady::Pending => TemplateStatus::Pending,
            NotReady::Progressing => TemplateStatus::Progressing,
            NotReady::Degraded => TemplateStatus::Degraded,
            NotReady::Failed => TemplateStatus::Failed,
            NotReady::NotAvailable => TemplateStatus::NotAvailable,
        }
    }
}

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&TemplateStatus::from(*self), f)
    }
}

/// A template profile's `metadata.type`. Declaration order is preference order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProfileType {
    /// Tuned profile.
    Optimized,
    /// Tuned, not yet validated.
    Preview,
    /// Generic profile.
    Unoptimized,
}

impl ProfileType {
    const ALL: [ProfileType; 3] = [
        ProfileType::Optimized,
        ProfileType::Preview,
        ProfileType::Unoptimized,
    ];

    /// The CRD spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileType::Optimized => "optimized",
            ProfileType::Preview => "preview",
            ProfileType::Unoptimized => "unoptimized",
        }
    }
}

impl fmt::Display for ProfileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProfileType {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| Error::UnknownProfileType(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing() {
        assert_eq!("ready".parse::<TemplateStatus>(), Ok(TemplateStatus::Ready));
        assert_eq!("".parse::<TemplateStatus>(), Ok(TemplateStatus::Pending));
        assert_eq!("NotAvailable".parse(), Ok(TemplateStatus::NotAvailable));
        assert!("Broken".parse::<TemplateStatus>().is_err());
        assert_eq!("Optimized".parse(), Ok(ProfileType::Optimized));
        assert!("fast".parse::<ProfileType>().is_err());
    }

    #[test]
    fn not_ready_excludes_ready() {
        assert_eq!(TemplateStatus::Ready.not_ready(), None);
        for status in TemplateStatus::ALL {
            if let Some(not_ready) = status.not_ready() {
                assert_eq!(TemplateStatus::from(not_ready), status);
                assert_eq!(not_ready.to_string(), status.to_string());
            }
        }
        let not_ready = TemplateStatus::ALL
            .iter()
            .filter_map(|s| s.not_ready())
            .count();
        assert_eq!(not_ready, TemplateStatus::ALL.len() - 1);
    }
}
