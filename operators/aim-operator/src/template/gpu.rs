//! GPU availability of a template (NOTES rows 8-9). Pure.
//!
//! Contract: from the labels of every Node ([`ClusterGpus`]) and the template's
//! `hardware.gpu`: no GPU (or zero requested without a model or `minVram`) is CPU-only and
//! always available; a GPU model is available when some node has it (normalised names),
//! else `GPUNotAvailable` with the models present; `minVram` admits every present model whose
//! smallest VRAM meets it, else `VRAMNotAvailable`. Available GPUs come with the node affinity
//! that pins pods to exactly their nodes and a hardware summary (`2 x MI300X`, `CPU`). A GPU
//! model of one vendor with another vendor's whole-GPU `resourceName` (an NVIDIA model on the
//! `amd.com/gpu` default) is a `ResourceMismatch` naming both, never pods that cannot schedule.

use k8s_openapi::api::core::v1::NodeAffinity;
use kinfer_api::aim::AIMHardwareRequirements;
use kinfer_select::gpu::{ClusterGpus, GpuModel, Vendor};

/// The outcome for one template.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuAvailability {
    /// No GPU needed.
    CpuOnly,
    /// Available on these models, with the affinity that pins pods to their nodes.
    Available {
        /// The models admitted.
        models: Vec<String>,
        /// Required node affinity (`None` when nothing can pin them, e.g. a family-only label
        /// set the table has no device IDs for).
        affinity: Option<NodeAffinity>,
    },
    /// Not available; the condition reason and message.
    NotAvailable {
        /// `GPUNotAvailable` or `VRAMNotAvailable`.
        reason: &'static str,
        /// What is missing and what is present.
        message: String,
    },
    /// The requirement itself is invalid (an unparseable `minVram`).
    Invalid(String),
    /// The GPU model is one vendor's and `resourceName` another vendor's whole GPU: pods would
    /// never schedule. The message names both.
    ResourceMismatch(String),
}

impl GpuAvailability {
    /// Whether pods can be placed.
    pub fn is_available(&self) -> bool {
        matches!(self, Self::CpuOnly | Self::Available { .. })
    }
}

fn present(cluster: &ClusterGpus) -> String {
    let models: Vec<&str> = cluster.models().map(GpuModel::as_str).collect();
    if models.is_empty() {
        "no GPUs are present in the cluster".to_owned()
    } else {
        format!("GPUs present: {}", models.join(", "))
    }
}

fn affinity(cluster: &ClusterGpus, models: &[&GpuModel]) -> Option<NodeAffinity> {
    let resolved = cluster.node_affinity(models.iter().copied())?;
    let selector = kinfer_builders::pod::gpu_affinity(&resolved);
    Some(NodeAffinity {
        required_during_scheduling_ignored_during_execution: Some(selector),
        preferred_during_scheduling_ignored_during_execution: None,
    })
}

/// Availability of `hardware` on `cluster`; see the module contract.
pub fn availability(
    hardware: Option<&AIMHardwareRequirements>,
    cluster: &ClusterGpus,
) -> GpuAvailability {
    let Some(gpu) = hardware.and_then(|h| h.gpu.as_ref()) else {
        return GpuAvailability::CpuOnly;
    };
    let model = gpu.model.as_deref().filter(|m| !m.trim().is_empty());
    if let Some(raw) = model {
        let Some(wanted) = GpuModel::new(raw) else {
            return GpuAvailability::Invalid(format!("GPU model {raw:?} is not a GPU name"));
        };
        if let (Some(vendor), Some(other)) =
            (wanted.vendor(), Vendor::of_resource(&gpu.resource_name))
            && vendor != other
        {
            return GpuAvailability::ResourceMismatch(format!(
                "hardware.gpu: {} is an {vendor} GPU but resourceName {} is {other}'s; set resourceName to {}",
                wanted.as_str(),
                gpu.resource_name,
                vendor.resource_name()
            ));
        }
        if !cluster.contains(&wanted) {
            return GpuAvailability::NotAvailable {
                reason: "GPUNotAvailable",
                message: format!(
                    "GPU {} is not present in the cluster; {}",
                    wanted.as_str(),
                    present(cluster)
                ),
            };
        }
        return GpuAvailability::Available {
            models: vec![wanted.as_str().to_owned()],
            affinity: affinity(cluster, &[&wanted]),
        };
    }
    if let Some(min) = &gpu.min_vram {
        let bytes = match kinfer_api::quantity::parse_bytes(&min.0) {
            Ok(b) => b,
            Err(e) => return GpuAvailability::Invalid(format!("hardware.gpu.minVram: {e}")),
        };
        let models = cluster.models_with_min_vram(bytes);
        if models.is_empty() {
            return GpuAvailability::NotAvailable {
                reason: "VRAMNotAvailable",
                message: format!(
                    "no GPU with at least {} of memory; {}",
                    min.0,
                    present(cluster)
                ),
            };
        }
        return GpuAvailability::Available {
            models: models.iter().map(|m| m.as_str().to_owned()).collect(),
            affinity: affinity(cluster, &models),
        };
    }
    GpuAvailability::CpuOnly
}

