//! Errors: only parsing can fail; selection itself is total.
//!
//! Contract: each variant names the offending input.

/// A value that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Not one of Pending, Progressing, Ready, Degraded, Failed, NotAvailable.
    #[error(
        "unknown template status {0:?} (expected Pending, Progressing, Ready, Degraded, Failed \
         or NotAvailable)"
    )]
    UnknownStatus(String),
    /// Not one of optimized, preview, unoptimized.
    #[error("unknown profile type {0:?} (expected optimized, preview or unoptimized)")]
    UnknownProfileType(String),
}
