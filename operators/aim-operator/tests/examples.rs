//! The catalog examples of `docs/aim.md` (`examples/aim/catalog/*.yaml`): each is applied to
//! the test cluster and the state the docs promise is checked. The registry-backed ones
//! (`model-from-registry.yaml`, `model-source.yaml`) are parsed and admitted only: the test
//! cluster has no route to Docker Hub; `tests/registry.rs` covers the same paths against a
//! real registry.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::path::PathBuf;

use k8s_openapi::api::core::v1::Namespace;
use kinfer_api::aim::{
    AIMClusterModel, AIMClusterModelSource, AIMClusterRuntimeConfig, AIMModel, AIMRuntimeConfig,
    AIMServiceTemplate,
};
use kinfer_api::phase::Phase;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};
use support::*;

const DEMO: &str = "aim-demo";

fn documents(file: &str) -> Vec<serde_json::Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/aim/catalog")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.split("\n---\n")
        .map(|doc| serde_saphyr::from_str(doc).unwrap_or_else(|e| panic!("{file}: {e}")))
        .collect()
}

async fn apply_file(env: &Env, file: &str) {
    for doc in documents(file) {
        let c = env.client.clone();
        match doc["kind"].as_str().unwrap() {
            "Namespace" => {
                assert_eq!(doc["metadata"]["name"], DEMO, "{file}");
                apply_json(&Api::<Namespace>::all(c), doc).await;
            }
            "AIMClusterRuntimeConfig" => {
                apply_json(&Api::<AIMClusterRuntimeConfig>::all(c), doc).await;
            }
            "AIMRuntimeConfig" => {
                apply_json(&Api::<AIMRuntimeConfig>::namespaced(c, DEMO), doc).await;
            }
            "AIMModel" => {
                apply_json(&Api::<AIMModel>::namespaced(c, DEMO), doc).await;
            }
            "AIMServiceTemplate" => {
                apply_json(&Api::<AIMServiceTemplate>::namespaced(c, DEMO), doc).await;
            }
            other => panic!("{file}: no applier for {other}"),
        }
    }
}

#[tokio::test]
async fn catalog_examples_reach_the_documented_state() {
    // The registry-backed examples are valid objects.
    let _: AIMClusterModel =
        serde_json::from_value(documents("model-from-registry.yaml").remove(0)).unwrap();
    let source: AIMClusterModelSource =
        serde_json::from_value(documents("model-source.yaml").remove(0)).unwrap();
    assert_eq!(source.spec.max_models, 50);

    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "gpu-1", "74a1").await; // MI300X only
    Api::<Namespace>::all(env.client.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(DEMO.into()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await
        .unwrap();
    for file in [
        "runtime-config.yaml",
        "model-from-metadata.yaml",
        "custom-model.yaml",
        "service-template.yaml",
    ] {
        apply_file(&env, file).await;
    }

    // runtime-config.yaml: both configs valid.
    let configs: Api<AIMRuntimeConfig> = Api::namespaced(env.client.clone(), DEMO);
    wait(&configs, "gpu-team", "config valid", |c| {
        c.status
            .as_ref()
            .is_some_and(|s| condition(&s.conditions, "Ready").is_some_and(|r| r.status == "True"))
    })
    .await;

    // model-from-metadata.yaml: two templates, MI300X Ready, MI325X NotAvailable; the model is
    // Ready (SomeTemplatesReady); `team-name` propagated by the runtime config.
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), DEMO);
    let m = wait(&models, "qwen3-32b", "SomeTemplatesReady", |m| {
        m.status.as_ref().is_some_and(|s| {
            s.status == Phase::Ready
                && condition(&s.conditions, "ServiceTemplatesReady")
                    .is_some_and(|c| c.reason == "SomeTemplatesReady")
        })
    })
    .await;
    assert_eq!(
        m.status
            .unwrap()
            .resolved_runtime_config
            .unwrap()
            .name
            .as_deref(),
        Some("gpu-team")
    );
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), DEMO);
    let generated = templates
        .list(&ListParams::default().labels("aim.eai.amd.com/model=qwen3-32b"))
        .await
        .unwrap()
        .items;
    assert_eq!(generated.len(), 2);
    for t in &generated {
        assert_eq!(t.labels()["team-name"], "inference");
        let expected = if t.name_any().contains("mi300x") {
            Phase::Ready
        } else {
            Phase::NotAvailable
        };
        assert_eq!(
            t.status.as_ref().unwrap().status,
            expected,
            "{}",
            t.name_any()
        );
    }

    // service-template.yaml: discovered, with a profile.
    let t = wait(
        &templates,
        "qwen3-32b-mi300x-throughput",
        "hand-written template Ready",
        |t| t.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
    )
    .await;
    let s = t.status.unwrap();
    assert!(s.profile.is_some());
    assert_eq!(s.hardware_summary.as_deref(), Some("1 x MI300X"));

    // custom-model.yaml: two custom templates with inline sources, no discovery Job.
    let m = wait(&models, "smollm2", "custom model Ready", |m| {
        m.status.as_ref().is_some_and(|s| s.status == Phase::Ready)
    })
    .await;
    assert_eq!(
        m.status.unwrap().source_type,
        Some(kinfer_api::aim::model::AIMModelSourceType::Custom)
    );
    let custom = templates
        .list(&ListParams::default().labels("aim.eai.amd.com/model=smollm2"))
        .await
        .unwrap()
        .items;
    assert_eq!(custom.len(), 2);
    for t in &custom {
        assert!(
            t.name_any().starts_with("smollm2-custom-"),
            "{}",
            t.name_any()
        );
        let alias = t.labels()["aim.eai.amd.com/template.alias"].clone();
        let gpu = t
            .spec
            .common
            .parameters
            .hardware
            .as_ref()
            .unwrap()
            .gpu
            .as_ref()
            .unwrap();
        assert_eq!(
            gpu.model.as_deref(),
            Some("MI300X"),
            "inherited from spec.custom"
        );
        assert_eq!(gpu.requests, Some(if alias == "wide" { 2 } else { 1 }));
        assert_eq!(
            t.spec.common.model_sources[0].model_id,
            "HuggingFaceTB/SmolLM2-135M"
        );
        let t = wait(&templates, &t.name_any(), "custom template Ready", |t| {
            t.status.as_ref().is_some_and(|s| s.status == Phase::Ready)
        })
        .await;
        let s = t.status.unwrap();
        let discovered = condition(&s.conditions, "Discovered").unwrap();
        assert_eq!(
            (discovered.status.as_str(), discovered.reason.as_str()),
            ("True", "InlineModelSources")
        );
        assert!(s.discovery_job.is_none(), "no discovery for inline sources");
    }
}
