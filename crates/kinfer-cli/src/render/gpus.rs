//! `--set-gpus MODEL=COUNT,...`: GPU Nodes for the render cluster.
//!
//! Contract: each `MODEL=COUNT` becomes one Node `kinfer-gpu-<model>` (lower case) that
//! [`kinfer_select::gpu::identify_node`] identifies as exactly MODEL:
//! - AMD: `amd.com/gpu.device-id` = the model's first PCI device ID in the GPU table and
//!   `amd.com/gpu.vram` = its VRAM (`192G`);
//! - NVIDIA: `nvidia.com/gpu.product` = `NVIDIA-<MODEL>` and `nvidia.com/gpu.memory` in MiB;
//! - capacity and allocatable: COUNT of the vendor's extended resource
//!   ([`kinfer_api::accelerator`], via the GPU table), plus CPU, memory and pods, and a Ready
//!   condition. MODEL is any name the GPU table knows, in any spelling `normalize` accepts.

use kinfer_select::gpu::{GpuModel, GpuSpec, Vendor};
use serde_json::{Value, json};

/// One `MODEL=COUNT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuRequest {
    /// The table row.
    pub spec: &'static GpuSpec,
    /// GPUs on the node.
    pub count: u32,
}

/// Parses `MODEL=COUNT`.
pub fn parse(s: &str) -> Result<GpuRequest, String> {
    let (model, count) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected MODEL=COUNT, e.g. MI300X=8"))?;
    let count: u32 = count
        .trim()
        .parse()
        .ok()
        .filter(|c| *c > 0)
        .ok_or_else(|| format!("{s:?}: COUNT must be a positive integer"))?;
    let spec = GpuModel::new(model).and_then(|m| m.spec()).ok_or_else(|| {
        let known: Vec<&str> = kinfer_select::gpu::GPUS.iter().map(|g| g.model).collect();
        format!(
            "{model:?} is not a GPU model kinfer knows ({})",
            known.join(", ")
        )
    })?;
    Ok(GpuRequest { spec, count })
}

/// The Node for `request`, with its status.
pub fn node(request: &GpuRequest) -> Value {
    let spec = request.spec;
    let name = format!("kinfer-gpu-{}", spec.model.to_ascii_lowercase());
    let mut labels = json!({
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    });
    match spec.vendor {
        Vendor::Amd => {
            labels["amd.com/gpu.device-id"] =
                json!(spec.device_ids.first().copied().unwrap_or_default());
            labels["amd.com/gpu.vram"] = json!(format!("{}G", spec.vram_gib));
        }
        Vendor::Nvidia => {
            labels["nvidia.com/gpu.product"] = json!(format!("NVIDIA-{}", spec.model));
            labels["nvidia.com/gpu.memory"] = json!((u64::from(spec.vram_gib) * 1024).to_string());
        }
    }
    let mut resources = json!({ "cpu": "128", "memory": "1Ti", "pods": "110" });
    resources[spec.vendor.resource_name()] = json!(request.count.to_string());
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name, "labels": labels },
        "spec": {},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady" }],
        },
    })
}

/// Whether the node is identified as the requested model (the contract, checked in tests).
#[cfg(test)]
fn identifies(request: &GpuRequest) -> bool {
    let node = node(request);
    let labels: std::collections::BTreeMap<String, String> =
        serde_json::from_value(node["metadata"]["labels"].clone()).unwrap_or_default();
    let found = kinfer_select::gpu::identify_node(&labels);
    found.len() == 1 && found[0].model.as_str() == request.spec.model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_model_is_identified_from_its_node() {
        for spec in kinfer_select::gpu::GPUS {
            let request = parse(&format!("{}=4", spec.model)).unwrap();
            assert!(identifies(&request), "{}", spec.model);
            let node = node(&request);
            assert_eq!(node["status"]["capacity"][spec.vendor.resource_name()], "4");
        }
        assert_eq!(parse("mi300x=8").unwrap().spec.model, "MI300X");
        assert!(parse("MI300X").is_err());
        assert!(parse("MI300X=0").is_err());
        assert!(parse("TPU9=1").is_err());
    }
}
