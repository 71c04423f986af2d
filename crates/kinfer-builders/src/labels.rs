//! The standard labels every object kinfer creates carries, in one place.
//!
//! Contract: `app.kubernetes.io/{name,instance,component,managed-by}` on every object; the
//! selector subset (name, instance, component) is what Deployments, Services, pools and
//! monitors select on. No version label anywhere: a version on a pod template or selector
//! would restart every model pod on each operator upgrade (and selectors are immutable).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::naming::sanitize_label_value;

// The keys are defined once, in kinfer-api (the reconcile engine selects on
// `KINFER_MANAGED_BY` too).
pub use kinfer_api::labels::{
    COMPONENT, INSTANCE, KINFER_MANAGED_BY, MANAGED_BY, NAME, PARENT_ANNOTATION, PARENT_NAME,
    PARENT_NAMESPACE, PART_OF, TRACK,
};

/// The parent labels of an object no owner reference can reach (cluster-scoped RBAC):
/// [`PARENT_NAMESPACE`] and [`PARENT_NAME`] (sanitised like every label value). Select with
/// [`parent_selector`]; map back with [`parent_ref`].
pub fn parent_labels(namespace: &str, name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (PARENT_NAMESPACE.to_owned(), sanitize_label_value(namespace)),
        (PARENT_NAME.to_owned(), sanitize_label_value(name)),
    ])
}

/// The annotation naming the parent exactly: [`PARENT_ANNOTATION`] `= <namespace>/<name>`.
pub fn parent_annotations(namespace: &str, name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(PARENT_ANNOTATION.to_owned(), format!("{namespace}/{name}"))])
}

/// The label selector of [`parent_labels`] (add the operator's `kinfer.dev/managed-by` to
/// narrow it to one operator).
pub fn parent_selector(namespace: &str, name: &str) -> String {
    parent_labels(namespace, name)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The `(namespace, name)` of the parent an object names: from [`PARENT_ANNOTATION`], and only
/// when its parent labels agree (an object whose labels were edited to point elsewhere, or
/// that carries no parent labels, names nobody).
pub fn parent_ref(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<(String, String)> {
    let (namespace, name) = meta
        .annotations
        .as_ref()?
        .get(PARENT_ANNOTATION)?
        .split_once('/')?;
    let labels = meta.labels.as_ref()?;
    parent_labels(namespace, name)
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        .then(|| (namespace.to_owned(), name.to_owned()))
}

/// otterscale model-operator's label sets (`../shared/reference/modelservice/NOTES.md`
/// section b, "Labels used"), reproduced exactly because they are in immutable Deployment
/// selectors. `Standard(n, c, v)` is `Selector(n, c)` plus the operator version, which kinfer
/// never sets (NOTES g2): so kinfer's standard labels are the selector labels.
pub mod otterscale {
    use std::collections::BTreeMap;

    use super::{COMPONENT, MANAGED_BY, NAME, PART_OF};
    use crate::naming::sanitize_label_value;

    /// `app.kubernetes.io/part-of` value.
    pub const PART_OF_VALUE: &str = "otterscale-system";
    /// `app.kubernetes.io/managed-by` value.
    pub const MANAGED_BY_VALUE: &str = "model-operator";

    /// `Selector(name, component)`: name, component, part-of, managed-by. `name` is used raw
    /// when it is a valid label value (as upstream), sanitised otherwise.
    pub fn selector(name: &str, component: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (NAME.to_owned(), sanitize_label_value(name)),
            (COMPONENT.to_owned(), component.to_owned()),
            (PART_OF.to_owned(), PART_OF_VALUE.to_owned()),
            (MANAGED_BY.to_owned(), MANAGED_BY_VALUE.to_owned()),
        ])
    }

    /// Object metadata labels: [`selector`] plus `kinfer.dev/managed-by: <operator>`.
    pub fn object(name: &str, component: &str, operator: &str) -> BTreeMap<String, String> {
        let mut labels = selector(name, component);
        labels.insert(
            super::KINFER_MANAGED_BY.to_owned(),
            sanitize_label_value(operator),
        );
        labels
    }
}

