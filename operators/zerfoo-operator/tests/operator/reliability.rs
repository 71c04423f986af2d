//! Steady state and failure: a second reconcile writes nothing, a failed read never leads to a
//! create, and `gpuMemory` becomes a GPU request with node affinity.

use k8s_openapi::api::core::v1::NodeSelectorRequirement;
use kinfer_testkit::Fault;
use zerfoo_operator::{GpuVendor, OperatorConfig};

use crate::common::{condition_status, container, env, env_with, full_spec, valid_spec};

#[tokio::test]
async fn a_second_reconcile_writes_nothing() {
    let env = env().await;
    env.create("my-llama", full_spec()).await.unwrap();
    env.converge("my-llama").await;
    assert!(env.get("my-llama").await.status.unwrap().ready);

    env.cluster.counters().reset();
    let report = env.reconcile("my-llama").await;
    assert_eq!(report.writes(), 0, "{report:?}");
    assert_eq!(env.mutations(), 0);
    assert_eq!(env.cluster.counters().writes(), 0);
}

#[tokio::test]
async fn a_failed_read_is_an_error_never_a_reason_to_create() {
    let env = env().await;
    env.create("my-llama", valid_spec()).await.unwrap();
    env.cluster
        .faults()
        .inject(Fault::status("list", "deployments", 500));
    let report = env.reconcile("my-llama").await;
    assert_eq!(report.applied, 0, "{report:?}");
    assert_eq!(
        env.cluster.counters().count("create", Some("deployments")),
        0
    );
    assert_eq!(
        env.cluster.counters().count("patch", Some("deployments")),
        0
    );
    assert_eq!(env.cluster.counters().count("patch", Some("services")), 0);
    let zis = env.get("my-llama").await;
    assert_eq!(condition_status(&zis, "DependenciesReachable"), "False");
    assert!(!zis.status.unwrap().ready);

    env.cluster.faults().clear();
    assert!(env.deployment_names().await.is_empty());
    env.converge("my-llama").await;
    assert_eq!(env.deployment_names().await, ["my-llama-primary"]);
}

fn affinity(d: &k8s_openapi::api::apps::v1::Deployment) -> NodeSelectorRequirement {
    let pod = d.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let node = pod
        .affinity
        .as_ref()
        .unwrap()
        .node_affinity
        .as_ref()
        .unwrap();
    let required = node
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap();
    required.node_selector_terms[0]
        .match_expressions
        .as_ref()
        .unwrap()[0]
        .clone()
}

#[tokio::test]
async fn gpu_memory_becomes_a_gpu_request_and_node_affinity() {
    let env = env().await;
    env.create("my-llama", valid_spec()).await.unwrap();
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    let res = container(&d).resources.clone().unwrap();
    assert_eq!(res.requests.unwrap()["nvidia.com/gpu"].0, "1");
    assert_eq!(res.limits.unwrap()["nvidia.com/gpu"].0, "1");
    let a = affinity(&d);
    assert_eq!(
        (a.key.as_str(), a.operator.as_str()),
        ("nvidia.com/gpu.memory", "Gt")
    );
    // 24Gi = 24576 MiB: nodes with more than 24575 MiB.
    assert_eq!(a.values.unwrap(), ["24575"]);

    // Without gpuMemory: no GPU, no affinity.
    env.edit("my-llama", |s| {
        s.resources.as_mut().unwrap().gpu_memory = None;
    })
    .await;
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    let pod = d.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    // No GPU-memory requirement remains. (The test cluster keeps the emptied parents of a
    // removed list, `nodeSelectorTerms: []`, where a real API server drops them too.)
    let terms = pod
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map_or(0, |r| r.node_selector_terms.len());
    assert_eq!(terms, 0);
    let requests = container(&d).resources.clone().unwrap().requests.unwrap();
    assert!(!requests.contains_key("nvidia.com/gpu"));
}

#[tokio::test]
async fn amd_clusters_request_amd_gpus_by_vram_label() {
    let env = env_with(OperatorConfig {
        gpu_vendor: GpuVendor::Amd,
        ..OperatorConfig::default()
    })
    .await;
    let mut spec = valid_spec();
    spec.resources.as_mut().unwrap().gpu_memory = Some("150Gi".into());
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    let requests = container(&d).resources.clone().unwrap().requests.unwrap();
    assert_eq!(requests["amd.com/gpu"].0, "1");
    let a = affinity(&d);
    assert_eq!(
        (a.key.as_str(), a.operator.as_str()),
        ("amd.com/gpu.vram", "In")
    );
    assert_eq!(a.values.unwrap(), ["192G", "256G", "288G", "432G"]);
}
