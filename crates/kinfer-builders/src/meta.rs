//! Object metadata and the parent a builder works for.
//!
//! Contract: builders set name, namespace, labels and annotations only; owner references are
//! added by the reconcile pipeline at apply time (it decides which objects are owned).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::labels::StandardLabels;
use crate::naming::{Dns1123Label, Dns1123Subdomain};

/// The custom resource a bundle is built for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Parent {
    /// The parent's name.
    pub name: Dns1123Subdomain,
    /// The parent's namespace (children live there).
    pub namespace: Dns1123Label,
    /// The operator, for `app.kubernetes.io/managed-by`.
    pub managed_by: String,
}

impl Parent {
    /// Standard labels for a component of application `app` of this parent.
    pub fn labels(&self, app: &str, component: &str) -> StandardLabels {
        StandardLabels::new(app, self.name.as_str(), component, &self.managed_by)
    }
}

/// Metadata with a name, an optional namespace, labels and annotations (empty maps omitted).
pub fn object_meta(
    name: &str,
    namespace: Option<&str>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: non_empty(labels),
        annotations: non_empty(annotations),
        ..ObjectMeta::default()
    }
}

/// `None` for an empty map, so objects carry no `{}` noise.
pub fn non_empty<K: Ord, V>(map: BTreeMap<K, V>) -> Option<BTreeMap<K, V>> {
    (!map.is_empty()).then_some(map)
}

/// `None` for an empty list.
pub fn non_empty_vec<T>(list: Vec<T>) -> Option<Vec<T>> {
    (!list.is_empty()).then_some(list)
}
