//! Every name rule kinfer applies, in one place.
//!
//! Contract:
//! - checks: [`is_dns1123_label`] (63), [`is_dns1123_subdomain`] (253), [`is_dns1035_label`]
//!   (63, starts with a letter), [`is_label_value`] (63, may be empty);
//! - sanitising: [`sanitize_dns1035`] (lowercase alphanumerics and `-`, starts with a letter,
//!   ends alphanumeric; not truncated) and [`sanitize_label_value`] (at most 63, truncated with
//!   a hash suffix so distinct inputs stay distinct);
//! - derivation: [`child_name`] keeps `<parent>-<suffix>` readable when it is already clean and
//!   fits, and otherwise (like [`derived_name`], always) appends an 8-hex SHA-256 suffix of the
//!   full input and trims the longest part until the whole fits. Both are deterministic and
//!   pure: the same input gives the same name in every version (a changed rule orphans objects).
//!   These names are kinfer's own (Zerfoo and other kinfer-invented children).
//! - [`aim`]: AIM Engine's rules, byte-identical to upstream so kinfer adopts aim-engine's
//!   objects: one function per upstream rule (`GenerateDerivedName` and its Go-JSON hash,
//!   `SanitizeLabelValue`, template, derived/custom template, image model, InferenceService,
//!   route, template caches, artifacts, cluster models, discovery Jobs);
//! - [`modelservice`]: otterscale model-operator's rules for ModelService children;
//! - [`zerfoo`]: Zerfoo's rules (upstream's `<name>-primary` and siblings);
//! - cluster-scoped names for namespaced kinfer children ([`cluster_scoped_name`]);
//! - one hashing scheme for kinfer's own hashes ([`sha256_hex`], [`hash_hex`]);
//! - validated newtypes ([`Dns1035Label`], [`Dns1123Label`], [`Dns1123Subdomain`],
//!   [`LabelValue`]) so a builder cannot emit an invalid name.

pub mod aim;
mod derive;
pub mod modelservice;
mod types;
pub mod zerfoo;

pub use derive::{HASH_LEN, child_name, cluster_scoped_name, derived_name, hash_hex, sha256_hex};
pub use kinfer_api::names::{
    DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, LABEL_VALUE_MAX, is_dns1035_label, is_dns1123_label,
    is_dns1123_subdomain, is_label_value,
};
pub use types::{Dns1035Label, Dns1123Label, Dns1123Subdomain, LabelValue, NameError};

/// What [`sanitize_dns1035`] puts before a name that would start with a digit.
pub const DIGIT_PREFIX: &str = "m-";

/// A DNS-1035 rendering of any text: lowercased, every run of other characters replaced by one
/// `-`, trimmed of `-`, prefixed with [`DIGIT_PREFIX`] when it would start with a digit, `x`
/// when nothing is left. Not truncated: [`child_name`] and [`derived_name`] handle length.
///
/// ```
/// use kinfer_builders::naming::sanitize_dns1035;
/// assert_eq!(sanitize_dns1035("MyModel_1.0"), "mymodel-1-0");
/// assert_eq!(sanitize_dns1035("0.6b"), "m-0-6b");
/// ```
pub fn sanitize_dns1035(s: &str) -> String {
    let body = collapse(s);
    if body.is_empty() {
        return "x".to_owned();
    }
    if body.as_bytes()[0].is_ascii_digit() {
        return format!("{DIGIT_PREFIX}{body}");
    }
    body
}

/// Lowercase, `[a-z0-9]` kept, runs of anything else turned into one `-`, no `-` at the ends.
pub(crate) fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut dash = false;
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c);
        } else {
            dash = true;
        }
    }
    out
}

/// A valid label value for any text: runs of characters outside `[A-Za-z0-9._-]` become `_`,
/// the ends are trimmed to alphanumerics, and a value longer than 63 is cut and given an
/// 8-hex hash suffix of the whole input (so two long inputs never share a value).
///
/// ```
/// use kinfer_builders::naming::sanitize_label_value;
/// assert_eq!(sanitize_label_value("meta-llama/Llama-3.1-8B"), "meta-llama_Llama-3.1-8B");
/// assert_eq!(sanitize_label_value(&"a".repeat(100)).len(), 63);
/// ```
pub fn sanitize_label_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut bad = false;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            if bad {
                out.push('_');
            }
            bad = false;
            out.push(c);
        } else {
            bad = true;
        }
    }
    let trimmed = out.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.len() <= LABEL_VALUE_MAX {
        return trimmed.to_owned();
    }
    let hash = hash_hex(&[s]);
    let keep = LABEL_VALUE_MAX - HASH_LEN - 1;
    let head = trimmed[..keep].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    format!("{head}-{hash}")
}

#[cfg(test)]
mod tests;
