//! The upstream AIM samples (`../shared/reference/aim/samples/`) applied as they are: a
//! template cache, an inline custom model service, an autoscaled service.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use kinfer_api::aim::{AIMArtifact, AIMService, AIMServiceState, AIMTemplateCache};
use kinfer_api::phase::Phase;
use kinfer_builders::naming::aim as names;
use kube::api::DeleteParams;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::serving::*;
use support::*;

#[tokio::test]
async fn upstream_template_cache_sample_reaches_ready() {
    let Some(shared) = kinfer_crdcheck::shared_dir() else {
        return;
    };
    let env = start().await;
    happy_path_template(&env, "m").await;
    let mut sample = kinfer_crdcheck::load_yaml_documents(
        &shared.join("reference/aim/samples/aim-engine_10_aimtemplatecache.yaml"),
    )
    .remove(0);
    sample["metadata"]["namespace"] = json!(NS);
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    apply_json(&caches, sample).await;
    let cache = wait(
        &caches,
        "happy-path-namespace",
        "Ready",
        phase_is(Phase::Ready),
    )
    .await;
    let st = cache.status.as_ref().unwrap();
    assert_eq!(
        st.resolved_template_kind.as_deref(),
        Some("AIMServiceTemplate")
    );
    assert_eq!(
        cond_in(&st.conditions, "ArtifactsReady").1,
        "AllArtifactsReady"
    );
    let entry = &st.artifacts["org/happy"];
    assert_eq!(entry.status, "Ready");
    assert_eq!(
        entry.mount_point.as_deref(),
        Some("/workspace/cache/org/happy")
    );
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let art = artifacts.get(&entry.name).await.unwrap();
    assert!(
        art.owner_references().is_empty(),
        "a shared cache's artifact has no owner"
    );
    assert_eq!(
        art.spec.env[0].name, "HF_TOKEN",
        "the cache's env reaches the download"
    );
    assert_eq!(art.spec.model_id.as_deref(), Some("org/happy"));
    assert_eq!(
        art.labels()["aim.eai.amd.com/template-cache.name"],
        "happy-path-namespace",
        "upstream's creator label"
    );
    assert_eq!(art.labels()["template-created"], "true");
    valid_upstream(
        "aim.eai.amd.com_aimtemplatecaches.yaml",
        &serde_json::to_value(&cache).unwrap(),
    );
    steady(&env, NS).await;

    // Deleting a Ready cache keeps its Ready shared artifact for reuse.
    caches
        .delete("happy-path-namespace", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&caches, "happy-path-namespace").await;
    assert!(artifacts.get_opt(&entry.name).await.unwrap().is_some());
}

#[tokio::test]
async fn upstream_service_samples_run() {
    let Some(shared) = kinfer_crdcheck::shared_dir() else {
        return;
    };
    let env = start().await;
    env.cluster.simulator().set_log_hook(sample_hook());
    gpu_node(&env.client, "mi300x", "74a1").await;
    let sample = |file: &str| {
        let mut v =
            kinfer_crdcheck::load_yaml_documents(&shared.join("reference/aim/samples").join(file))
                .remove(0);
        v["metadata"]["namespace"] = json!(NS);
        v
    };
    let services: Api<AIMService> = Api::namespaced(env.client.clone(), NS);

    // Inline custom model: a model and template are created, the weights (size unknown) are
    // measured, cached and mounted.
    apply_json(
        &services,
        sample("aim-engine_06_aimservice_inline_custom_model.yaml"),
    )
    .await;
    let custom = wait(
        &services,
        "test-inline-custom-model",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let cache_ref = custom.status.as_ref().unwrap().cache.clone().unwrap();
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let cache = caches
        .get(
            cache_ref
                .template_cache_ref
                .unwrap()
                .name
                .as_deref()
                .unwrap(),
        )
        .await
        .unwrap();
    let entry = &cache.status.as_ref().unwrap().artifacts["inline/test-model"];
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let art = artifacts.get(&entry.name).await.unwrap();
    let st = art.status.as_ref().unwrap();
    assert_eq!(st.discovered_size_bytes, Some(500_000_000));
    assert_eq!(
        st.allocated_size.as_ref().map(|q| q.0.as_str()),
        Some("1Gi")
    );

    // Autoscaling: the HPA scales the predictor on the sample's pod metric.
    let models: Api<kinfer_api::aim::AIMModel> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &models,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
               "metadata": {"name": "test-autoscaling-model", "namespace": NS},
               "spec": {"image": "ghcr.io/silogen/aim-dummy:0.1.0", "imageMetadata": {"model": {
                   "recommendedDeployments": [{"gpuModel": "MI300X", "gpuCount": 1,
                                               "precision": "fp8", "metric": "latency"}]}}}}),
    )
    .await;
    apply_json(
        &services,
        sample("aim-engine_07_aimservice_autoscaling.yaml"),
    )
    .await;
    let scaled = wait(
        &services,
        "test-autoscaling-service",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    assert_eq!(
        scaled
            .status
            .as_ref()
            .unwrap()
            .runtime
            .as_ref()
            .unwrap()
            .replicas
            .as_deref(),
        Some("1/1 (1-3)")
    );
    let isvc = names::inference_service_name("test-autoscaling-service", NS).unwrap();
    let hpas: Api<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler> =
        Api::namespaced(env.client.clone(), NS);
    let hpa = hpas.get(&format!("{isvc}-predictor")).await.unwrap();
    let metric = &hpa.spec.unwrap().metrics.unwrap()[0];
    let pods = metric.pods.as_ref().unwrap();
    assert_eq!(pods.metric.name, "vllm:num_requests_running");
    assert_eq!(
        pods.target.average_value.as_ref().map(|q| q.0.as_str()),
        Some("1")
    );
    steady(&env, NS).await;
}
