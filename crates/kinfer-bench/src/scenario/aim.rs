//! The AIM scenario: N AIMServices over a catalog of 50 AIMClusterModels with four recommended
//! deployments each (200 AIMClusterServiceTemplates), on a cluster with MI300X and MI325X
//! Nodes.
//!
//! Why this shape:
//! - **Cluster models with inline `spec.imageMetadata`.** Upstream's catalog is cluster-wide
//!   (an AIMClusterModelSource turns a registry into AIMClusterModels that every namespace's
//!   services use by name), so one catalog serves the four bench namespaces; inline metadata
//!   is upstream's air-gapped path, so no registry is read. The operator generates the
//!   templates from `recommendedDeployments` as upstream does; each template runs a discovery
//!   Job in the operator namespace, whose log the simulator writes from the model's
//!   `canonicalName` and `source` ([`kinfer_testkit::simulator::aim`], the hook `kinfer render`
//!   uses), and gets a ClusterServingRuntime.
//! - **Both GPU models present**, so every template is available and discovered (200 discovery
//!   Jobs); automatic selection picks the MI325X latency fp8 template of each model (GPU
//!   preference first, then latency, then fp8: no tie).
//! - **Services by model name, automatic template selection, default caching** (`Shared`, as
//!   upstream defaults it): the services of one model in one namespace share one
//!   AIMTemplateCache (no owner), whose AIMArtifact (no owner) runs a check-size Job (the
//!   simulated log reports 16 GiB), creates a PVC and runs a download Job; the InferenceService
//!   is created once the cache is Ready. All of that is the services' cost and is counted with
//!   them: 50 caches, artifacts, PVCs and 100 Jobs per namespace, amortised over the
//!   namespace's services of each model.
//! - **Children**: the InferenceService, owned by the service. Routing is off by default (in
//!   upstream too), fixed replicas own no HPA, and the shared cache is not owned. The minimum
//!   is therefore 1 child + 1 status = 2 writes; the cleanup finalizer
//!   (`aim.eai.amd.com/template-cache-cleanup`) and the shared caching chain are writes beyond
//!   it.
//! - **Converged**: every service `Running` at its generation with its InferenceService (the
//!   simulator makes InferenceServices Ready; with no predictor pod visible the pods condition
//!   follows it).

use anyhow::{Context, Result};
use kinfer_select::gpu::GpuModel;
use kinfer_testkit::TestCluster;
use serde_json::{Value, json};

use super::{Catalog, NAMESPACES, NewObject, Scenario, create, namespace, namespace_of};

/// Models in the catalog.
pub const MODELS: usize = 50;
/// The recommended deployments of every model: `(GPU, metric, precision)`, one template each.
pub const DEPLOYMENTS: [(&str, &str, &str); 4] = [
    ("MI300X", "latency", "fp8"),
    ("MI300X", "throughput", "fp16"),
    ("MI325X", "latency", "fp8"),
    ("MI325X", "throughput", "fp16"),
];
/// GPU Nodes per GPU model.
const NODES_PER_GPU: usize = 2;
/// GPUs per Node.
const GPUS_PER_NODE: u32 = 8;
/// The operator namespace (`AIM_SYSTEM_NAMESPACE`'s default): cluster templates' discovery
/// Jobs run there.
pub const SYSTEM_NAMESPACE: &str = "aim-system";

const API_VERSION: &str = "aim.eai.amd.com/v1alpha1";
const GROUP: &str = "aim.eai.amd.com";

/// The name of catalog model `m`.
pub fn model_name(m: usize) -> String {
    format!("bench-model-{m:02}")
}

/// The model service `i` runs: every namespace gets every model (services go round the
/// namespaces first), so each namespace has one shared cache per model.
pub fn model_of(i: usize) -> usize {
    (i / NAMESPACES) % MODELS
}

/// The scenario.
pub fn scenario() -> Scenario {
    Scenario {
        name: "aim",
        binary: "aim-operator",
        controller: Some("aim-service-controller"),
        args: Vec::new(),
        api_version: API_VERSION,
        plural: "aimservices",
        kind: "AIMService",
        child_resources: vec![("serving.kserve.io", "inferenceservices")],
        children_per_cr: Some(1),
        converged: Some(("/status/status", "Running")),
        catalog: Some(Catalog {
            describe: "50 AIMClusterModels with inline imageMetadata, 4 recommended deployments each: 200 AIMClusterServiceTemplates, each discovered by a Job in aim-system",
            context,
            objects: catalog,
            progress: catalog_progress,
        }),
        make: service,
    }
}

/// AIMService number `i`: its model by name, everything else upstream's default.
fn service(i: usize) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": "AIMService",
        "metadata": { "name": format!("svc-{i:05}"), "namespace": namespace_of(i) },
        "spec": { "model": { "name": model_name(model_of(i)) } }
    })
}

/// The image of catalog model `m`, spelled like upstream's (`amdenterpriseai/aim-<model>:<tag>`).
///
/// Its length matters: a Shared template cache is named by upstream's rule, the template name
/// cut to 54 characters plus a hash of the namespace only, so templates whose names share
/// their first 54 characters share one cache name in a namespace, and their services then
/// re-apply that cache against each other without end (see docs/operations.md, Performance).
/// With this spelling the cut keeps the model number, GPU and metric, so the catalog measures
/// the path every service is meant to take.
pub fn image(m: usize) -> String {
    format!("amdenterpriseai/aim-bench-model-{m:02}:0.8.5")
}

