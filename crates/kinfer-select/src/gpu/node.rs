//! GPU identity from one node's labels.
//!
//! Contract: [`identify_node`] reads only labels and returns every GPU model a node
//! advertises, in a deterministic order (vendor, then model), each with its VRAM (label first,
//! then the table) and the [`Evidence`] that named it. Which labels name a model is
//! [`labels`]' contract: AMD device IDs, else the AMD family; NVIDIA product.
//! VRAM labels: `amd.com/gpu.vram` (and `beta.`), `nvidia.com/gpu.memory` (MiB).

use std::collections::{BTreeMap, BTreeSet};

use super::labels::{self, AMD_VRAM, AMD_VRAM_BETA, Basis, Evidence, NVIDIA_MEMORY, value};
use super::model::GpuModel;
use super::table::Vendor;
use super::vram::{Vram, VramSource, parse_amd_vram_label, parse_nvidia_memory_label};

/// A GPU model a node advertises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGpu {
    /// Vendor.
    pub vendor: Vendor,
    /// Normalised model.
    pub model: GpuModel,
    /// Per-GPU memory, when a label or the table knows it.
    pub vram: Option<Vram>,
    /// The labels that named the model, as written on the node (never empty).
    pub evidence: BTreeSet<Evidence>,
}

impl NodeGpu {
    /// How the model was identified (device ID, family or product name).
    pub fn identified_by(&self) -> BTreeSet<Basis> {
        self.evidence.iter().map(Evidence::basis).collect()
    }
}

