//! Every upstream `aim.eai.amd.com` sample of `../shared/reference/aim/samples/` applied to
//! the test cluster with the operator running, one table row per sample with the state it
//! reaches and why (skipped with a message without `../shared`, a failure under CI).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;

use kinfer_api::aim::{AIMArtifact, AIMService, AIMTemplateCache};
use kinfer_builders::naming::aim as names;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::serving::*;
use support::*;

/// What a sample is expected to reach: `status.status`, or (runtime configs, which have no
/// status enum) a `True` Ready condition.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Status(&'static str),
    ReadyCondition,
}

/// One upstream sample, the state it reaches, and why that is the state upstream documents.
struct Row {
    file: &'static str,
    kind: &'static str,
    name: &'static str,
    expect: Expect,
    why: &'static str,
}

/// Every `aim.eai.amd.com` sample of `../shared/reference/aim/samples/`. Context the samples
/// presume (a GPU node, the models and templates they name, a registry for the catalog) is
/// applied first by [`every_upstream_sample_reaches_its_documented_state`].
const ROWS: &[Row] = &[
    Row {
        file: "aim-engine_01_aimclustermodelsource.yaml",
        kind: "AIMClusterModelSource",
        name: "ghcr-models",
        expect: Expect::Status("Running"),
        why: "the catalog syncs: `silogen/aim-*` tags >=0.8.5 become AIMClusterModels \
              (registry pointed at the test registry; the pull secret exists in the operator \
              namespace, as the sample requires)",
    },
    Row {
        file: "aim-engine_02_aimruntimeconfig_routing.yaml",
        kind: "AIMRuntimeConfig",
        name: "test-gpu-cached",
        expect: Expect::ReadyCondition,
        why: "a valid config; sample 03 routes through it",
    },
    Row {
        file: "aim-engine_03_aimservice_from_image_shared_cache.yaml",
        kind: "AIMService",
        name: "test-gpu-cached",
        expect: Expect::Status("Running"),
        why: "the AIMModel with that image is found (pre-applied with spec.imageMetadata: no \
              registry here), the MI300X latency fp8 template is auto-selected, a shared \
              cache warms, the route follows runtime config 02",
    },
    Row {
        file: "aim-engine_04_aimmodel_spec_imagemetadata.yaml",
        kind: "AIMModel",
        name: "test-spec-provided-metadata",
        expect: Expect::Status("Ready"),
        why: "spec.imageMetadata is used as given (the image does not exist: no registry \
              fetch) and its one template is discovered",
    },
    Row {
        file: "aim-engine_05_aimmodel_custom_templates.yaml",
        kind: "AIMModel",
        name: "custom-model-test",
        expect: Expect::Status("Ready"),
        why: "six custom templates; `different-gpu` (MI250X) is NotAvailable, the rest Ready: \
              SomeTemplatesReady",
    },
    Row {
        file: "aim-engine_06_aimservice_inline_custom_model.yaml",
        kind: "AIMService",
        name: "test-inline-custom-model",
        expect: Expect::Status("Running"),
        why: "the inline custom model creates its AIMModel and unoptimized template, \
              allowUnoptimized lets selection take it",
    },
    Row {
        file: "aim-engine_07_aimservice_autoscaling.yaml",
        kind: "AIMService",
        name: "test-autoscaling-service",
        expect: Expect::Status("Running"),
        why: "min 1 / max 3 with the sample's pod metric: an HPA, `1/1 (1-3)`",
    },
    Row {
        file: "aim-engine_08_aimclusterruntimeconfig_labelprop_routing.yaml",
        kind: "AIMClusterRuntimeConfig",
        name: "default",
        expect: Expect::ReadyCondition,
        why: "a valid cluster default: services without a runtime config (06, 07) are routed \
              under /integration/label-propagation/",
    },
    Row {
        file: "aim-engine_09_aimservicetemplate_minvram_inline_sources.yaml",
        kind: "AIMServiceTemplate",
        name: "test-min-vram-template",
        expect: Expect::Status("Ready"),
        why: "64Gi minimum VRAM is met by the MI300X node (192G); inline sources skip \
              discovery",
    },
    Row {
        file: "aim-engine_10_aimtemplatecache.yaml",
        kind: "AIMTemplateCache",
        name: "happy-path-namespace",
        expect: Expect::Status("Ready"),
        why: "its template's inline source is downloaded into a shared artifact",
    },
];

