//! The cluster-wide set of GPU models, built from every node's labels.
//!
//! Contract: [`ClusterGpus`] aggregates [`identify_node`] over nodes: per model, the vendor,
//! the node count, the smallest VRAM seen (a workload pinned to a model may land on any node
//! of it, so `minVram` must hold on all of them) and every label that identified it
//! ([`ClusterGpu::evidence`]), which is how it was identified ([`ClusterGpu::identified_by`])
//! and what [`ClusterGpus::node_affinity`] pins workloads with. Deterministic: every
//! collection is sorted.

use std::collections::{BTreeMap, BTreeSet};

use super::affinity::{self, NodeAffinity};
use super::labels::{Basis, Evidence};
use super::model::GpuModel;
use super::node::{NodeGpu, identify_node};
use super::table::Vendor;
use super::vram::Vram;

/// One GPU model present in the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterGpu {
    /// Vendor.
    pub vendor: Vendor,
    /// Number of nodes advertising the model.
    pub nodes: usize,
    /// The smallest per-GPU memory seen on those nodes; `None` if some node's is unknown.
    pub vram: Option<Vram>,
    /// Every label, as written on some node, that identified the model (never empty).
    pub evidence: BTreeSet<Evidence>,
}

impl ClusterGpu {
    /// How the model was identified across the cluster (device ID, family, product name).
    pub fn identified_by(&self) -> BTreeSet<Basis> {
        self.evidence.iter().map(Evidence::basis).collect()
    }
}

/// The GPU models present in a cluster, built from node labels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterGpus {
    models: BTreeMap<GpuModel, ClusterGpu>,
}

impl ClusterGpus {
    /// Aggregates the labels of every node.
    pub fn from_nodes<'a>(nodes: impl IntoIterator<Item = &'a BTreeMap<String, String>>) -> Self {
        let mut cluster = ClusterGpus::default();
        for labels in nodes {
            for gpu in identify_node(labels) {
                cluster.add(gpu);
            }
        }
        cluster
    }

    /// Adds one node's GPU.
    pub fn add(&mut self, gpu: NodeGpu) {
        match self.models.get_mut(&gpu.model) {
            Some(entry) => {
                entry.nodes += 1;
                entry.vram = match (entry.vram, gpu.vram) {
                    (Some(a), Some(b)) => Some(if b.bytes < a.bytes { b } else { a }),
                    _ => None,
                };
                entry.evidence.extend(gpu.evidence);
            }
            None => {
                self.models.insert(
                    gpu.model,
                    ClusterGpu {
                        vendor: gpu.vendor,
                        nodes: 1,
                        vram: gpu.vram,
                        evidence: gpu.evidence,
                    },
                );
            }
        }
    }

    /// Whether any node has the model.
    pub fn contains(&self, model: &GpuModel) -> bool {
        self.models.contains_key(model)
    }

    /// The entry for a model.
    pub fn get(&self, model: &GpuModel) -> Option<&ClusterGpu> {
        self.models.get(model)
    }

    /// Present models, sorted.
    pub fn models(&self) -> impl Iterator<Item = &GpuModel> {
        self.models.keys()
    }

    /// Present models as a set (the input template selection takes).
    pub fn model_set(&self) -> BTreeSet<GpuModel> {
        self.models.keys().cloned().collect()
    }

    /// Whether no node advertises a GPU.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// Present models whose VRAM (the smallest seen) is at least `min_bytes`, sorted. Models
    /// whose VRAM is unknown qualify only for a zero minimum.
    pub fn models_with_min_vram(&self, min_bytes: u64) -> Vec<&GpuModel> {
        self.models
            .iter()
            .filter(|(_, gpu)| min_bytes == 0 || gpu.vram.is_some_and(|v| v.bytes >= min_bytes))
            .map(|(model, _)| model)
            .collect()
    }

    /// The required node affinity that admits exactly the nodes of this cluster identified
    /// as any of `models`, plus nodes that join later with the table's canonical device-ID
    /// labels. `None` when nothing can pin them (no model is in the cluster or has device IDs).
    /// See [`affinity`] for the terms.
    pub fn node_affinity<'a>(
        &self,
        models: impl IntoIterator<Item = &'a GpuModel>,
    ) -> Option<NodeAffinity> {
        affinity::build(self, models)
    }

    /// Every label that identified any model, as written.
    pub(crate) fn all_evidence(&self) -> impl Iterator<Item = &Evidence> {
        self.models.values().flat_map(|g| &g.evidence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::labels::{AMD_DEVICE_ID, AMD_FAMILY, AMD_VRAM};

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn cluster_aggregation_and_min_vram() {
        let gib = 1024 * 1024 * 1024;
        let nodes = [
            labels(&[(AMD_DEVICE_ID, "74a1")]),
            labels(&[(AMD_DEVICE_ID, "74a1"), (AMD_VRAM, "96G")]),
            labels(&[(AMD_DEVICE_ID, "74a5")]),
            labels(&[(AMD_DEVICE_ID, "740f")]),
            labels(&[(AMD_DEVICE_ID, "74c0")]),
        ];
        let cluster = ClusterGpus::from_nodes(&nodes);
        let mi300x = GpuModel::new("MI300X").expect("a name");
        assert_eq!(cluster.get(&mi300x).map(|g| g.nodes), Some(2));
        // The partitioned node's 96G wins: the smallest figure across nodes.
        let names = |v: Vec<&GpuModel>| v.into_iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(
            names(cluster.models_with_min_vram(64 * gib)),
            ["MI210", "MI300X", "MI325X"]
        );
        assert_eq!(names(cluster.models_with_min_vram(100 * gib)), ["MI325X"]);
        assert_eq!(names(cluster.models_with_min_vram(0)).len(), 4);
        assert_eq!(names(cluster.models_with_min_vram(1)).len(), 3);
        assert!(cluster.contains(&GpuModel::new("AMD-74C0").expect("a name")));
    }

    #[test]
    fn records_how_each_model_was_identified() {
        let nodes = [
            labels(&[(AMD_DEVICE_ID, "74a1")]),
            labels(&[(AMD_FAMILY, "MI300X")]),
            labels(&[(AMD_FAMILY, "AI")]),
        ];
        let cluster = ClusterGpus::from_nodes(&nodes);
        let by = |m: &str| {
            cluster
                .get(&GpuModel::new(m).expect("a name"))
                .map(ClusterGpu::identified_by)
        };
        assert_eq!(
            by("MI300X"),
            Some(BTreeSet::from([Basis::DeviceId, Basis::Family]))
        );
        assert_eq!(by("AI"), Some(BTreeSet::from([Basis::Family])));
    }
}