/// Every GPU model the labels advertise, sorted by vendor then model.
pub fn identify_node(labels: &BTreeMap<String, String>) -> Vec<NodeGpu> {
    let mut grouped: BTreeMap<(Vendor, GpuModel), BTreeSet<Evidence>> = BTreeMap::new();
    for (vendor, model, evidence) in labels::read(labels) {
        grouped.entry((vendor, model)).or_default().insert(evidence);
    }
    grouped
        .into_iter()
        .map(|((vendor, model), evidence)| {
            let label = match vendor {
                Vendor::Amd => {
                    value(labels, &[AMD_VRAM, AMD_VRAM_BETA]).and_then(parse_amd_vram_label)
                }
                Vendor::Nvidia => {
                    value(labels, &[NVIDIA_MEMORY]).and_then(parse_nvidia_memory_label)
                }
            };
            let vram = match label {
                Some(bytes) => Some(Vram {
                    bytes,
                    source: VramSource::Label,
                }),
                None => model.spec().map(Vram::from_table),
            };
            NodeGpu {
                vendor,
                model,
                vram,
                evidence,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::labels::{
        AMD_DEVICE_ID, AMD_DEVICE_ID_BETA, AMD_FAMILY, AMD_FAMILY_BETA, NVIDIA_PRODUCT,
    };

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn models(pairs: &[(&str, &str)]) -> Vec<String> {
        identify_node(&labels(pairs))
            .into_iter()
            .map(|g| g.model.to_string())
            .collect()
    }

    #[test]
    fn identification_table() {
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
        let cases: &[Case] = &[
            (&[(AMD_DEVICE_ID, "74a1")], &["MI300X"]),
            (&[(AMD_DEVICE_ID_BETA, "74a5")], &["MI325X"]),
            (&[(AMD_DEVICE_ID, "0x75A3")], &["MI355X"]),
            (&[("amd.com/gpu.device-id.74b9", "8")], &["MI325X"]),
            (&[("amd.com/gpu.device-id.74b9", "0")], &[]),
            (&[("beta.amd.com/gpu.device-id.740f", "2")], &["MI210"]),
            (&[(AMD_DEVICE_ID, "74c0")], &["AMD-74C0"]),
            (&[(AMD_FAMILY, "AI")], &["AI"]),
            (&[(AMD_FAMILY, "Instinct MI300X")], &["MI300X"]),
            (&[("amd.com/gpu.family.AI", "1")], &["AI"]),
            (&[(AMD_DEVICE_ID, "74a1"), (AMD_FAMILY, "AI")], &["MI300X"]),
            (&[(AMD_DEVICE_ID, " ")], &[]),
            // No usable device ID: the family decides; every family label counts.
            (&[(AMD_DEVICE_ID, ""), (AMD_FAMILY, "AI")], &["AI"]),
            (&[(AMD_DEVICE_ID, "zz"), (AMD_FAMILY, "AI")], &["AI"]),
            (
                &[("amd.com/gpu.device-id.74a1", "0"), (AMD_FAMILY, "AI")],
                &["AI"],
            ),
            (
                &[(AMD_FAMILY, "AI"), (AMD_FAMILY_BETA, "NV")],
                &["AI", "NV"],
            ),
            (
                &[(AMD_FAMILY, "ai"), ("beta.amd.com/gpu.family.AI", "2")],
                &["AI"],
            ),
            (
                &[(AMD_DEVICE_ID, "74A1"), (AMD_DEVICE_ID_BETA, "74a5")],
                &["MI300X", "MI325X"],
            ),
            (
                &[
                    ("amd.com/gpu.device-id.74a1", "4"),
                    ("amd.com/gpu.device-id.74a5", "4"),
                ],
                &["MI300X", "MI325X"],
            ),
            (&[(NVIDIA_PRODUCT, "NVIDIA-H100-80GB-HBM3")], &["H100"]),
            (&[(NVIDIA_PRODUCT, "NVIDIA-A100-SXM4-40GB")], &["A100"]),
            (&[("kubernetes.io/hostname", "n1")], &[]),
        ];
        for (pairs, want) in cases {
            assert_eq!(models(pairs), *want, "{pairs:?}");
        }
    }

    #[test]
    fn vram_label_then_table() {
        let gib = 1024 * 1024 * 1024;
        let n = identify_node(&labels(&[(AMD_DEVICE_ID, "74a1"), (AMD_VRAM, "191G")]));
        assert_eq!(
            n[0].vram,
            Some(Vram {
                bytes: 191 * gib,
                source: VramSource::Label
            })
        );
        let n = identify_node(&labels(&[(AMD_DEVICE_ID, "74a1")]));
        assert_eq!(
            n[0].vram,
            Some(Vram {
                bytes: 192 * gib,
                source: VramSource::Table
            })
        );
        let n = identify_node(&labels(&[
            (NVIDIA_PRODUCT, "NVIDIA-H100-80GB-HBM3"),
            (NVIDIA_MEMORY, "81559"),
        ]));
        assert_eq!(n[0].vram.map(|v| v.bytes), Some(81_559 * 1024 * 1024));
        assert_eq!(
            identify_node(&labels(&[(AMD_DEVICE_ID, "74c0")]))[0].vram,
            None
        );
    }

    #[test]
    fn evidence_is_the_label_as_written() {
        let n = identify_node(&labels(&[
            (AMD_DEVICE_ID, "0x74A1"),
            ("amd.com/gpu.device-id.74A1", "8"),
            ("amd.com/gpu.device-id.74a5", "0"),
            (AMD_FAMILY, "AI"),
        ]));
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].model.as_str(), "MI300X");
        assert_eq!(n[0].identified_by(), BTreeSet::from([Basis::DeviceId]));
        let seen: Vec<(&str, &str)> = n[0].evidence.iter().map(|e| (e.key(), e.value())).collect();
        assert_eq!(
            seen,
            [
                (AMD_DEVICE_ID, "0x74A1"),
                ("amd.com/gpu.device-id.74A1", "8")
            ]
        );

        let n = identify_node(&labels(&[(AMD_FAMILY_BETA, "Instinct-MI300X")]));
        assert_eq!(n[0].model.as_str(), "MI300X");
        assert_eq!(n[0].identified_by(), BTreeSet::from([Basis::Family]));
        let n = identify_node(&labels(&[(NVIDIA_PRODUCT, "NVIDIA-H100-80GB-HBM3")]));
        assert_eq!(n[0].identified_by(), BTreeSet::from([Basis::Product]));
    }
}