/// The object `name` of `kind`, as JSON, once `pred` holds for it.
async fn wait_json(
    env: &Env,
    kind: &str,
    name: &str,
    pred: impl Fn(&serde_json::Value) -> bool + Send + Sync + 'static,
) -> serde_json::Value {
    use kinfer_api::aim::{
        AIMClusterModelSource, AIMClusterRuntimeConfig, AIMModel, AIMRuntimeConfig,
        AIMServiceTemplate,
    };
    let c = env.client.clone();
    let pred = Arc::new(pred);
    macro_rules! on {
        ($api:expr) => {{
            let p = Arc::clone(&pred);
            serde_json::to_value(
                wait(&$api, name, kind, move |o| {
                    p(&serde_json::to_value(o).unwrap())
                })
                .await,
            )
            .unwrap()
        }};
    }
    match kind {
        "AIMClusterModelSource" => on!(Api::<AIMClusterModelSource>::all(c)),
        "AIMClusterRuntimeConfig" => on!(Api::<AIMClusterRuntimeConfig>::all(c)),
        "AIMRuntimeConfig" => on!(Api::<AIMRuntimeConfig>::namespaced(c, NS)),
        "AIMService" => on!(Api::<AIMService>::namespaced(c, NS)),
        "AIMModel" => on!(Api::<AIMModel>::namespaced(c, NS)),
        "AIMServiceTemplate" => on!(Api::<AIMServiceTemplate>::namespaced(c, NS)),
        "AIMTemplateCache" => on!(Api::<AIMTemplateCache>::namespaced(c, NS)),
        other => panic!("no API for {other}"),
    }
}

fn reaches(expect: Expect) -> impl Fn(&serde_json::Value) -> bool + Send + Sync + 'static {
    move |o: &serde_json::Value| {
        let current = o["status"]["observedGeneration"] == o["metadata"]["generation"];
        current
            && match expect {
                Expect::Status(s) => o["status"]["status"] == s,
                Expect::ReadyCondition => o["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True"),
            }
    }
}

/// The context the samples presume, applied before them.
async fn sample_context(env: &Env, registry: &support::registry::Registry) {
    gpu_node(&env.client, "mi300x", "74a1").await;
    // 01: images for the catalog (two match `silogen/aim-*` >=0.8.5) and its pull secret.
    let none = std::collections::BTreeMap::new();
    for (repo, tag) in [
        ("silogen/aim-llama", "0.8.4"),
        ("silogen/aim-llama", "0.8.5"),
        ("silogen/aim-qwen", "0.9.0"),
        ("silogen/base", "1.0.0"),
    ] {
        registry.push(repo, tag, &none).await;
    }
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(env.client.clone(), SYSTEM_NS);
    apply_json(
        &secrets,
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "ghcr-regcred", "namespace": SYSTEM_NS},
               "type": "kubernetes.io/dockerconfigjson",
               "stringData": {".dockerconfigjson": registry.docker_config_json()}}),
    )
    .await;
    let models: Api<kinfer_api::aim::AIMModel> = Api::namespaced(env.client.clone(), NS);
    let deployment = |precision: &str, metric: &str, gpu: &str| json!({"gpuModel": gpu, "gpuCount": 1, "precision": precision, "metric": metric});
    // 03: the model of the sample's image (air-gapped: its metadata given in the spec).
    apply_json(
        &models,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
               "metadata": {"name": "qwen3-32b", "namespace": NS},
               "spec": {"image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5",
                        "imageMetadata": {"model": {"recommendedDeployments": [
                            deployment("fp8", "latency", "MI300X"),
                            deployment("fp16", "throughput", "MI300X"),
                            deployment("fp8", "latency", "MI325X")]}}}}),
    )
    .await;
    // 07 and 09: the models they name.
    for (name, deployments) in [
        (
            "test-autoscaling-model",
            json!([deployment("fp8", "latency", "MI300X")]),
        ),
        ("test-min-vram-model", json!([])),
    ] {
        apply_json(
            &models,
            json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
                   "metadata": {"name": name, "namespace": NS},
                   "spec": {"image": "ghcr.io/silogen/aim-dummy:0.1.10",
                            "imageMetadata": {"model": {"recommendedDeployments": deployments}}}}),
        )
        .await;
    }
    // 10: the template it caches.
    happy_path_template(env, "test-min-vram-model").await;
}