/// `2 x MI300X`, `1 x GPU (>= 64Gi)` or `CPU`.
pub fn summary(
    hardware: Option<&AIMHardwareRequirements>,
    resolved_model: Option<&str>,
    count: Option<i32>,
) -> String {
    let gpu = hardware.and_then(|h| h.gpu.as_ref());
    let count = count.or_else(|| gpu.and_then(|g| g.requests)).unwrap_or(0);
    let Some(g) = gpu.filter(|_| count > 0) else {
        return "CPU".to_owned();
    };
    match (resolved_model.or(g.model.as_deref()), &g.min_vram) {
        (Some(m), _) => format!("{count} x {m}"),
        (None, Some(v)) => format!("{count} x GPU (>= {})", v.0),
        (None, None) => format!("{count} x GPU"),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kinfer_api::aim::AIMGpuRequirements;

    use super::*;

    fn hw(model: Option<&str>, min_vram: Option<&str>) -> AIMHardwareRequirements {
        AIMHardwareRequirements {
            cpu: None,
            gpu: Some(AIMGpuRequirements {
                model: model.map(Into::into),
                min_vram: min_vram
                    .map(|v| k8s_openapi::apimachinery::pkg::api::resource::Quantity(v.into())),
                requests: Some(1),
                ..Default::default()
            }),
        }
    }

    /// A GPU model of one vendor with the other vendor's whole-GPU resource is reported
    /// naming both, whatever the cluster has; a partition resource is not judged.
    #[test]
    fn a_gpu_model_with_another_vendors_resource_is_a_mismatch_naming_both() {
        let node = BTreeMap::from([(
            "nvidia.com/gpu.product".to_owned(),
            "NVIDIA-H100-80GB-HBM3".to_owned(),
        )]);
        let cluster = ClusterGpus::from_nodes([&node]);
        let with = |model: &str, resource: &str| {
            let mut h = hw(Some(model), None);
            if let Some(g) = h.gpu.as_mut() {
                resource.clone_into(&mut g.resource_name);
            }
            availability(Some(&h), &cluster)
        };
        match with("H100", "amd.com/gpu") {
            GpuAvailability::ResourceMismatch(m) => {
                assert!(
                    m.contains("H100") && m.contains("amd.com/gpu") && m.contains("nvidia.com/gpu"),
                    "{m}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            with("MI300X", "nvidia.com/gpu"),
            GpuAvailability::ResourceMismatch(_)
        ));
        assert!(with("H100", "nvidia.com/gpu").is_available());
        assert!(!matches!(
            with("MI300X", "amd.com/gpu-partition"),
            GpuAvailability::ResourceMismatch(_)
        ));
    }

    #[test]
    fn model_present_absent_and_min_vram() {
        let node = BTreeMap::from([("amd.com/gpu.device-id".to_owned(), "74a1".to_owned())]);
        let cluster = ClusterGpus::from_nodes([&node]);
        assert!(availability(Some(&hw(Some("mi300x"), None)), &cluster).is_available());
        match availability(Some(&hw(Some("MI325X"), None)), &cluster) {
            GpuAvailability::NotAvailable { reason, message } => {
                assert_eq!(reason, "GPUNotAvailable");
                assert!(message.contains("MI300X"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(availability(Some(&hw(None, Some("128Gi"))), &cluster).is_available());
        assert!(!availability(Some(&hw(None, Some("200Gi"))), &cluster).is_available());
        assert_eq!(availability(None, &cluster), GpuAvailability::CpuOnly);
        assert_eq!(
            summary(Some(&hw(Some("MI300X"), None)), None, Some(2)),
            "2 x MI300X"
        );
        assert_eq!(summary(None, None, None), "CPU");
    }
}
