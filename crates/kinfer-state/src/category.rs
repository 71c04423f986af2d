//! Error categories and the one place errors are categorised.
//!
//! Contract:
//! - Every error the engine sees ends up in exactly one [`ErrorCategory`]; there is no
//!   "unknown". The category, never a Debug string, becomes the condition reason, the event
//!   reason and the metric label.
//! - Kubernetes API errors are categorised here by status code and reason
//!   ([`categorize_kube_error`]); registry errors from `kinfer-oci` with the `oci` feature; our
//!   own typed errors implement [`Categorize`] (one error enum per module, each variant mapped to
//!   one category).
//! - A 404 is only meaningful with a dependency [`Direction`]: a missing upstream object (one we
//!   need) is user-fixable, a missing downstream object (one we create) is progress.
//! - Pure: no client, no clock.

use std::fmt;
use std::time::Duration;

use kube::core::response::reason;

use crate::condition::Reason;

/// What kind of failure an error is; drives conditions, status and the retry decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCategory {
    /// Transient trouble: conflicts, throttling, 5xx, timeouts, connection failures. Retried
    /// with per-object exponential backoff.
    Infrastructure,
    /// Credentials were refused (401/403, registry `UNAUTHORIZED`/`DENIED`). User-fixable.
    Auth,
    /// Something we need does not exist (a referenced object, an image, a CRD). User-fixable.
    MissingUpstreamDependency,
    /// Something we create does not exist yet or is not ready: progress, not failure.
    MissingDownstreamDependency,
    /// The spec (or an object it references) is invalid (422, other 4xx). User-fixable.
    InvalidSpec,
    /// A quota, memory or storage limit was hit (quota 403s, OOMKilled, disk full).
    ResourceExhaustion,
}

impl ErrorCategory {
    /// Every category, in declaration order (for metrics pre-registration and tests).
    pub const ALL: [Self; 6] = [
        Self::Infrastructure,
        Self::Auth,
        Self::MissingUpstreamDependency,
        Self::MissingDownstreamDependency,
        Self::InvalidSpec,
        Self::ResourceExhaustion,
    ];

    /// The stable name, used as metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Infrastructure => "Infrastructure",
            Self::Auth => "Auth",
            Self::MissingUpstreamDependency => "MissingUpstreamDependency",
            Self::MissingDownstreamDependency => "MissingDownstreamDependency",
            Self::InvalidSpec => "InvalidSpec",
            Self::ResourceExhaustion => "ResourceExhaustion",
        }
    }

    /// The condition reason an error of this category gets when nothing more specific is known.
    pub fn reason(self) -> Reason {
        match self {
            Self::Infrastructure => Reason::InfrastructureError,
            Self::Auth => Reason::AuthError,
            Self::MissingUpstreamDependency => Reason::ReferenceNotFound,
            Self::MissingDownstreamDependency => Reason::ResourceNotReady,
            Self::InvalidSpec => Reason::InvalidSpec,
            Self::ResourceExhaustion => Reason::ResourceExhausted,
        }
    }

    /// Auth, InvalidSpec and MissingUpstreamDependency: retrying changes nothing until a user
    /// edits something; the engine sets status and waits.
    pub fn is_user_fixable(self) -> bool {
        matches!(
            self,
            Self::Auth | Self::InvalidSpec | Self::MissingUpstreamDependency
        )
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which way a dependency points, relative to the object being reconciled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Something the object needs (a referenced model, a Secret, a template).
    Upstream,
    /// Something the object creates (a Deployment, an InferenceService).
    Downstream,
}

/// Implemented by every error enum of kinfer: each variant maps to one category.
pub trait Categorize: std::error::Error {
    /// The category of this error.
    fn category(&self) -> ErrorCategory;

    /// A more specific condition reason than the category's; defaults to
    /// [`ErrorCategory::reason`].
    fn reason(&self) -> Reason {
        self.category().reason()
    }

    /// How long the server asked us to wait before retrying, if it did.
    fn retry_after(&self) -> Option<Duration> {
        None
    }
}

/// An error reduced to what status derivation and the retry decision need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategorizedError {
    /// The category.
    pub category: ErrorCategory,
    /// The condition reason.
    pub reason: Reason,
    /// The human-readable message (the error's `Display`, with its sources).
    pub message: String,
    /// The server's `Retry-After`, if any.
    pub retry_after: Option<Duration>,
}

impl CategorizedError {
    /// Categorise a typed error.
    pub fn from_error<E: Categorize + ?Sized>(err: &E) -> Self {
        Self {
            category: err.category(),
            reason: err.reason(),
            message: error_chain(err),
            retry_after: err.retry_after(),
        }
    }

    /// An error built by hand (inspectors, tests).
    pub fn new(category: ErrorCategory, message: impl Into<String>) -> Self {
        Self {
            category,
            reason: category.reason(),
            message: message.into(),
            retry_after: None,
        }
    }

    /// The same error with a specific reason.
    #[must_use]
    pub fn with_reason(mut self, reason: Reason) -> Self {
        self.reason = reason;
        self
    }
}

impl fmt::Display for CategorizedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.category, self.message)
    }
}

pub use kinfer_api::error::error_chain;