/// The four standard labels of one object. Values are sanitised on construction, so any
/// parent name (up to 253 characters, dots included) gives valid labels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StandardLabels {
    /// `app.kubernetes.io/name`.
    pub name: String,
    /// `app.kubernetes.io/instance`.
    pub instance: String,
    /// `app.kubernetes.io/component`.
    pub component: String,
    /// `app.kubernetes.io/managed-by`.
    pub managed_by: String,
}

impl StandardLabels {
    /// Labels for a `component` of application `name`, instance `instance`, managed by
    /// `managed_by`; every value sanitised.
    pub fn new(name: &str, instance: &str, component: &str, managed_by: &str) -> Self {
        Self {
            name: sanitize_label_value(name),
            instance: sanitize_label_value(instance),
            component: sanitize_label_value(component),
            managed_by: sanitize_label_value(managed_by),
        }
    }

    /// The same labels for another component.
    #[must_use]
    pub fn with_component(&self, component: &str) -> Self {
        Self {
            component: sanitize_label_value(component),
            ..self.clone()
        }
    }

    /// All four labels.
    pub fn all(&self) -> BTreeMap<String, String> {
        let mut labels = self.selector();
        labels.insert(MANAGED_BY.to_owned(), self.managed_by.clone());
        labels
    }

    /// The stable subset selectors use: name, instance, component.
    pub fn selector(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (NAME.to_owned(), self.name.clone()),
            (INSTANCE.to_owned(), self.instance.clone()),
            (COMPONENT.to_owned(), self.component.clone()),
        ])
    }

    /// All four labels plus `extra`; `extra` never overrides a standard label.
    pub fn all_with(&self, extra: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut labels = self.all();
        for (k, v) in extra {
            labels.entry(k.clone()).or_insert_with(|| v.clone());
        }
        labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitises_values_and_keeps_version_out() {
        let labels = StandardLabels::new("modelservice", "llama.v2/x", "decode", "kinfer");
        let all = labels.all();
        assert_eq!(all[INSTANCE], "llama.v2_x");
        assert_eq!(all.len(), 4);
        assert!(!all.keys().any(|k| k.contains("version")));
        assert!(!labels.selector().contains_key(MANAGED_BY));
    }

    #[test]
    fn parent_labels_select_and_map_back_to_the_exact_parent() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
        let long = format!("{}.model", "x".repeat(70));
        let meta = |labels, annotations| ObjectMeta {
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        };
        let ok = meta(parent_labels("ns", &long), parent_annotations("ns", &long));
        assert_eq!(parent_ref(&ok), Some(("ns".to_owned(), long.clone())));
        assert!(crate::naming::is_label_value(
            &ok.labels.as_ref().unwrap()[PARENT_NAME]
        ));
        assert_eq!(
            parent_selector("ns", "m"),
            "kinfer.dev/parent-name=m,kinfer.dev/parent-namespace=ns"
        );
        // Labels pointing elsewhere, or none at all: nobody's.
        let moved = meta(
            parent_labels("other", &long),
            parent_annotations("ns", &long),
        );
        assert_eq!(parent_ref(&moved), None);
        let bare = meta(BTreeMap::new(), parent_annotations("ns", "m"));
        assert_eq!(parent_ref(&bare), None);
    }

    #[test]
    fn extra_labels_cannot_override_standard_ones() {
        let labels = StandardLabels::new("a", "b", "c", "d");
        let extra = BTreeMap::from([
            (NAME.to_owned(), "evil".to_owned()),
            ("x".to_owned(), "y".to_owned()),
        ]);
        let all = labels.all_with(&extra);
        assert_eq!(all[NAME], "a");
        assert_eq!(all["x"], "y");
    }
}
