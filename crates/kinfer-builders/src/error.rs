//! Errors and warnings of the builders.
//!
//! Contract: an [`Error`] means the resolved input cannot produce valid objects (a user-fixable
//! spec problem: the pipeline maps every variant to the InvalidSpec category); a [`Warning`]
//! means the objects were built but the caller should tell the user something (an Event or a
//! condition message).

use std::fmt;

use crate::naming::NameError;

/// A resolved input that cannot produce valid objects.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A name could not be derived or is invalid.
    #[error(transparent)]
    Name(#[from] NameError),
    /// A quantity field does not parse.
    #[error("{field}: {value:?} is not a valid quantity")]
    Quantity {
        /// Field path of the input.
        field: &'static str,
        /// The text.
        value: String,
    },
    /// An input field has a value the builder cannot use.
    #[error("{field}: {reason}")]
    Input {
        /// Field path of the input.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// A generated document could not be rendered (a serialiser bug).
    #[error("rendering {what}: {message}")]
    Render {
        /// What was rendered.
        what: &'static str,
        /// The serialiser's message.
        message: String,
    },
}

/// Something the caller should surface, although the objects were built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// The user set the accelerator count; it wins over the count computed from parallelism.
    AcceleratorCountOverridden {
        /// The extended resource (`nvidia.com/gpu`).
        resource: String,
        /// Count computed from parallelism.
        computed: i64,
        /// The user's value.
        requested: String,
    },
    /// An extended resource's request and limit differed after merging layers; both were set
    /// to `value`.
    ExtendedResourceAligned {
        /// The extended resource.
        resource: String,
        /// The merged request before alignment.
        requests: Option<String>,
        /// The merged limit before alignment.
        limits: Option<String>,
        /// The value now in both.
        value: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::AcceleratorCountOverridden {
                resource,
                computed,
                requested,
            } => write!(
                f,
                "{resource}: the user-set count {requested} overrides the {computed} computed from parallelism"
            ),
            Warning::ExtendedResourceAligned {
                resource,
                requests,
                limits,
                value,
            } => write!(
                f,
                "{resource}: request {} and limit {} differ after merging; both set to {value}",
                requests.as_deref().unwrap_or("unset"),
                limits.as_deref().unwrap_or("unset"),
            ),
        }
    }
}
