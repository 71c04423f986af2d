//! Node affinity that pins a workload to the nodes of given GPU models.
//!
//! Contract: [`ClusterGpus::node_affinity`] admits a node of the cluster it was built from
//! exactly when [`identify_node`] reports one of the models for it, whichever way the model
//! was identified. It is built from the [`Evidence`] the cluster recorded, so a label value
//! that identification accepts but Kubernetes would not match literally (`0x74A1`, upper
//! case) is listed as written: node selectors compare strings exactly. The terms, ORed:
//!
//! - Device IDs: `In(<key>, <values>)` for `amd.com/gpu.device-id` and its `beta.` spelling,
//!   with every table ID of the models (lower-case, as the AMD labellers write them, so nodes
//!   that join later are admitted too) plus every raw value seen; and per suffix key
//!   `<key>.<id>` (table IDs and raw suffixes seen) `Exists` + `NotIn("", "0")`.
//! - NVIDIA product: `In(nvidia.com/gpu.product, <raw values seen>)`.
//! - AMD family, for models some node was identified as by family alone:
//!   `In(amd.com/gpu.family, <raw values seen>)` (or `beta.`, or the suffix key's `Exists` +
//!   `NotIn("", "0")`), ANDed with `NotIn` requirements that reject every device-ID label seen
//!   in the cluster, because identification ignores the family on a node with a device ID.
//!   A node that later joins with a family label and a device-ID spelling not seen before
//!   could pass until the cluster is rebuilt; the operator rebuilds on every Node change.
//!
//! The result is sorted and deduplicated: it feeds a pod template, whose hash must not change
//! between reconciles. Label values are assumed to be valid Kubernetes label values (no
//! whitespace).
//!
//! [`identify_node`]: super::identify_node
//! [`ClusterGpus::node_affinity`]: super::ClusterGpus::node_affinity

use std::collections::{BTreeMap, BTreeSet};

use super::cluster::ClusterGpus;
use super::labels::{AMD_DEVICE_ID_KEYS, Basis, Evidence};
use super::model::GpuModel;

/// A node selector operator (the subset used here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operator {
    /// The label's value is one of `values`.
    In,
    /// The label is absent or its value is none of `values`.
    NotIn,
    /// The label is present.
    Exists,
}

impl Operator {
    /// The Kubernetes spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
        }
    }
}

/// One node selector requirement.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Requirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub operator: Operator,
    /// Values (empty for `Exists`).
    pub values: Vec<String>,
}

impl Requirement {
    fn is_in(key: String, values: BTreeSet<String>) -> Self {
        Requirement {
            key,
            operator: Operator::In,
            values: values.into_iter().collect(),
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
        }
    }
}

/// Requirements that must all hold.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SelectorTerm {
    /// ANDed requirements, sorted.
    pub requirements: Vec<Requirement>,
}

impl SelectorTerm {
    fn new(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort();
        requirements.dedup();
        SelectorTerm { requirements }
    }
}

/// Required node affinity (`requiredDuringSchedulingIgnoredDuringExecution`): terms of which
/// one must hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeAffinity {
    /// ORed terms.
    pub terms: Vec<SelectorTerm>,
}

impl NodeAffinity {
    /// Whether a node with these labels satisfies the affinity.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.terms
            .iter()
            .any(|t| t.requirements.iter().all(|r| r.matches(labels)))
    }
}

/// Every PCI device ID (lower-case, sorted) that identifies `model`: the table's IDs, or the ID
/// inside an `AMD-<ID>` name. Empty for models without device IDs.
pub fn device_ids(model: &GpuModel) -> Vec<String> {
    match model.spec() {
        Some(spec) => spec.device_ids.iter().map(|id| (*id).to_owned()).collect(),
        None => model.unknown_device_id().into_iter().collect(),
    }
}

/// The affinity for `models` on `cluster`; see the module contract.
pub(crate) fn build<'a>(
    cluster: &ClusterGpus,
    models: impl IntoIterator<Item = &'a GpuModel>,
) -> Option<NodeAffinity> {
    let mut values: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut suffix_keys: BTreeSet<String> = BTreeSet::new();
    let mut family_values: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut family_suffix_keys: BTreeSet<String> = BTreeSet::new();
    for model in models {
        for id in device_ids(model) {
            for key in AMD_DEVICE_ID_KEYS {
                values.entry(key.to_owned()).or_default().insert(id.clone());
                suffix_keys.insert(format!("{key}.{id}"));
            }
        }
        for evidence in cluster.get(model).into_iter().flat_map(|g| &g.evidence) {
            let key = evidence.key().to_owned();
            match (evidence, evidence.basis()) {
                (Evidence::Value { value, .. }, Basis::Family) => {
                    family_values.entry(key).or_default().insert(value.clone());
                }
                (Evidence::Value { value, .. }, _) => {
                    values.entry(key).or_default().insert(value.clone());
                }
                (Evidence::KeySuffix { .. }, Basis::Family) => {
                    family_suffix_keys.insert(key);
                }
                (Evidence::KeySuffix { .. }, _) => {
                    suffix_keys.insert(key);
                }
            }
        }
    }

    let mut terms: BTreeSet<SelectorTerm> = BTreeSet::new();
    for (key, vals) in values {
        terms.insert(SelectorTerm::new(vec![Requirement::is_in(key, vals)]));
    }
    for key in suffix_keys {
        terms.insert(SelectorTerm::new(counted(key)));
    }
    if !family_values.is_empty() || !family_suffix_keys.is_empty() {
        let no_device_id = device_id_exclusions(cluster);
        for (key, vals) in family_values {
            let mut requirements = vec![Requirement::is_in(key, vals)];
            requirements.extend(no_device_id.iter().cloned());
            terms.insert(SelectorTerm::new(requirements));
        }
        for key in family_suffix_keys {
            let mut requirements = counted(key);
            requirements.extend(no_device_id.iter().cloned());
            terms.insert(SelectorTerm::new(requirements));
        }
    }
    (!terms.is_empty()).then(|| NodeAffinity {
        terms: terms.into_iter().collect(),
    })
}

