//! Typed errors and their stable categories.
//!
//! Contract:
//! - Every fallible operation of this crate returns [`OciError`].
//! - [`OciError::category`] maps each error to exactly one [`OciErrorCategory`], the only thing
//!   a controller needs to decide between "fix the spec", "fix the credentials", "wait for the
//!   upstream object" and "retry later". The mapping is stable and documented per variant.
//! - Registry failures are classified from what the registry said (HTTP status and OCI error
//!   codes), then from the transport (timeouts, connection failures), never from guesses: 401
//!   and 403 are Auth, 404 NotFound; another 4xx answer is decided by its first OCI error code,
//!   by exact name (an empty error list or an unknown code, `UNKNOWN` or a vendor's, is
//!   Infrastructure, not a guess); everything else is Infrastructure.
//! - No variant ever carries credentials: messages hold registry URLs, OCI error codes and an
//!   excerpt of the registry's own error text: at most 300 characters, control characters
//!   replaced, so a registry cannot flood a tenant-visible status or forge lines in it.

use std::fmt;
use std::time::Duration;

use kinfer_api::error::error_chain;

use crate::reference::ReferenceError;

/// What kind of failure an [`OciError`] is, for condition and retry decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OciErrorCategory {
    /// The registry refused the credentials (HTTP 401/403, `UNAUTHORIZED`, `DENIED`).
    Auth,
    /// The image, tag or repository does not exist (HTTP 404, `MANIFEST_UNKNOWN`,
    /// `NAME_UNKNOWN`): a missing upstream dependency that may appear later.
    NotFound,
    /// Transient trouble: timeouts, connection failures, HTTP 5xx and 429, protocol violations.
    Infrastructure,
    /// The user's input is wrong: bad image reference, malformed pull secret, malformed labels,
    /// an artifact that is not a container image.
    InvalidSpec,
}

impl OciErrorCategory {
    /// A stable, machine-friendly name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "Auth",
            Self::NotFound => "NotFound",
            Self::Infrastructure => "Infrastructure",
            Self::InvalidSpec => "InvalidSpec",
        }
    }
}

impl fmt::Display for OciErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors of image inspection, authentication and tag listing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// The image reference does not parse. Category: InvalidSpec.
    #[error("invalid image reference {reference:?}: {source}")]
    InvalidReference {
        /// The reference as given.
        reference: String,
        /// Why it does not parse.
        #[source]
        source: ReferenceError,
    },
    /// A pull secret is malformed (wrong JSON, bad base64 `auth`). Category: InvalidSpec.
    #[error("invalid pull secret {secret:?}: {reason}")]
    InvalidPullSecret {
        /// The Secret's name.
        secret: String,
        /// What is wrong (never the secret's content).
        reason: String,
    },
    /// An AIM or OCI label has a value that does not parse. Category: InvalidSpec.
    #[error("invalid image label {label:?}: {reason}")]
    InvalidLabel {
        /// The full label key, e.g. `com.amd.aim.model.recommendedDeployments`.
        label: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// The image's labels are larger in total than the inspector keeps. Category: InvalidSpec.
    #[error(
        "image labels too large: {reference} has {bytes} bytes of labels (the limit is {limit})"
    )]
    LabelsTooLarge {
        /// The image.
        reference: String,
        /// Total bytes of label keys and values.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The reference points at something that is not a readable container image (unsupported
    /// manifest, empty image index, config blob that is not an image config). Category:
    /// InvalidSpec.
    #[error("{reference} is not a supported container image: {reason}")]
    UnsupportedImage {
        /// The image.
        reference: String,
        /// Why it cannot be read.
        reason: String,
    },
    /// The registry rejected the request's credentials. Category: Auth.
    #[error("registry denied access to {reference}{}: {message}", status_suffix(*.status))]
    Unauthorized {
        /// The image or repository.
        reference: String,
        /// The HTTP status, when known.
        status: Option<u16>,
        /// The registry's explanation.
        message: String,
    },
    /// The manifest, tag or repository does not exist. Category: NotFound.
    #[error("{reference} not found in the registry: {message}")]
    NotFound {
        /// The image or repository.
        reference: String,
        /// The registry's explanation.
        message: String,
    },
    /// The operation did not finish within the configured time. Category: Infrastructure.
    #[error("registry request for {reference} timed out after {after:?}")]
    Timeout {
        /// The image or repository.
        reference: String,
        /// The configured limit.
        after: Duration,
    },
    /// The inspector is configured offline ([`crate::InspectorConfig::offline`], as in
    /// `kinfer render`) and was asked to contact a registry. Category: InvalidSpec: no retry
    /// can succeed in this process; the input must carry what the registry would have said
    /// (e.g. an AIMModel's `spec.imageMetadata`).
    #[error(
        "the image inspector is offline (render does not contact registries): cannot read {reference}"
    )]
    Offline {
        /// The image or repository that would have been read.
        reference: String,
    },
    /// Any other registry or transport failure. Category: Infrastructure.
    #[error("registry error for {reference}{}: {message}", status_suffix(*.status))]
    Registry {
        /// The image or repository.
        reference: String,
        /// The HTTP status, when there was a response.
        status: Option<u16>,
        /// What went wrong.
        message: String,
    },
}

