//! GPU Nodes coming and going: deleting the only GPU Node re-enqueues its templates, which
//! become NotAvailable but keep their profile and ServingRuntime; a new GPU Node brings them
//! back without discovering again.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;

use aim_operator::scheme::controller;
use aim_operator::template::TemplatePipeline;
use k8s_openapi::api::core::v1::Node;
use kinfer_api::aim::{AIMModel, AIMServiceTemplate};
use kinfer_api::kserve::ServingRuntime;
use kinfer_api::phase::Phase;
use kinfer_state::OverallStatus;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::*;

#[tokio::test]
async fn deleting_a_gpu_node_makes_its_templates_not_available() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "gpu-1", "74a1").await;
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &models,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
        "metadata": {"name": "m", "namespace": NS},
        "spec": {"image": "ghcr.io/silogen/aim-dummy:0.1.0", "imageMetadata": {"model": {
            "recommendedDeployments": [
                {"gpuModel": "MI300X", "gpuCount": 1, "precision": "fp8", "metric": "latency"}
            ]}}}}),
    )
    .await;
    wait(&models, "m", "Ready", |m: &AIMModel| {
        m.status.as_ref().is_some_and(|s| s.status == Phase::Ready)
    })
    .await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    let name = templates
        .list(&ListParams::default().labels("aim.eai.amd.com/model=m"))
        .await
        .unwrap()
        .items[0]
        .name_any();

    let ready = templates.get(&name).await.unwrap();
    let ready_status = ready.status.clone().unwrap();
    assert!(ready_status.profile.is_some());
    let runtimes: Api<ServingRuntime> = Api::namespaced(env.client.clone(), NS);
    let runtime = runtimes.get(&name).await.unwrap();

    // Draining the only GPU Node re-enqueues the template: NotAvailable, but the discovered
    // profile, the node affinity and the ServingRuntime stay (the spec hash did not change).
    Api::<Node>::all(env.client.clone())
        .delete("gpu-1", &DeleteParams::default())
        .await
        .unwrap();
    let drained = wait(&templates, &name, "NotAvailable", |t| {
        t.status
            .as_ref()
            .is_some_and(|s| s.status == Phase::NotAvailable)
    })
    .await;
    let s = drained.status.unwrap();
    assert_eq!(s.profile, ready_status.profile, "the profile is kept");
    assert_eq!(s.model_sources, ready_status.model_sources);
    assert_eq!(
        s.resolved_node_affinity, ready_status.resolved_node_affinity,
        "the affinity is kept"
    );
    assert_eq!(s.discovery, ready_status.discovery, "no new attempt");
    let kept = runtimes.get(&name).await.unwrap();
    assert_eq!(kept.metadata.uid, runtime.metadata.uid, "not pruned");
    assert_eq!(kept.spec, runtime.spec, "not rewritten");
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &templates.get(&name).await.unwrap(),
        )
        .await;
    assert_eq!(r.status, Some(OverallStatus::NotAvailable), "{r:?}");
    assert_eq!(r.writes(), 0, "{r:?}");

    gpu_node(&env.client, "gpu-2", "74a9").await; // another MI300X device id
    let t = wait(&templates, &name, "Ready again on the new Node", |t| {
        t.status.as_ref().is_some_and(|s| {
            s.status == Phase::Ready
                && condition(&s.conditions, "GPUReady").is_some_and(|c| c.status == "True")
        })
    })
    .await;
    let s = t.status.unwrap();
    assert!(s.resolved_node_affinity.is_some());
    assert_eq!(s.discovery, ready_status.discovery, "not discovered again");
}
