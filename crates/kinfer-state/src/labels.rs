//! Label propagation from a parent to the children it creates (NOTES.md row 25).
//!
//! Contract:
//! - The engine's own labels select children: `kinfer.dev/managed-by=<field manager>` and
//!   `<domain>/<controller>.name=<parent>` (the selector children and orphans are listed by).
//!   Owned children get both; shared objects (applied without an owner reference, possibly by
//!   several parents) get only the `kinfer.dev/managed-by` marker, so two parents never
//!   disagree about a value.
//! - `app.kubernetes.io/*` is left to the builders (some keep an upstream operator's values
//!   for adoption, e.g. otterscale's `managed-by: model-operator`); the engine never writes it.
//! - Every parent label under `<domain>/` is copied to owned children unless the child already
//!   sets that key.
//! - User labels are copied to owned children when the runtime config enables propagation and
//!   the key matches one of its globs (`filepath.Match` syntax: `*`, `?`, `[...]`; `*` does not
//!   cross `/`; [`glob_match`]).
//! - Existing child labels are never overwritten: a key the builder set (including the
//!   engine's own keys: a builder must not set those), or a key the live child carries with
//!   another value (someone labelled it by hand), keeps its value.
//! - Pure: no client, no clock.

use std::collections::BTreeMap;

pub use kinfer_api::labels::glob_match;

/// The key of the engine's marker every applied object carries, naming its field manager:
/// `kinfer.dev/managed-by` ([`kinfer_api::labels::KINFER_MANAGED_BY`]). Watches of a
/// controller's children select on it. (`app.kubernetes.io/managed-by` is the builders'.)
pub const MANAGED_BY: &str = kinfer_api::labels::KINFER_MANAGED_BY;

/// Who stamps the labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelScheme {
    /// The label domain, e.g. `aim.eai.amd.com`.
    pub domain: String,
    /// The controller's short name, e.g. `service` (gives `<domain>/service.name`).
    pub controller: String,
    /// The field manager and `kinfer.dev/managed-by` value, e.g. `kinfer-aim-service`.
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

    /// The system labels for owned children of `parent`.
    pub fn system_labels(&self, parent: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (MANAGED_BY.to_owned(), label_value(&self.manager)),
            (self.parent_key(), label_value(parent)),
        ])
    }

    /// The labels of shared objects (applied without an owner reference): the marker only.
    pub fn shared_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(MANAGED_BY.to_owned(), label_value(&self.manager))])
    }

    /// The label selector that finds every owned child of `parent`.
    pub fn selector(&self, parent: &str) -> String {
        format!(
            "{MANAGED_BY}={},{}={}",
            label_value(&self.manager),
            self.parent_key(),
            label_value(parent)
        )
    }

    /// True when `labels` carry this scheme's marker (the object was applied by us).
    pub fn is_marked(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        labels
            .and_then(|l| l.get(MANAGED_BY))
            .is_some_and(|v| *v == label_value(&self.manager))
    }

    /// True when `labels` carry both system labels for `parent`.
    pub fn is_child_of(&self, labels: Option<&BTreeMap<String, String>>, parent: &str) -> bool {
        self.is_marked(labels)
            && labels
                .and_then(|l| l.get(&self.parent_key()))
                .is_some_and(|v| *v == label_value(parent))
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
    for (k, v) in scheme.system_labels(parent_name) {
        out.entry(k).or_insert(v);
    }
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

/// The labels a shared object (applied without an owner reference) ends up with: the
/// builder's plus the engine's marker; nothing parent-specific, so several parents applying
/// the same object agree.
pub fn propagate_shared(
    scheme: &LabelScheme,
    desired: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut out = desired.clone();
    for (k, v) in scheme.shared_labels() {
        out.entry(k).or_insert(v);
    }
    out
}

/// A label value from an arbitrary name: the one label-value rule of
/// `kinfer_builders::naming` (invalid characters become `_`, a value over 63 characters is cut
/// and given a SHA-256 suffix of the whole name, so distinct long names stay distinct).
pub use kinfer_builders::naming::sanitize_label_value as label_value;

#[cfg(test)]
#[path = "unit_tests/labels.rs"]
mod tests;