fn status_suffix(status: Option<u16>) -> String {
    status.map_or_else(String::new, |s| format!(" (HTTP {s})"))
}

impl OciError {
    /// The stable category of this error.
    pub fn category(&self) -> OciErrorCategory {
        match self {
            Self::InvalidReference { .. }
            | Self::InvalidPullSecret { .. }
            | Self::InvalidLabel { .. }
            | Self::LabelsTooLarge { .. }
            | Self::UnsupportedImage { .. }
            | Self::Offline { .. } => OciErrorCategory::InvalidSpec,
            Self::Unauthorized { .. } => OciErrorCategory::Auth,
            Self::NotFound { .. } => OciErrorCategory::NotFound,
            Self::Timeout { .. } | Self::Registry { .. } => OciErrorCategory::Infrastructure,
        }
    }

    /// Classifies an HTTP error response (status and body) from a registry.
    pub(crate) fn from_status(reference: &str, status: u16, body: &str) -> Self {
        let reference = reference.to_owned();
        let (message, first_code) = registry_message(body);
        let by_code = match status {
            401 | 403 => Some(OciErrorCategory::Auth),
            404 => Some(OciErrorCategory::NotFound),
            400..=499 => first_code.as_deref().map(code_category),
            _ => None,
        };
        match by_code {
            Some(OciErrorCategory::Auth) => Self::Unauthorized {
                reference,
                status: Some(status),
                message,
            },
            Some(OciErrorCategory::NotFound) => Self::NotFound { reference, message },
            Some(OciErrorCategory::InvalidSpec) => Self::UnsupportedImage {
                reference,
                reason: message,
            },
            Some(OciErrorCategory::Infrastructure) | None => Self::Registry {
                reference,
                status: Some(status),
                message,
            },
        }
    }

    /// Classifies a transport error of `reqwest`.
    pub(crate) fn from_reqwest(reference: &str, err: &reqwest::Error) -> Self {
        if let Some(status) = err.status() {
            return Self::from_status(reference, status.as_u16(), "");
        }
        let kind = if err.is_timeout() {
            "timeout"
        } else if err.is_connect() {
            "connection failed"
        } else {
            "transport error"
        };
        Self::Registry {
            reference: reference.to_owned(),
            status: None,
            message: format!("{kind}: {}", error_chain(err)),
        }
    }
}

/// The category an OCI error code names (distribution's spelling, matched exactly).
fn code_category(code: &str) -> OciErrorCategory {
    match code.to_ascii_uppercase().as_str() {
        "UNAUTHORIZED" | "DENIED" | "FORBIDDEN" => OciErrorCategory::Auth,
        "MANIFEST_UNKNOWN"
        | "NAME_UNKNOWN"
        | "NOT_FOUND"
        | "BLOB_UNKNOWN"
        | "MANIFEST_BLOB_UNKNOWN" => OciErrorCategory::NotFound,
        "NAME_INVALID" | "TAG_INVALID" | "MANIFEST_INVALID" | "UNSUPPORTED" => {
            OciErrorCategory::InvalidSpec
        }
        // Registry-specific codes: only exact, unambiguous names count. Substring guesses
        // misfiled distribution's bare `UNKNOWN` ("unknown error") as NotFound.
        _ => OciErrorCategory::Infrastructure,
    }
}

/// The OCI error messages of a registry error body (or the cut body itself), and its first
/// error code.
fn registry_message(body: &str) -> (String, Option<String>) {
    #[derive(serde::Deserialize)]
    struct Envelope {
        errors: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        code: String,
        #[serde(default)]
        message: String,
    }
    match serde_json::from_str::<Envelope>(body) {
        Ok(env) if !env.errors.is_empty() => {
            let text = env
                .errors
                .iter()
                .map(|e| format!("{}: {}", e.code, e.message))
                .collect::<Vec<_>>()
                .join("; ");
            (truncate(&text), env.errors.first().map(|e| e.code.clone()))
        }
        _ if body.trim().is_empty() => ("no details".to_owned(), None),
        _ => (truncate(body.trim()), None),
    }
}

/// At most 300 characters of `s`, control characters (newlines, escapes) replaced by spaces.
fn truncate(s: &str) -> String {
    const MAX: usize = 300;
    let mut out: String = s
        .chars()
        .take(MAX)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
#[path = "unit_tests/error.rs"]
mod tests;
