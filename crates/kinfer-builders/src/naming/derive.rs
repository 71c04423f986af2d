//! Deterministic derived names: sanitised parts, an 8-hex SHA-256 suffix, the longest part
//! trimmed until the whole fits.

use sha2::{Digest, Sha256};

use super::types::{Dns1035Label, Dns1123Subdomain, NameError};
use super::{DIGIT_PREFIX, DNS1123_LABEL_MAX, collapse};

/// Hex characters of the hash suffix.
pub const HASH_LEN: usize = 8;

/// The shortest `max_len` a derived name can honour: `x-` plus the hash.
const MIN_DERIVED_LEN: usize = HASH_LEN + 2;

/// The SHA-256 hex of `inputs`, each length-prefixed (`<len>:<bytes>`) so that `["ab", "c"]`
/// and `["a", "bc"]` differ: kinfer's one hashing scheme (derived-name suffixes, config
/// hashes). AIM names use upstream's scheme instead ([`super::aim::aim_hash`]).
pub fn sha256_hex(inputs: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for input in inputs {
        hasher.update(input.len().to_string().as_bytes());
        hasher.update(b":");
        hasher.update(input.as_bytes());
    }
    hex::encode(hasher.finalize())
}

/// The first [`HASH_LEN`] hex characters of [`sha256_hex`].
pub fn hash_hex(inputs: &[&str]) -> String {
    let mut out = sha256_hex(inputs);
    out.truncate(HASH_LEN);
    out
}

/// A name that always carries the hash: `<part>-<part>-...-<hash>`, at most `max_len`.
///
/// Each part is lowercased with runs of other characters turned into `-` (empty parts are
/// dropped); the hash is of `hash_inputs`; the longest part loses its last character until the
/// whole fits (ties: the first). A name that would start with a digit gets the `m-` prefix.
///
/// ```
/// use kinfer_builders::naming::derived_name;
/// let name = derived_name(&["base-tpl", "ovr", "fp8"], &["base-tpl", "fp8"], 63).unwrap();
/// assert!(name.as_str().starts_with("base-tpl-ovr-fp8-"));
/// assert_eq!(name.as_str().len(), "base-tpl-ovr-fp8-".len() + 8);
/// ```
pub fn derived_name(
    parts: &[&str],
    hash_inputs: &[&str],
    max_len: usize,
) -> Result<Dns1035Label, NameError> {
    let max_len = max_len.min(DNS1123_LABEL_MAX);
    if max_len < MIN_DERIVED_LEN {
        return Err(NameError::TooShort {
            max_len,
            min: MIN_DERIVED_LEN,
        });
    }
    let hash = hash_hex(hash_inputs);
    let mut parts: Vec<String> = parts
        .iter()
        .map(|p| collapse(p))
        .filter(|p| !p.is_empty())
        .collect();
    let prefix = match parts.first() {
        Some(first) if first.as_bytes()[0].is_ascii_digit() => DIGIT_PREFIX,
        Some(_) => "",
        None => "x-",
    };
    let budget = (max_len - HASH_LEN - 1).saturating_sub(prefix.len());
    trim_to(&mut parts, budget);
    let name = if parts.is_empty() {
        format!("x-{hash}")
    } else {
        format!("{prefix}{}-{hash}", parts.join("-"))
    };
    Dns1035Label::new(name)
}

/// Trims the longest part (the first of equals) one character at a time, never leaving a
/// trailing `-`, until `parts.join("-")` fits `budget`; parts trimmed to nothing are dropped.
fn trim_to(parts: &mut Vec<String>, budget: usize) {
    loop {
        let total: usize =
            parts.iter().map(String::len).sum::<usize>() + parts.len().saturating_sub(1);
        if total <= budget {
            return;
        }
        let Some(longest) =
            (0..parts.len()).max_by(|&a, &b| parts[a].len().cmp(&parts[b].len()).then(b.cmp(&a)))
        else {
            return;
        };
        let part = &mut parts[longest];
        part.pop();
        while part.ends_with('-') {
            part.pop();
        }
        if part.is_empty() {
            parts.remove(longest);
        }
    }
}

/// A child object's name: `<parts joined by ->` when every part is already clean
/// (`[a-z0-9]` runs joined by single `-`, the first starting with a letter) and the whole fits
/// `max_len`; otherwise [`derived_name`] over the same parts with the hash of `hash_inputs`.
///
/// A readable name is thus kept whenever possible. The two forms can coincide: a parent named
/// `a-decode-<8 hex>` gives the readable `a-decode-<8 hex>-decode`, never a hashed name, but a
/// parent whose own name ends in what another parent's hash would be can produce the same
/// text as that parent's hashed child (a SHA-256 preimage: practically impossible, not
/// impossible). Callers that need certainty check for an existing object owned by another
/// parent.
///
/// ```
/// use kinfer_builders::naming::child_name;
/// assert_eq!(child_name(&["llama", "decode"], &["llama"], 63).unwrap().as_str(), "llama-decode");
/// let long = "l".repeat(100);
/// let name = child_name(&[&long, "decode"], &[&long], 63).unwrap();
/// assert_eq!(name.as_str().len(), 63);
/// assert!(name.as_str().contains("-decode-"));
/// ```
pub fn child_name(
    parts: &[&str],
    hash_inputs: &[&str],
    max_len: usize,
) -> Result<Dns1035Label, NameError> {
    let max_len = max_len.min(DNS1123_LABEL_MAX);
    let clean = !parts.is_empty()
        && parts.iter().all(|p| !p.is_empty() && collapse(p) == *p)
        && parts[0].as_bytes()[0].is_ascii_lowercase();
    if clean {
        let joined = parts.join("-");
        if joined.len() <= max_len {
            return Dns1035Label::new(joined);
        }
    }
    derived_name(parts, hash_inputs, max_len)
}

/// The name of a cluster-scoped object (ClusterRole, ClusterRoleBinding) that serves one
/// namespaced child: `<namespace>.<child>`. Neither part contains a dot, so distinct pairs give
/// distinct names, and the whole (at most 127 characters) is a valid DNS-1123 subdomain.
pub fn cluster_scoped_name(
    namespace: &str,
    child: &Dns1035Label,
) -> Result<Dns1123Subdomain, NameError> {
    Dns1123Subdomain::new(format!("{namespace}.{child}"))
}
