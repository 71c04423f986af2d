//! GPU Nodes coming and going: deleting the only GPU Node re-enqueues its templates, which
//! compute NotAvailable; a new GPU Node brings them back.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;

use aim_operator::scheme::controller;
use aim_operator::template::TemplatePipeline;
use k8s_openapi::api::core::v1::Node;
use kinfer_api::aim::{AIMModel, AIMServiceTemplate};
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

    // Deleting the Node re-enqueues the template. Its new status (NotAvailable, no
    // resolvedNodeAffinity) is computed, but the test cluster's server-side apply leaves the
    // emptied `resolvedNodeAffinity` parents behind and rejects the write (422; a real API
    // server drops the owned parent maps too): assert the re-enqueue by the status write it
    // attempts, and the outcome by reconciling once by hand.
    let attempts = || {
        env.cluster
            .counters()
            .count("patch", Some("aimservicetemplates/status"))
    };
    let before = attempts();
    Api::<Node>::all(env.client.clone())
        .delete("gpu-1", &DeleteParams::default())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while attempts() == before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the template was not re-enqueued after its GPU Node was deleted"
        );
        // Poll interval, not synchronisation: the loop exits on the first attempted write.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let live = templates.get(&name).await.unwrap();
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &live,
        )
        .await;
    assert_eq!(r.status, Some(OverallStatus::NotAvailable), "{r:?}");

    gpu_node(&env.client, "gpu-2", "74a9").await; // another MI300X device id
    let t = wait(&templates, &name, "Ready again on the new Node", |t| {
        t.status.as_ref().is_some_and(|s| {
            s.status == Phase::Ready
                && condition(&s.conditions, "GPUReady").is_some_and(|c| c.status == "True")
        })
    })
    .await;
    assert!(t.status.unwrap().resolved_node_affinity.is_some());
}