/// Applies `doc` (any sample kind) as the test.
async fn apply_sample(env: &Env, doc: &serde_json::Value) {
    let ar = kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
        "aim.eai.amd.com",
        "v1alpha1",
        doc["kind"].as_str().unwrap(),
    ));
    let api: Api<kube::core::DynamicObject> = match doc["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(env.client.clone(), ns, &ar),
        None => Api::all_with(env.client.clone(), &ar),
    };
    api.patch(
        doc["metadata"]["name"].as_str().unwrap(),
        &kube::api::PatchParams::apply("test").force(),
        &kube::api::Patch::Apply(doc),
    )
    .await
    .unwrap_or_else(|e| panic!("apply {}: {e}", doc["kind"]));
}

/// Every upstream `aim.eai.amd.com` sample, applied unchanged (but for its namespace, and the
/// catalog's registry), reaches the state upstream documents.
#[tokio::test]
async fn every_upstream_sample_reaches_its_documented_state() {
    let Some(shared) = kinfer_crdcheck::shared_dir() else {
        return;
    };
    let dir = shared.join("reference/aim/samples");
    // Every aim.eai.amd.com sample has a row (a new upstream sample fails here).
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| {
            kinfer_crdcheck::load_yaml_documents(&dir.join(f))
                .iter()
                .any(|d| {
                    d["apiVersion"]
                        .as_str()
                        .is_some_and(|v| v.starts_with("aim.eai.amd.com/"))
                })
        })
        .collect();
    files.sort();
    let rows: Vec<&str> = ROWS.iter().map(|r| r.file).collect();
    assert_eq!(files, rows, "one row per aim.eai.amd.com sample");

    let registry = support::registry::Registry::start().await;
    let host = registry.host.clone();
    let env = start_with(move |s| s.inspector.insecure_registries = vec![host]).await;
    env.cluster.simulator().set_log_hook(sample_hook());
    sample_context(&env, &registry).await;
    for row in ROWS {
        let mut docs = kinfer_crdcheck::load_yaml_documents(&dir.join(row.file));
        assert_eq!(docs.len(), 1, "{}: one document per sample", row.file);
        let mut doc = docs.remove(0);
        assert_eq!(
            (doc["kind"].as_str(), doc["metadata"]["name"].as_str()),
            (Some(row.kind), Some(row.name))
        );
        if !row.kind.starts_with("AIMCluster") {
            doc["metadata"]["namespace"] = json!(NS);
        }
        if row.kind == "AIMClusterModelSource" {
            doc["spec"]["registry"] = json!(registry.host);
        }
        apply_sample(&env, &doc).await;
    }
    let mut reached = std::collections::BTreeMap::new();
    for row in ROWS {
        let obj = wait_json(&env, row.kind, row.name, reaches(row.expect)).await;
        eprintln!("{}: {:?} ({})", row.file, row.expect, row.why);
        reached.insert(row.file, obj);
    }
    let cond = |o: &serde_json::Value, t: &str| -> (String, String) {
        let c = o["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == t)
            .unwrap_or_else(|| panic!("{t} missing: {o:#}"));
        (
            c["status"].as_str().unwrap().into(),
            c["reason"].as_str().unwrap().into(),
        )
    };

    // 01: the two matching tags, within the limit.
    let src = &reached["aim-engine_01_aimclustermodelsource.yaml"]["status"];
    assert_eq!(
        (
            src["availableModels"].clone(),
            src["discoveredModels"].clone()
        ),
        (json!(2), json!(2))
    );
    assert_eq!(src["modelsLimitReached"], json!(false));
    // 03: the model found by image, the preferred template, the route of config 02, a shared
    // cache.
    let svc = &reached["aim-engine_03_aimservice_from_image_shared_cache.yaml"]["status"];
    assert_eq!(svc["resolvedModel"]["name"], "qwen3-32b");
    let template = svc["resolvedTemplate"]["name"].as_str().unwrap();
    assert!(template.contains("-1x-mi300x-lat-fp8-"), "{template}");
    assert_eq!(
        svc["routing"]["path"],
        "/integration/gpu-cached/test-gpu-cached"
    );
    let routes: Api<gateway_api::httproutes::HttpRoute> = Api::namespaced(env.client.clone(), NS);
    let route = routes
        .get(names::route_name("test-gpu-cached", NS).unwrap().as_str())
        .await
        .unwrap();
    let route = serde_json::to_value(route).unwrap();
    assert_eq!(route["spec"]["rules"][0]["timeouts"]["request"], "180s");
    assert_eq!(
        route["spec"]["parentRefs"][0]["name"],
        "kserve-ingress-gateway"
    );
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let cache = caches
        .get(svc["cache"]["templateCacheRef"]["name"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(cache.spec.mode, kinfer_api::aim::CachingMode::Shared);
    assert!(
        cache.owner_references().is_empty(),
        "a shared cache has no owner"
    );
    // 04: the spec's metadata, as given.
    let m = &reached["aim-engine_04_aimmodel_spec_imagemetadata.yaml"]["status"];
    assert_eq!(
        m["imageMetadata"]["model"]["canonicalName"],
        "spec-provided-model"
    );
    // 05: Ready with one template not available.
    let m = &reached["aim-engine_05_aimmodel_custom_templates.yaml"];
    assert!(
        m["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["reason"] == "SomeTemplatesReady"),
        "{m:#}"
    );
    // 06 and 07: routed by the cluster default (08).
    for (file, name) in [
        (
            "aim-engine_06_aimservice_inline_custom_model.yaml",
            "test-inline-custom-model",
        ),
        (
            "aim-engine_07_aimservice_autoscaling.yaml",
            "test-autoscaling-service",
        ),
    ] {
        assert_eq!(
            reached[file]["status"]["routing"]["path"],
            format!("/integration/label-propagation/{name}")
        );
    }
    assert_eq!(
        reached["aim-engine_07_aimservice_autoscaling.yaml"]["status"]["runtime"]["replicas"],
        "1/1 (1-3)"
    );
    // 08 and 02: valid configs.
    for file in [
        "aim-engine_02_aimruntimeconfig_routing.yaml",
        "aim-engine_08_aimclusterruntimeconfig_labelprop_routing.yaml",
    ] {
        assert_eq!(cond(&reached[file], "ConfigValid").0, "True", "{file}");
    }
    // 09: inline sources, the node affinity of the GPUs with enough VRAM.
    let t = &reached["aim-engine_09_aimservicetemplate_minvram_inline_sources.yaml"];
    assert_eq!(
        cond(t, "Discovered"),
        ("True".into(), "InlineModelSources".into())
    );
    let affinity = t["status"]["resolvedNodeAffinity"].to_string();
    assert!(affinity.contains("74a1"), "{affinity}");
    // 10: its artifact.
    let c = &reached["aim-engine_10_aimtemplatecache.yaml"];
    assert_eq!(cond(c, "ArtifactsReady").0, "True");

    steady(&env, NS).await;

    // Sample 03's service (runtime config 02) and sample 07's (the cluster default) share the
    // `hf://org/model` artifact through two caches: its spec was written at most three times
    // (created, created again by the other cache before the first creation reached it, taken
    // over by the cache sorting first), never passed back and forth between them.
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let shared: Vec<AIMArtifact> = artifacts
        .list(&kube::api::ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|a| a.spec.source_uri == "hf://org/model")
        .collect();
    assert_eq!(shared.len(), 1, "{shared:#?}");
    let generation = shared[0].metadata.generation.unwrap_or_default();
    assert!(
        generation <= 3,
        "written {generation} times: {:?}",
        shared[0].metadata
    );
}
