//! Our typed subsets of third-party kinds never invent a field: every path of the CRD
//! generated from kinfer-api exists upstream with the same type, except below an object
//! upstream leaves free-form (an embedded `ObjectMeta` is `type: object` without properties
//! upstream, fully typed by k8s-openapi: stricter, never looser).

use std::collections::BTreeMap;

use kinfer_crdcheck::{
    CompareOptions, Difference, FieldFacts, compare_crds, field_paths, load_yaml_documents,
    shared_dir,
};

const PAIRS: &[(&str, &str)] = &[
    (
        "InferenceService",
        "kserve/serving.kserve.io_inferenceservices.yaml",
    ),
    (
        "ServingRuntime",
        "kserve/serving.kserve.io_servingruntimes.yaml",
    ),
    (
        "ClusterServingRuntime",
        "kserve/serving.kserve.io_clusterservingruntimes.yaml",
    ),
    (
        "InferencePool",
        "gateway-api-inference-extension/inference.networking.k8s.io_inferencepools.yaml",
    ),
    (
        "DestinationRule",
        "istio/networking.istio.io_destinationrules.yaml",
    ),
    (
        "ServiceMonitor",
        "prometheus-operator/monitoring.coreos.com_servicemonitors.yaml",
    ),
    (
        "PodMonitor",
        "prometheus-operator/monitoring.coreos.com_podmonitors.yaml",
    ),
];

#[test]
fn subset_crds_only_use_upstream_fields_with_upstream_types() {
    let Some(shared) = shared_dir() else { return };
    let ours = kinfer_api::third_party::crds();
    assert_eq!(ours.len(), PAIRS.len());
    let mut problems = Vec::new();
    for (kind, path) in PAIRS {
        let crd = ours
            .iter()
            .find(|c| c.spec.names.kind == *kind)
            .expect("typed");
        let ours = serde_json::to_value(crd).expect("json");
        let mut upstream = load_yaml_documents(&shared.join("upstream-crds").join(path)).remove(0);
        // Compare the version we type against upstream's same version only.
        let version = crd.spec.versions[0].name.clone();
        if let Some(versions) = upstream["spec"]["versions"].as_array_mut() {
            versions.retain(|v| v["name"] == version.as_str());
            if let Some(v) = versions.first_mut() {
                v["storage"] = true.into();
            }
        }
        let upstream_paths =
            field_paths(&upstream["spec"]["versions"][0]["schema"]["openAPIV3Schema"]);
        for diff in compare_crds(
            &upstream,
            &ours,
            CompareOptions {
                include_status: true,
            },
        ) {
            match &diff {
                Difference::Extra { path } if !under_free_form(&upstream_paths, path) => {
                    problems.push(format!("{kind}: {diff:?}"));
                }
                Difference::Changed { keyword, .. } if keyword == "type" => {
                    problems.push(format!("{kind}: {diff:?}"));
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Whether the nearest ancestor of `path` that upstream has is an object without fields.
fn under_free_form(upstream: &BTreeMap<String, FieldFacts>, path: &str) -> bool {
    let mut ancestor = path;
    while let Some(cut) = ancestor.rfind(['.', '[', '{']) {
        ancestor = &ancestor[..cut];
        if let Some(facts) = upstream.get(ancestor) {
            let prefix = format!("{ancestor}.");
            let is_object = facts.get("type").and_then(|t| t.as_str()) == Some("object");
            return is_object && !upstream.keys().any(|k| k.starts_with(&prefix));
        }
    }
    false
}