/// Catalog model `m`.
fn model(m: usize) -> Value {
    let deployments: Vec<Value> = DEPLOYMENTS
        .iter()
        .map(|(gpu, metric, precision)| {
            json!({ "gpuModel": gpu, "gpuCount": 1, "metric": metric, "precision": precision })
        })
        .collect();
    json!({
        "apiVersion": API_VERSION,
        "kind": "AIMClusterModel",
        "metadata": { "name": model_name(m) },
        "spec": {
            "image": image(m),
            "imageMetadata": { "model": {
                "canonicalName": format!("bench/model-{m:02}"),
                "source": format!("hf://bench/model-{m:02}"),
                "recommendedDeployments": deployments,
            } }
        }
    })
}

fn catalog() -> Vec<NewObject> {
    (0..MODELS)
        .map(|m| (API_VERSION, "aimclustermodels", String::new(), model(m)))
        .collect()
}

/// A GPU Node the operator identifies as `gpu` (its first PCI device ID in the GPU table)
/// with `GPUS_PER_NODE` of the vendor's extended resource.
fn gpu_node(gpu: &str, index: usize) -> Result<NewObject> {
    let spec = GpuModel::new(gpu)
        .and_then(|m| m.spec())
        .with_context(|| format!("{gpu} is not in the GPU table"))?;
    let device_id = spec
        .device_ids
        .first()
        .with_context(|| format!("{gpu} has no PCI device ID"))?;
    let name = format!("bench-gpu-{}-{index}", gpu.to_ascii_lowercase());
    let mut capacity = json!({ "cpu": "128", "memory": "1Ti", "pods": "110" });
    capacity[spec.vendor.resource_name()] = json!(GPUS_PER_NODE.to_string());
    Ok((
        "v1",
        "nodes",
        String::new(),
        json!({
            "metadata": { "name": name, "labels": {
                "kubernetes.io/hostname": name,
                "amd.com/gpu.device-id": device_id,
            } },
            "status": { "capacity": capacity, "allocatable": capacity },
        }),
    ))
}

/// The operator namespace, the GPU Nodes, and the simulated logs of the catalog's images.
fn context(cluster: &TestCluster) -> Result<()> {
    create(cluster, namespace(SYSTEM_NAMESPACE))?;
    let mut gpus: Vec<&str> = DEPLOYMENTS.iter().map(|(gpu, _, _)| *gpu).collect();
    gpus.dedup();
    for gpu in gpus {
        for index in 0..NODES_PER_GPU {
            create(cluster, gpu_node(gpu, index)?)?;
        }
    }
    let models: Vec<Value> = (0..MODELS).map(model).collect();
    kinfer_testkit::simulator::aim::install(
        cluster,
        kinfer_testkit::simulator::aim::models_by_image(&models),
    );
    Ok(())
}

/// Ready at its generation.
fn ready(o: &Value) -> bool {
    let generation = o["metadata"]["generation"].as_i64();
    generation.is_some()
        && o["status"]["observedGeneration"].as_i64() == generation
        && o["status"]["status"] == "Ready"
}

/// `(models and templates Ready, MODELS × (1 + templates per model))`.
fn catalog_progress(cluster: &TestCluster) -> (usize, usize) {
    let settled = ["aimclustermodels", "aimclusterservicetemplates"]
        .into_iter()
        .flat_map(|plural| cluster.objects(GROUP, plural))
        .filter(|o| ready(o))
        .count();
    (settled, MODELS * (1 + DEPLOYMENTS.len()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_namespace_gets_every_model() {
        let pairs: BTreeSet<(String, usize)> = (0..NAMESPACES * MODELS)
            .map(|i| (namespace_of(i), model_of(i)))
            .collect();
        assert_eq!(pairs.len(), NAMESPACES * MODELS);
    }

    #[test]
    fn gpu_nodes_carry_the_device_id_of_their_model() {
        let (_, plural, _, node) = gpu_node("MI325X", 0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plural, "nodes");
        assert_eq!(node["metadata"]["labels"]["amd.com/gpu.device-id"], "74a5");
        assert_eq!(node["status"]["capacity"]["amd.com/gpu"], "8");
        assert!(gpu_node("TPU9", 0).is_err());
    }

    #[test]
    fn catalog_objects_validate_against_their_crds() {
        let crds = super::super::crds();
        let crd = |kind: &str| {
            let found = crds.iter().find(|c| c.spec.names.kind == kind);
            serde_json::to_value(found.unwrap_or_else(|| panic!("no CRD for {kind}")))
                .unwrap_or_default()
        };
        for (kind, object) in [("AIMClusterModel", model(7)), ("AIMService", service(7))] {
            let v = kinfer_crdcheck::SchemaValidator::from_crd(&crd(kind), Some("v1alpha1"))
                .unwrap_or_else(|e| panic!("{e}"));
            let errors = v.errors(&object);
            assert!(errors.is_empty(), "{kind}: {errors:?}");
        }
    }
}