/// `key` is present with a count other than `""` and `"0"` (the key-suffix label form).
fn counted(key: String) -> Vec<Requirement> {
    vec![
        Requirement {
            key: key.clone(),
            operator: Operator::Exists,
            values: Vec::new(),
        },
        Requirement {
            key,
            operator: Operator::NotIn,
            values: vec![String::new(), "0".to_owned()],
        },
    ]
}

/// Requirements that hold on exactly the cluster's nodes without a device-ID label that
/// identification used: per device-ID key seen, `NotIn(<values seen>)`.
fn device_id_exclusions(cluster: &ClusterGpus) -> Vec<Requirement> {
    let mut seen: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for evidence in cluster
        .all_evidence()
        .filter(|e| e.basis() == Basis::DeviceId)
    {
        seen.entry(evidence.key())
            .or_default()
            .insert(evidence.value().to_owned());
    }
    seen.into_iter()
        .map(|(key, values)| Requirement {
            key: key.to_owned(),
            operator: Operator::NotIn,
            values: values.into_iter().collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::labels::{AMD_DEVICE_ID, AMD_FAMILY};

    fn model(name: &str) -> GpuModel {
        GpuModel::new(name).expect("a name")
    }

    fn node(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn device_ids_per_model() {
        assert_eq!(
            device_ids(&model("MI300X")),
            ["74a1", "74a9", "74b5", "74bd"]
        );
        assert_eq!(device_ids(&model("Instinct MI325X")), ["74a5", "74b9"]);
        assert_eq!(device_ids(&model("AMD-74C0")), ["74c0"]);
        assert!(device_ids(&model("H100")).is_empty());
        assert!(device_ids(&model("AI")).is_empty());
    }

    #[test]
    fn affinity_shape() {
        let empty = ClusterGpus::default();
        let a = empty.node_affinity([&model("MI325X")]).expect("AMD model");
        // Two value terms and 2 keys x 2 IDs suffix terms.
        assert_eq!(a.terms.len(), 2 + 2 * 2);
        let first = &a.terms[0].requirements[0];
        assert_eq!(first.key, "amd.com/gpu.device-id");
        assert_eq!(first.operator, Operator::In);
        assert_eq!(first.values, ["74a5", "74b9"]);
        assert_eq!(empty.node_affinity([&model("H100")]), None);
        assert_eq!(empty.node_affinity([]), None);
    }

    #[test]
    fn affinity_matches_each_label_form() {
        let a = ClusterGpus::default()
            .node_affinity([&model("MI300X"), &model("MI325X")])
            .expect("AMD models");
        let one = |k: &str, v: &str| node(&[(k, v)]);
        assert!(a.matches(&one("amd.com/gpu.device-id", "74b5")));
        assert!(a.matches(&one("beta.amd.com/gpu.device-id", "74a5")));
        assert!(a.matches(&one("amd.com/gpu.device-id.74bd", "8")));
        assert!(!a.matches(&one("amd.com/gpu.device-id.74bd", "0")));
        assert!(!a.matches(&one("amd.com/gpu.device-id", "740f")));
        assert!(!a.matches(&one("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")));
    }

    #[test]
    fn raw_device_id_spellings_are_listed_as_written() {
        let nodes = [
            node(&[(AMD_DEVICE_ID, "0x74A1")]),
            node(&[("beta.amd.com/gpu.device-id.74B5", "4")]),
        ];
        let cluster = ClusterGpus::from_nodes(&nodes);
        let a = cluster
            .node_affinity([&model("MI300X")])
            .expect("AMD model");
        assert!(
            a.terms[0].requirements[0]
                .values
                .contains(&"0x74A1".to_owned())
        );
        assert!(nodes.iter().all(|n| a.matches(n)));
    }

    #[test]
    fn family_identified_nodes_are_pinned_by_family_without_device_ids() {
        let family = node(&[(AMD_FAMILY, "AI")]);
        let mi300x_ai = node(&[(AMD_DEVICE_ID, "74a1"), (AMD_FAMILY, "AI")]);
        let cluster = ClusterGpus::from_nodes([&family, &mi300x_ai]);
        let a = cluster
            .node_affinity([&model("AI")])
            .expect("a family term");
        assert!(a.matches(&family));
        // Identified as MI300X, not AI: the family term must reject it.
        assert!(!a.matches(&mi300x_ai));
        let term = &a.terms[0].requirements;
        assert_eq!(
            term.iter()
                .map(|r| (r.key.as_str(), r.operator, r.values.clone()))
                .collect::<Vec<_>>(),
            [
                (AMD_DEVICE_ID, Operator::NotIn, vec!["74a1".to_owned()]),
                (AMD_FAMILY, Operator::In, vec!["AI".to_owned()]),
            ]
        );
    }
}