/// Categorise a Kubernetes client error; `direction` decides what a 404 means.
///
/// | error | category |
/// |---|---|
/// | 401 `Unauthorized`, 403 `Forbidden` | Auth |
/// | 403 with "exceeded quota" | ResourceExhaustion |
/// | 404 `NotFound` | MissingUpstream (upstream) / MissingDownstream (downstream) |
/// | 409 `Conflict`, 410 `Gone`/`Expired`, 429, 5xx, `Timeout`, `ServerTimeout` | Infrastructure |
/// | 409 `AlreadyExists`, 422 `Invalid`, 400, other 4xx | InvalidSpec |
/// | transport: connection, TLS, timeouts, stream errors, client configuration | Infrastructure |
/// | discovery cannot find the kind (CRD not installed) | MissingUpstream |
/// | a response that does not deserialise, a request that cannot be built | InvalidSpec |
pub fn categorize_kube_error(err: &kube::Error, direction: Direction) -> ErrorCategory {
    #[allow(unreachable_patterns)] // the wildcard covers feature-gated variants (tls, ws, ...)
    match err {
        kube::Error::Api(status) => {
            categorize_api_status(status.code, &status.reason, &status.message, direction)
        }
        kube::Error::Discovery(_) => ErrorCategory::MissingUpstreamDependency,
        kube::Error::SerdeError(_) | kube::Error::BuildRequest(_) | kube::Error::HttpError(_) => {
            ErrorCategory::InvalidSpec
        }
        _ => ErrorCategory::Infrastructure,
    }
}

/// Categorise an API `Status` by code and reason (see [`categorize_kube_error`]).
pub fn categorize_api_status(
    code: u16,
    status_reason: &str,
    message: &str,
    direction: Direction,
) -> ErrorCategory {
    let not_found = || match direction {
        Direction::Upstream => ErrorCategory::MissingUpstreamDependency,
        Direction::Downstream => ErrorCategory::MissingDownstreamDependency,
    };
    match status_reason {
        reason::FORBIDDEN if is_quota(message) => return ErrorCategory::ResourceExhaustion,
        reason::UNAUTHORIZED | reason::FORBIDDEN => return ErrorCategory::Auth,
        reason::NOT_FOUND => return not_found(),
        reason::ALREADY_EXISTS | reason::INVALID | reason::BAD_REQUEST => {
            return ErrorCategory::InvalidSpec;
        }
        reason::CONFLICT
        | reason::GONE
        | reason::EXPIRED
        | reason::TOO_MANY_REQUESTS
        | reason::TIMEOUT
        | reason::SERVER_TIMEOUT
        | reason::INTERNAL_ERROR
        | reason::SERVICE_UNAVAILABLE
        | reason::STORAGE_READ_ERROR => return ErrorCategory::Infrastructure,
        _ => {}
    }
    match code {
        403 if is_quota(message) => ErrorCategory::ResourceExhaustion,
        401 | 403 => ErrorCategory::Auth,
        404 => not_found(),
        408 | 409 | 410 | 425 | 429 => ErrorCategory::Infrastructure,
        400..=499 => ErrorCategory::InvalidSpec,
        _ => ErrorCategory::Infrastructure,
    }
}

fn is_quota(message: &str) -> bool {
    message.contains("exceeded quota") || message.contains("forbidden: exceeded")
}

/// The `Retry-After` the API server sent with an error (`details.retryAfterSeconds`).
pub fn kube_retry_after(err: &kube::Error) -> Option<Duration> {
    match err {
        kube::Error::Api(status) => status
            .details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(u64::from(s))),
        _ => None,
    }
}

/// Categorise a Kubernetes client error into the engine's normalised form.
pub fn categorized_kube_error(err: &kube::Error, direction: Direction) -> CategorizedError {
    CategorizedError {
        category: categorize_kube_error(err, direction),
        reason: categorize_kube_error(err, direction).reason(),
        message: error_chain(err),
        retry_after: kube_retry_after(err),
    }
}

#[cfg(feature = "oci")]
mod oci {
    use kinfer_oci::{OciError, OciErrorCategory};

    use super::{Categorize, ErrorCategory};
    use crate::condition::Reason;

    impl From<OciErrorCategory> for ErrorCategory {
        /// Registry errors: NotFound is a missing upstream dependency (the image is something
        /// we need); the others keep their meaning.
        fn from(c: OciErrorCategory) -> Self {
            match c {
                OciErrorCategory::Auth => Self::Auth,
                OciErrorCategory::NotFound => Self::MissingUpstreamDependency,
                OciErrorCategory::Infrastructure => Self::Infrastructure,
                OciErrorCategory::InvalidSpec => Self::InvalidSpec,
            }
        }
    }

    impl Categorize for OciError {
        fn category(&self) -> ErrorCategory {
            OciError::category(self).into()
        }

        fn reason(&self) -> Reason {
            match OciError::category(self) {
                OciErrorCategory::Auth => Reason::custom("ImageAuthFailure"),
                OciErrorCategory::NotFound => Reason::custom("ImageNotFound"),
                OciErrorCategory::Infrastructure => Reason::custom("RegistryUnavailable"),
                OciErrorCategory::InvalidSpec => Reason::custom("InvalidImage"),
            }
        }
    }
}

#[cfg(test)]
#[path = "unit_tests/category.rs"]
mod tests;
