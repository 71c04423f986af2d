//! Validated name newtypes: constructed only through a check, so a holder is always valid.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_label_value};

/// A name that breaks a rule, or a derivation that cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The text is not of the required form.
    #[error("{value:?} is not a valid {kind}")]
    Invalid {
        /// The rule (`DNS-1123 label`, ...).
        kind: &'static str,
        /// The offending text.
        value: String,
    },
    /// A derived name was asked to fit fewer characters than the hash needs.
    #[error("a derived name needs at least {min} characters, {max_len} allowed")]
    TooShort {
        /// The requested maximum.
        max_len: usize,
        /// The minimum.
        min: usize,
    },
    /// KServe's `<isvc>-predictor-<namespace>` hostname label cannot fit 63 characters.
    #[error("namespace {namespace:?} is too long for KServe hostnames (at most {max} characters)")]
    NamespaceTooLong {
        /// The namespace.
        namespace: String,
        /// The longest namespace that works.
        max: usize,
    },
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $check:path, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Checks `value`.
            pub fn new(value: impl Into<String>) -> Result<Self, NameError> {
                let value = value.into();
                if $check(&value) {
                    Ok(Self(value))
                } else {
                    Err(NameError::Invalid { kind: $kind, value })
                }
            }

            /// The text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = NameError;
            fn try_from(value: String) -> Result<Self, NameError> {
                Self::new(value)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = NameError;
            fn try_from(value: &str) -> Result<Self, NameError> {
                Self::new(value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

name_type!(
    /// A DNS-1035 label: the names kinfer generates (valid for every kind, Services included).
    Dns1035Label,
    is_dns1035_label,
    "DNS-1035 label"
);
name_type!(
    /// A DNS-1123 label: namespaces and label-class object names.
    Dns1123Label,
    is_dns1123_label,
    "DNS-1123 label"
);
name_type!(
    /// A DNS-1123 subdomain: the name of a parent object given to a builder.
    Dns1123Subdomain,
    is_dns1123_subdomain,
    "DNS-1123 subdomain"
);
name_type!(
    /// A label value.
    LabelValue,
    is_label_value,
    "label value"
);

impl From<Dns1035Label> for Dns1123Label {
    fn from(value: Dns1035Label) -> Self {
        Self(value.0)
    }
}

impl From<Dns1035Label> for Dns1123Subdomain {
    fn from(value: Dns1035Label) -> Self {
        Self(value.0)
    }
}

impl From<Dns1123Label> for Dns1123Subdomain {
    fn from(value: Dns1123Label) -> Self {
        Self(value.0)
    }
}
