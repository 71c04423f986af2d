//! AIMModel from `spec.imageMetadata`: templates generated per recommended deployment, GPU
//! availability, discovery, runtimes, pruning, and a second reconcile that writes nothing.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;

use aim_operator::model::ModelPipeline;
use aim_operator::scheme::controller;
use aim_operator::template::TemplatePipeline;
use kinfer_api::aim::{AIMModel, AIMServiceTemplate};
use kinfer_api::kserve::ServingRuntime;
use kinfer_api::phase::Phase;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::*;

fn model(deployments: &serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
        "metadata": {"name": "qwen", "namespace": NS},
        "spec": {
            "image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5",
            "imageMetadata": {"model": {
                "canonicalName": "Qwen/Qwen3-32B",
                "recommendedDeployments": deployments.clone()
            }}
        }
    })
}

fn generated(templates: &[AIMServiceTemplate]) -> Vec<&AIMServiceTemplate> {
    templates
        .iter()
        .filter(|t| t.labels().get("aim.eai.amd.com/model").map(String::as_str) == Some("qwen"))
        .collect()
}

#[tokio::test]
async fn model_from_spec_metadata_templates_gpu_discovery_prune_and_steady_state() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "gpu-1", "74a1").await; // MI300X
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &models,
        model(&json!([
            {"gpuModel": "MI300X", "gpuCount": 1, "precision": "fp8", "metric": "latency"},
            {"gpuModel": "MI325X", "gpuCount": 1, "precision": "fp8", "metric": "throughput", "profileId": "mi325x-fp8-throughput"}
        ])),
    )
    .await;

    let m = wait(
        &models,
        "qwen",
        "model Ready (SomeTemplatesReady)",
        |m: &AIMModel| {
            m.status.as_ref().is_some_and(|s| {
                s.status == Phase::Ready
                    && condition(&s.conditions, "ServiceTemplatesReady")
                        .is_some_and(|c| c.reason == "SomeTemplatesReady")
            })
        },
    )
    .await;
    let status = m.status.as_ref().unwrap();
    assert!(
        status.image_metadata.is_some(),
        "status.imageMetadata written"
    );
    assert_eq!(status.observed_generation, m.metadata.generation);

    let list = templates.list(&ListParams::default()).await.unwrap().items;
    let ours = generated(&list);
    assert_eq!(ours.len(), 2);
    let mi300 = ours
        .iter()
        .find(|t| t.name_any().contains("mi300x"))
        .unwrap();
    let mi325 = ours
        .iter()
        .find(|t| t.name_any().contains("mi325x"))
        .unwrap();
    assert!(
        mi300
            .name_any()
            .starts_with("amdenterpriseai-aim-qwen-qwen3-32b-0-8-5-1x-mi300x-lat-fp8-")
    );
    assert_eq!(
        mi300.owner_references()[0].name,
        "qwen",
        "owned by the model"
    );
    assert_eq!(
        mi325.spec.common.profile_id.as_deref(),
        Some("mi325x-fp8-throughput")
    );

    // MI300X: discovered, runtime built, affinity and summary resolved.
    let s = mi300.status.as_ref().unwrap();
    assert_eq!(s.status, Phase::Ready);
    let profile = s.profile.as_ref().expect("profile");
    assert_eq!(
        profile
            .metadata
            .as_ref()
            .unwrap()
            .precision
            .map(|p| format!("{p:?}")),
        Some("Fp8".into())
    );
    assert_eq!(s.model_sources[0].model_id, "org/model");
    assert_eq!(s.hardware_summary.as_deref(), Some("1 x MI300X"));
    assert!(s.resolved_node_affinity.is_some());
    assert_eq!(
        condition(&s.conditions, "Discovered").unwrap().status,
        "True"
    );
    assert_eq!(s.discovery.as_ref().unwrap().attempts, Some(1));
    Api::<ServingRuntime>::namespaced(env.client.clone(), NS)
        .get(&mi300.name_any())
        .await
        .expect("ServingRuntime named after the template");

    // MI325X: absent from the cluster.
    let s = mi325.status.as_ref().unwrap();
    assert_eq!(s.status, Phase::NotAvailable);
    let gpu = condition(&s.conditions, "GPUReady").unwrap();
    assert_eq!(gpu.reason, "GPUNotAvailable");
    assert!(
        gpu.message.contains("MI300X"),
        "lists the GPUs present: {}",
        gpu.message
    );
    assert!(s.discovery_job.is_none() || s.profile.is_none());

    // A second reconcile of every object writes nothing.
    for t in [mi300, mi325] {
        let live = templates.get(&t.name_any()).await.unwrap();
        let r = env
            .reconcile_once(
                TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
                controller::TEMPLATE,
                &live,
            )
            .await;
        assert_eq!(r.writes(), 0, "template {} steady: {r:?}", t.name_any());
    }
    let live = models.get("qwen").await.unwrap();
    let r = env
        .reconcile_once(
            ModelPipeline::<AIMModel>::new(Arc::clone(&env.ctx)),
            controller::MODEL,
            &live,
        )
        .await;
    assert_eq!(r.writes(), 0, "model steady: {r:?}");

    // The MI325X GPU appears: the template becomes available and is discovered.
    gpu_node(&env.client, "gpu-2", "74a5").await;
    wait(
        &templates,
        &mi325.name_any(),
        "MI325X template Ready after the Node appeared",
        |t: &AIMServiceTemplate| {
            t.status
                .as_ref()
                .is_some_and(|s| s.status == Phase::Ready && s.profile.is_some())
        },
    )
    .await;
    wait(
        &models,
        "qwen",
        "model AllTemplatesReady",
        |m: &AIMModel| {
            m.status.as_ref().is_some_and(|s| {
                condition(&s.conditions, "ServiceTemplatesReady")
                    .is_some_and(|c| c.reason == "AllTemplatesReady")
            })
        },
    )
    .await;

    // The metadata drops the MI325X deployment: its template is pruned.
    apply_json(
        &models,
        model(
            &json!([{"gpuModel": "MI300X", "gpuCount": 1, "precision": "fp8", "metric": "latency"}]),
        ),
    )
    .await;
    wait_gone(&templates, &mi325.name_any()).await;
    assert!(
        templates
            .get_opt(&mi300.name_any())
            .await
            .unwrap()
            .is_some()
    );

    // Extraction is turned off (and the inline metadata removed): what status recorded is
    // kept, so the template it implies is not pruned.
    let before = models.get("qwen").await.unwrap();
    let recorded = before.status.as_ref().unwrap().image_metadata.clone();
    assert!(recorded.is_some());
    apply_json(
        &models,
        json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
            "metadata": {"name": "qwen", "namespace": NS},
            "spec": {
                "image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5",
                "discovery": {"extractMetadata": false}
            }
        }),
    )
    .await;
    let disabled = wait(&models, "qwen", "extraction disabled", |m: &AIMModel| {
        m.status.as_ref().is_some_and(|s| {
            s.observed_generation == m.metadata.generation
                && condition(&s.conditions, "ImageMetadataReady")
                    .is_some_and(|c| c.reason == "ExtractionDisabled")
        })
    })
    .await;
    assert_eq!(disabled.status.unwrap().image_metadata, recorded);
    let r = env
        .reconcile_once(
            ModelPipeline::<AIMModel>::new(Arc::clone(&env.ctx)),
            controller::MODEL,
            &models.get("qwen").await.unwrap(),
        )
        .await;
    assert_eq!(r.deleted, 0, "{r:?}");
    assert_eq!(r.writes(), 0, "{r:?}");
    assert!(
        templates
            .get_opt(&mi300.name_any())
            .await
            .unwrap()
            .is_some(),
        "not pruned"
    );
}
