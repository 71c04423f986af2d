//! Label propagation from a parent to the children it creates (NOTES.md row 25).
//!
//! Contract:
//! - System labels are always stamped: `app.kubernetes.io/managed-by=<field manager>` and
//!   `<domain>/<controller>.name=<parent>` (the selector orphan deletion lists by).
//! - Every parent label under `<domain>/` is copied unless the child already sets that key.
//! - User labels are copied when the runtime config enables propagation and the key matches one
//!   of its globs (`filepath.Match` syntax: `*`, `?`, `[...]`; `*` does not cross `/`).
//! - Existing child labels are never overwritten: a key the builder set, or a key the live
//!   child carries with another value (someone labelled it by hand), keeps its value.
//! - Pure: no client, no clock.

use std::collections::BTreeMap;

/// The label every child carries naming its manager.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// Who stamps the labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelScheme {
    /// The label domain, e.g. `aim.eai.amd.com`.
    pub domain: String,
    /// The controller's short name, e.g. `service` (gives `<domain>/service.name`).
    pub controller: String,
    /// The field manager and `managed-by` value, e.g. `kinfer-aim-service`.
    pub manager: String,
}

impl LabelScheme {
    /// The key of the parent-name label.
    pub fn parent_key(&self) -> String {
        format!("{}/{}.name", self.domain, self.controller)
    }

    /// The annotation that pauses reconciliation: `<domain>/reconciliation-paused`.
    pub fn paused_annotation(&self) -> String {
        format!("{}/reconciliation-paused", self.domain)
    }

    /// The system labels for children of `parent`.
    pub fn system_labels(&self, parent: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (MANAGED_BY.to_owned(), label_value(&self.manager)),
            (self.parent_key(), label_value(parent)),
        ])
    }

    /// The label selector that finds every child of `parent`.
    pub fn selector(&self, parent: &str) -> String {
        format!(
            "{MANAGED_BY}={},{}={}",
            label_value(&self.manager),
            self.parent_key(),
            label_value(parent)
        )
    }
}

/// Which user labels the runtime config asks to propagate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelPropagation {
    /// Off by default.
    pub enabled: bool,
    /// Globs over label keys, e.g. `team-*`.
    pub patterns: Vec<String>,
}

/// The labels a child ends up with. `desired` are the builder's labels (kept), `observed` the
/// live child's labels if it exists (values set by others are not overwritten).
pub fn propagate(
    scheme: &LabelScheme,
    parent_name: &str,
    parent_labels: &BTreeMap<String, String>,
    rules: &LabelPropagation,
    desired: &BTreeMap<String, String>,
    observed: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let mut out = desired.clone();
    out.extend(scheme.system_labels(parent_name));
    let prefix = format!("{}/", scheme.domain);
    for (k, v) in parent_labels {
        if out.contains_key(k) {
            continue;
        }
        if k.starts_with(&prefix) {
            out.insert(k.clone(), v.clone());
        } else if rules.enabled && rules.patterns.iter().any(|p| glob_match(p, k)) {
            let taken = observed
                .and_then(|o| o.get(k))
                .is_some_and(|live| live != v);
            if !taken {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

/// A label value from an arbitrary name: characters outside `[A-Za-z0-9._-]` become `_`, and a
/// value longer than 63 characters is cut to 54 plus `-` and 8 hex characters of a stable
/// FNV-1a hash of the whole name, so distinct long names stay distinct.
pub fn label_value(s: &str) -> String {
    let mut v: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if v.len() > 63 {
        let hash = s.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        v.truncate(54);
        v = format!("{v}-{:08x}", hash & 0xffff_ffff);
    }
    let trimmed = v.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    trimmed.to_owned()
}

/// Go `filepath.Match` over a label key: `*` matches any run of characters except `/`, `?` one
/// character except `/`, `[abc]`, `[a-z]`, `[^a]`/`[!a]` classes, `\` escapes. A malformed
/// pattern matches nothing.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => {
            let rest = &p[1..];
            for i in 0..=t.len() {
                if glob_at(rest, &t[i..]) {
                    return true;
                }
                if i < t.len() && t[i] == '/' {
                    return false;
                }
            }
            false
        }
        Some('?') => t.first().is_some_and(|c| *c != '/') && glob_at(&p[1..], &t[1..]),
        Some('[') => {
            let Some((matched, used)) = class(&p[1..], t.first().copied()) else {
                return false;
            };
            matched && glob_at(&p[1 + used..], &t[1..])
        }
        Some('\\') => p.get(1).is_some_and(|c| t.first() == Some(c)) && glob_at(&p[2..], &t[1..]),
        Some(c) => t.first() == Some(c) && glob_at(&p[1..], &t[1..]),
    }
}

/// Match a character class starting after `[`; returns (matched, pattern chars consumed
/// including the closing `]`), or `None` when the class is malformed or there is no character.
fn class(p: &[char], c: Option<char>) -> Option<(bool, usize)> {
    let c = c.filter(|c| *c != '/')?;
    let mut i = 0;
    let negated = matches!(p.first(), Some('^' | '!'));
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let lo = *p.get(i)?;
        if lo == ']' && !first {
            return Some((matched != negated, i + 1));
        }
        first = false;
        let lo = if lo == '\\' {
            i += 1;
            *p.get(i)?
        } else {
            lo
        };
        i += 1;
        if p.get(i) == Some(&'-') && p.get(i + 1).is_some_and(|n| *n != ']') {
            let hi = *p.get(i + 1)?;
            i += 2;
            if lo <= c && c <= hi {
                matched = true;
            }
        } else if lo == c {
            matched = true;
        }
    }
}

#[cfg(test)]
#[path = "unit_tests/labels.rs"]
mod tests;
