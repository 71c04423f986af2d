//! Errors. [`ApiError`] is an HTTP answer shaped like the real API server's `metav1.Status`
//! (code, reason, message, details); [`Error`] is what the library's own entry points return.

use serde_json::{Value, json};

/// Errors of the library entry points (starting, configuring and stopping a cluster).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding or serving the listener, or writing a kubeconfig, failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The kubeconfig could not be turned into a client.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// A client call against the cluster failed (for example installing CRDs).
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
    /// A manifest could not be parsed.
    #[error("manifest {path}: {message}")]
    Manifest {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The real control plane could not be built, started or reached.
    #[error("control plane: {0}")]
    ControlPlane(String),
    /// The API server refused an internal request.
    #[error("api: {0}")]
    Api(#[from] ApiError),
}

/// One HTTP error answer, rendered as a `metav1.Status` body.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...).
    pub reason: String,
    /// Human readable message.
    pub message: String,
    /// `Status.details`, when the real server sends one.
    pub details: Option<Value>,
    /// `Retry-After` seconds (429 and some 5xx).
    pub retry_after: Option<u64>,
}

/// One `details.causes[]` entry of a 422 answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, `FieldValueTypeInvalid`...
    pub reason: &'static str,
    /// Human readable message.
    pub message: String,
    /// Field path such as `spec.replicas`.
    pub field: String,
}

impl ApiError {
    /// A new error with code, reason and message.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.to_owned(),
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    fn with_details(mut self, group: &str, kind_or_plural: &str, name: &str) -> Self {
        let mut d = json!({ "kind": kind_or_plural });
        if !name.is_empty() {
            d["name"] = json!(name);
        }
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        self.details = Some(d);
        self
    }

    /// 404 `NotFound` for `<plural>.<group> "<name>"`.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
        )
        .with_details(group, plural, name)
    }

    /// 409 `AlreadyExists`.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        )
        .with_details(group, plural, name)
    }

    /// 409 `Conflict` for a stale resourceVersion or a failed precondition.
    pub fn conflict(group: &str, plural: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, plural)
            ),
        )
        .with_details(group, plural, name)
    }

    /// 422 `Invalid` with field causes.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[Cause]) -> Self {
        let list: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let joined = if list.len() == 1 {
            list.join("")
        } else {
            format!("[{}]", list.join(", "))
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {joined}", qualified(group, kind)),
        )
        .with_details(group, kind, name);
        if let Some(d) = e.details.as_mut() {
            d["causes"] = causes
                .iter()
                .map(|c| json!({ "reason": c.reason, "message": c.message, "field": c.field }))
                .collect();
        }
        e
    }

    /// 403 `Forbidden` for a create in a terminating namespace, with the `NamespaceTerminating`
    /// cause the namespace lifecycle admission adds.
    pub fn namespace_terminating(group: &str, plural: &str, name: &str, ns: &str) -> Self {
        let why = format!(
            "unable to create new content in namespace {ns} because it is being terminated"
        );
        let mut e = Self::new(
            403,
            "Forbidden",
            format!(
                "{} \"{name}\" is forbidden: {why}",
                qualified(group, plural)
            ),
        )
        .with_details(group, plural, name);
        if let Some(d) = e.details.as_mut() {
            d["causes"] = json!([{
                "reason": "NamespaceTerminating",
                "message": why,
                "field": "metadata.namespace",
            }]);
        }
        e
    }

    /// 410 `Expired` (Gone), as sent for a watch or continue token older than the history window.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 400 `BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 405 `MethodNotAllowed`.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// The error for an injected status code.
    pub fn injected(code: u16, retry_after: Option<u64>) -> Self {
        let reason = match code {
            409 => "Conflict",
            410 => "Expired",
            429 => "TooManyRequests",
            500 => "InternalError",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            404 => "NotFound",
            403 => "Forbidden",
            _ => "Unknown",
        };
        let mut e = Self::new(code, reason, format!("injected fault: {code}"));
        e.retry_after = retry_after;
        if let Some(s) = retry_after {
            e.details = Some(json!({ "retryAfterSeconds": s }));
        }
        e
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_owned()
    } else {
        format!("{plural}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_keeps_the_causes_verbatim() {
        let c = |m: &str| Cause {
            reason: "FieldValueInvalid",
            message: m.to_owned(),
            field: "metadata.name".to_owned(),
        };
        let e = ApiError::invalid("", "ConfigMap", "a.", &[c("Invalid value: \"a.\": bad")]);
        assert_eq!(
            e.message,
            "ConfigMap \"a.\" is invalid: metadata.name: Invalid value: \"a.\": bad"
        );
        let e = ApiError::invalid("g.io", "W", "x", &[c("one"), c("two")]);
        assert_eq!(
            e.message,
            "W.g.io \"x\" is invalid: [metadata.name: one, metadata.name: two]"
        );
    }
}
