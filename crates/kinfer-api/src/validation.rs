//! Spec validation beyond what an OpenAPI schema can say.
//!
//! A [`Validate`] implementation returns *every* violation, each with the JSON field path of the
//! offending value (`spec.canary.weight`), so a status condition can name all of them at once and
//! a user fixes a manifest in one edit rather than one error per apply.
//!
//! [`Validate::warnings`] reports, in the same form, what is accepted but probably not what the
//! user meant: the object is valid and is reconciled, and the operator passes the warnings on.

use std::fmt;

/// One violation of a spec rule, or one warning ([`Validate::warnings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Dotted path from the object root, with `[i]` for list items: `spec.env[2].name`.
    pub path: String,
    /// What is wrong, phrased as the rule: `must be between 0 and 100`.
    pub message: String,
}

impl FieldError {
    /// A violation of the rule `message` by the value at `path` (see the field docs for the form
    /// of each).
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// All violations found in one object, in the order the rules were checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
#[error("{}", join(.0))]
pub struct FieldErrors(pub Vec<FieldError>);

fn join(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl FieldErrors {
    /// `true` when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Records a violation at `path`.
    pub fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError::new(path, message));
    }

    /// `Ok(())` when nothing was recorded.
    pub fn into_result(self) -> Result<(), FieldErrors> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }

    /// The recorded violations, in the order they were pushed.
    pub fn iter(&self) -> impl Iterator<Item = &FieldError> {
        self.0.iter()
    }
}

/// Spec rules that the CRD schema cannot express (cross-field, parsing, ranges on derived values).
pub trait Validate {
    /// Checks every rule and returns all violations; `Ok(())` when the object is valid.
    fn validate(&self) -> Result<(), FieldErrors>;

    /// Things that are accepted but probably not what the user meant, each with the field path
    /// of the value concerned and a message saying what happens instead: for example a
    /// duplicate environment variable name, where Kubernetes silently keeps the last value.
    ///
    /// Warnings never make an object invalid and are independent of [`validate`](Self::validate)
    /// (an invalid object can have warnings too). The operator reports them in a status
    /// condition message or an event, and reconciles the object as usual. Empty by default.
    fn warnings(&self) -> Vec<FieldError> {
        Vec::new()
    }
}
