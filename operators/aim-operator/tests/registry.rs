//! Models against a real registry: labels → templates; a bad reference, a missing image and a
//! bad label each Failed with a precise reason and no hot loop; cluster models whose pull
//! secret lives in the operator namespace (templates, discovery Job and ClusterServingRuntime
//! there), Ready at the next recheck once the secret exists (Secrets are not watched); the
//! AIMClusterModelSource
//! sync with filters (repository wildcards through the registry catalog) and `maxModels`.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use aim_operator::model::ModelPipeline;
use aim_operator::model_source::ModelSourcePipeline;
use aim_operator::scheme::controller;
use aim_operator::template::TemplatePipeline;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kinfer_api::aim::model_source::AIMModelSourceState;
use kinfer_api::aim::{
    AIMClusterModel, AIMClusterModelSource, AIMClusterServiceTemplate, AIMModel, AIMServiceTemplate,
};
use kinfer_api::kserve::ClusterServingRuntime;
use kinfer_api::phase::Phase;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::images::labels;
use support::registry::Registry;
use support::*;

/// The labels of an AIM image with two recommended deployments (Python-dict style, as the
/// real images ship them).
fn aim_labels() -> BTreeMap<String, String> {
    labels(&[
        ("com.amd.aim.title", "aim-qwen-test"),
        ("com.amd.aim.model.canonicalName", "Qwen/Qwen3-32B"),
        ("com.amd.aim.model.source", "hf://Qwen/Qwen3-32B"),
        ("com.amd.aim.model.tags", "text-generation, chat"),
        ("com.amd.aim.hfToken.required", "False"),
        (
            "com.amd.aim.model.recommendedDeployments",
            "{'gpuModel': 'MI300X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'latency'}, \
             {'gpuModel': 'MI325X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'throughput', 'profileId': 'mi325x-fp8-throughput'}",
        ),
        ("org.opencontainers.image.version", "0.8.5"),
    ])
}

async fn start_for(registry: &Registry) -> Env {
    let host = registry.host.clone();
    start_with(move |s| s.inspector.insecure_registries = vec![host]).await
}

fn model_json(name: &str, image: &str) -> serde_json::Value {
    json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
           "metadata": {"name": name, "namespace": NS},
           "spec": {"image": image}})
}

/// A `kubernetes.io/dockerconfigjson` Secret `ns/name` with `registry`'s credentials.
fn pull_secret(name: &str, ns: &str, registry: &Registry) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        data: Some(BTreeMap::from([(
            ".dockerconfigjson".to_owned(),
            k8s_openapi::ByteString(registry.docker_config_json().into_bytes()),
        )])),
        ..Secret::default()
    }
}

fn condition_of<'a>(
    conditions: &'a [k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> (&'a str, &'a str) {
    let c = condition(conditions, type_).unwrap_or_else(|| panic!("no {type_} condition"));
    (c.status.as_str(), c.reason.as_str())
}

#[tokio::test]
async fn model_from_a_registry_image_generates_templates_from_its_labels() {
    let registry = Registry::start().await;
    let digest = registry.push("aim/qwen", "0.8.5", &aim_labels()).await;
    let env = start_for(&registry).await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "gpu-1", "74a1").await;
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);
    let image = format!("{}/aim/qwen:0.8.5", registry.host);
    apply_json(&models, model_json("qwen", &image)).await;

    let m = wait(
        &models,
        "qwen",
        "Ready (SomeTemplatesReady)",
        |m: &AIMModel| {
            m.status.as_ref().is_some_and(|s| {
                s.status == Phase::Ready
                    && condition(&s.conditions, "ServiceTemplatesReady")
                        .is_some_and(|c| c.reason == "SomeTemplatesReady")
            })
        },
    )
    .await;
    let s = m.status.as_ref().unwrap();
    let md = s.image_metadata.as_ref().expect("status.imageMetadata");
    let model_md = md.model.as_ref().unwrap();
    assert_eq!(model_md.canonical_name.as_deref(), Some("Qwen/Qwen3-32B"));
    assert_eq!(model_md.recommended_deployments.len(), 2);
    assert_eq!(model_md.tags, ["text-generation", "chat"]);
    let metadata = condition(&s.conditions, "ImageMetadataReady").unwrap();
    assert_eq!(metadata.reason, "ImageMetadataFound");
    assert!(metadata.message.contains(&digest), "{}", metadata.message);

    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    let list = templates
        .list(&ListParams::default().labels("aim.eai.amd.com/model=qwen"))
        .await
        .unwrap()
        .items;
    assert_eq!(list.len(), 2, "one template per recommended deployment");
    let mut phases: Vec<(bool, Phase)> = list
        .iter()
        .map(|t| {
            (
                t.name_any().contains("-1x-mi300x-lat-fp8-"),
                t.status.as_ref().unwrap().status,
            )
        })
        .collect();
    phases.sort_by_key(|p| !p.0);
    assert_eq!(phases, [(true, Phase::Ready), (false, Phase::NotAvailable)]);
    assert!(list.iter().all(|t| t.owner_references()[0].name == "qwen"));

    // Steady: nothing written, the tag re-checked after the inspector's TTL.
    let r = env
        .reconcile_once(
            ModelPipeline::<AIMModel>::new(Arc::clone(&env.ctx)),
            controller::MODEL,
            &m,
        )
        .await;
    assert_eq!(r.writes(), 0, "{r:?}");
    assert_eq!(
        r.action,
        Action::requeue(env.ctx.settings.inspector.tag_ttl)
    );
}

#[tokio::test]
async fn bad_reference_missing_image_and_bad_label_fail_precisely_without_a_hot_loop() {
    let registry = Registry::start().await;
    registry
        .push(
            "aim/bad-label",
            "1.0",
            &labels(&[("com.amd.aim.model.recommendedDeployments", "[{oops")]),
        )
        .await;
    let env = start_for(&registry).await;
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);
    let cases = [
        (
            "bad-reference",
            format!("{}/Aim/UPPER::case", registry.host),
            "InvalidImageReference",
        ),
        (
            "missing-image",
            format!("{}/aim/nothing:1.0", registry.host),
            "ImageNotFound",
        ),
        (
            "bad-label",
            format!("{}/aim/bad-label:1.0", registry.host),
            "InvalidImageLabel",
        ),
    ];
    for (name, image, _) in &cases {
        apply_json(&models, model_json(name, image)).await;
    }
    let mut versions = Vec::new();
    for (name, _, reason) in &cases {
        let m = wait(
            &models,
            name,
            "Failed with a precise reason",
            |m: &AIMModel| {
                m.status.as_ref().is_some_and(|s| {
                    s.status == Phase::Failed
                        && condition(&s.conditions, "ImageMetadataReady")
                            .is_some_and(|c| c.reason == *reason)
                })
            },
        )
        .await;
        let s = m.status.as_ref().unwrap();
        assert_eq!(condition_of(&s.conditions, "Ready"), ("False", *reason));
        assert!(s.image_metadata.is_none());
        let message = &condition(&s.conditions, "ImageMetadataReady")
            .unwrap()
            .message;
        match *name {
            "bad-label" => assert!(message.contains("recommendedDeployments"), "{message}"),
            "bad-reference" => assert!(message.contains("lower case"), "{message}"),
            _ => assert!(message.contains("aim/nothing:1.0"), "{message}"),
        }
        // One reconcile by hand: no writes, and a slow re-check rather than a retry storm.
        let r = env
            .reconcile_once(
                ModelPipeline::<AIMModel>::new(Arc::clone(&env.ctx)),
                controller::MODEL,
                &m,
            )
            .await;
        assert_eq!(r.writes(), 0, "{name}: {r:?}");
        assert_eq!(r.action, Action::requeue(Duration::from_mins(5)), "{name}");
        versions.push((name, m.metadata.resource_version.clone()));
    }
    let status_writes = env
        .cluster
        .counters()
        .count("patch", Some("aimmodels/status"));
    assert!(
        status_writes <= 6,
        "at most two status writes per failing model, saw {status_writes}"
    );

    // A barrier: a later model is fully reconciled, so the controller has had every chance to
    // loop on the failing ones. None of them was written again.
    apply_json(
        &models,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
               "metadata": {"name": "sentinel", "namespace": NS},
               "spec": {"image": "any", "imageMetadata": {}}}),
    )
    .await;
    wait(&models, "sentinel", "Ready", |m: &AIMModel| {
        m.status.as_ref().is_some_and(|s| s.status == Phase::Ready)
    })
    .await;
    for (name, rv) in versions {
        let now = models.get(name).await.unwrap();
        assert_eq!(
            now.metadata.resource_version, rv,
            "{name} was written again"
        );
    }
    assert_eq!(
        env.cluster
            .counters()
            .count("patch", Some("aimmodels/status")),
        status_writes + 1,
        "only the sentinel's status was written"
    );
}

#[tokio::test]
async fn cluster_model_uses_pull_secrets_and_runs_discovery_in_the_operator_namespace() {
    let registry = Registry::start_with_auth().await;
    registry.push("aim/private", "1.0", &aim_labels()).await;
    let host = registry.host.clone();
    // Secrets are not watched: a model that failed on one is checked again on this interval.
    let recheck = Duration::from_secs(2);
    let env = start_with(move |s| {
        s.inspector.insecure_registries = vec![host];
        s.external_recheck = recheck;
    })
    .await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "gpu-1", "74a1").await;
    let secret = |ns: &str| pull_secret("regcred", ns, &registry);
    // The secret exists only in the workload namespace: a cluster model does not look there.
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(&PostParams::default(), &secret(NS))
        .await
        .unwrap();
    let jobs_in_system_ns = Api::<Job>::namespaced(env.client.clone(), SYSTEM_NS);
    let first_job = tokio::spawn(async move {
        let mut jobs = std::pin::pin!(
            watcher::watcher(jobs_in_system_ns, watcher::Config::default()).applied_objects()
        );
        jobs.next().await.and_then(Result::ok)
    });
    let models: Api<AIMClusterModel> = Api::all(env.client.clone());
    apply_json(
        &models,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMClusterModel",
               "metadata": {"name": "private"},
               "spec": {"image": format!("{}/aim/private:1.0", registry.host),
                        "imagePullSecrets": [{"name": "regcred"}]}}),
    )
    .await;
    let m = wait(&models, "private", "Failed: secret not found", |m| {
        m.status.as_ref().is_some_and(|s| s.status == Phase::Failed)
    })
    .await;
    let s = m.status.as_ref().unwrap();
    let md = condition(&s.conditions, "ImageMetadataReady").unwrap();
    assert_eq!(md.reason, "SecretNotFound");
    assert!(md.message.contains("aim-system/regcred"), "{}", md.message);
    assert_eq!(
        condition_of(&s.conditions, "ConfigValid"),
        ("False", "ReferenceNotFound")
    );

    // The secret appears in the operator namespace: the next recheck finds it (nothing watches
    // Secrets, so nothing else would retry this user-fixable failure).
    Api::<Secret>::namespaced(env.client.clone(), SYSTEM_NS)
        .create(&PostParams::default(), &secret(SYSTEM_NS))
        .await
        .unwrap();
    let m = wait(
        &models,
        "private",
        "Ready once the operator-namespace secret exists",
        |m| m.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
    )
    .await;
    for verb in ["list", "watch"] {
        assert_eq!(
            env.operator_requests(verb, "secrets"),
            0,
            "the operator may only get Secrets by name, never {verb} them"
        );
    }
    assert_eq!(
        m.status
            .as_ref()
            .unwrap()
            .image_metadata
            .as_ref()
            .unwrap()
            .model
            .as_ref()
            .unwrap()
            .canonical_name
            .as_deref(),
        Some("Qwen/Qwen3-32B")
    );

    // Cluster templates, their discovery Jobs in the operator namespace, ClusterServingRuntimes.
    let templates: Api<AIMClusterServiceTemplate> = Api::all(env.client.clone());
    let list = templates
        .list(&ListParams::default().labels("aim.eai.amd.com/model=private"))
        .await
        .unwrap()
        .items;
    assert_eq!(list.len(), 2);
    let ready = list
        .iter()
        .find(|t| t.name_any().contains("mi300x"))
        .unwrap();
    let ready = wait(
        &templates,
        &ready.name_any(),
        "cluster template Ready",
        |t| t.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
    )
    .await;
    let job = ready
        .status
        .as_ref()
        .unwrap()
        .discovery_job
        .as_ref()
        .expect("discoveryJob");
    assert_eq!(job.namespace.as_deref(), Some(SYSTEM_NS));
    // The Job is dropped once discovery succeeded; the watch started earlier saw it.
    let job = tokio::time::timeout(TIMEOUT, first_job)
        .await
        .expect("a discovery job was seen")
        .unwrap()
        .expect("job");
    assert_eq!(job.namespace().as_deref(), Some(SYSTEM_NS));
    let pod = job.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.image_pull_secrets.unwrap()[0].name, "regcred");
    Api::<ClusterServingRuntime>::all(env.client.clone())
        .get(&ready.name_any())
        .await
        .expect("ClusterServingRuntime named after the template");

    // Second reconcile of the cluster model and both cluster templates writes nothing.
    let live = models.get("private").await.unwrap();
    let r = env
        .reconcile_once(
            ModelPipeline::<AIMClusterModel>::new(Arc::clone(&env.ctx)),
            controller::CLUSTER_MODEL,
            &live,
        )
        .await;
    assert_eq!(r.writes(), 0, "cluster model steady: {r:?}");
    for t in &list {
        let live = templates.get(&t.name_any()).await.unwrap();
        let r = env
            .reconcile_once(
                TemplatePipeline::<AIMClusterServiceTemplate>::new(Arc::clone(&env.ctx)),
                controller::CLUSTER_TEMPLATE,
                &live,
            )
            .await;
        assert_eq!(
            r.writes(),
            0,
            "cluster template {} steady: {r:?}",
            t.name_any()
        );
    }
}

/// A service naming a private image creates an AIMModel that carries the service's pull
/// secrets, ServiceAccount and runtime config, and the `origin: auto-generated` label, as AIM
/// Engine builds it: the model's inspection reads the image with the service's credentials.
#[tokio::test]
async fn a_service_naming_a_private_image_creates_a_model_with_its_credentials() {
    let registry = Registry::start_with_auth().await;
    registry.push("aim/private", "2.0", &aim_labels()).await;
    let env = start_for(&registry).await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "gpu-1", "74a1").await;
    Api::<Secret>::namespaced(env.client.clone(), NS)
        .create(
            &PostParams::default(),
            &pull_secret("team-regcred", NS, &registry),
        )
        .await
        .unwrap();
    apply_json(
        &Api::<kinfer_api::aim::AIMRuntimeConfig>::namespaced(env.client.clone(), NS),
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMRuntimeConfig",
               "metadata": {"name": "team", "namespace": NS}, "spec": {}}),
    )
    .await;
    let image = format!("{}/aim/private:2.0", registry.host);
    support::serving::service(
        &env,
        NS,
        "private-by-image",
        json!({"model": {"image": image},
               "imagePullSecrets": [{"name": "team-regcred"}],
               "serviceAccountName": "team-runner",
               "runtimeConfigName": "team"}),
    )
    .await;
    let name = kinfer_builders::naming::aim::image_model_name(&image).unwrap();
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);
    let m = wait(
        &models,
        name.as_str(),
        "its image read with the service's credentials",
        |m: &AIMModel| {
            m.status.as_ref().is_some_and(|s| {
                condition(&s.conditions, "ImageMetadataReady").is_some_and(|c| c.status == "True")
            })
        },
    )
    .await;
    assert_eq!(m.spec.image, image);
    assert_eq!(
        m.spec
            .image_pull_secrets
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["team-regcred"]
    );
    assert_eq!(m.spec.service_account_name.as_deref(), Some("team-runner"));
    assert_eq!(m.spec.runtime_config_name.as_deref(), Some("team"));
    assert_eq!(m.labels()["aim.eai.amd.com/origin"], "auto-generated");
    assert!(m.owner_references().is_empty(), "outlives the service");
}

#[tokio::test]
async fn model_source_syncs_with_filters_up_to_max_models() {
    let registry = Registry::start().await;
    let none = BTreeMap::new();
    for (repo, tag) in [
        ("aim/llama", "0.8.4"),
        ("aim/llama", "0.8.5"),
        ("aim/llama", "0.9.0"),
        ("aim/llama", "latest"),
        ("aim/qwen", "v1.0.0"),
        ("aim/base", "0.9.0"),
        ("other/thing", "1.0"),
        ("other/thing", "2.0"),
    ] {
        registry.push(repo, tag, &none).await;
    }
    let env = start_for(&registry).await;
    let sources: Api<AIMClusterModelSource> = Api::all(env.client.clone());
    let source = |max: i64| {
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMClusterModelSource",
        "metadata": {"name": "catalog"},
        "spec": {
            "registry": registry.host,
            "syncInterval": "1h",
            "maxModels": max,
            "filters": [
                // Globs over the registry catalog, an exclude and a semver constraint.
                {"image": "aim/*", "exclude": ["aim/base"], "versions": [">=0.8.5"]},
                // An explicit tag, with the registry spelled out.
                {"image": format!("{}/other/thing:1.0", registry.host)}
            ]
        }})
    };
    // Matching: llama 0.8.5 and 0.9.0, qwen v1.0.0, other/thing 1.0 (4 images).
    apply_json(&sources, source(2)).await;
    let s = wait(
        &sources,
        "catalog",
        "synced at the limit",
        |s: &AIMClusterModelSource| {
            s.status.as_ref().is_some_and(|st| {
                st.last_sync_time.is_some() && st.observed_generation == s.metadata.generation
            })
        },
    )
    .await;
    let st = s.status.as_ref().unwrap();
    assert_eq!(st.status, Some(AIMModelSourceState::Running));
    assert_eq!(st.available_models, Some(4));
    assert_eq!(st.discovered_models, Some(2));
    assert_eq!(st.models_limit_reached, Some(true));
    assert_eq!(
        condition_of(&st.conditions, "MaxModelsLimitReached"),
        ("True", "LimitReached")
    );
    let models: Api<AIMClusterModel> = Api::all(env.client.clone());
    let listed = || async {
        models
            .list(&ListParams::default().labels("aim.eai.amd.com/model-source=catalog"))
            .await
            .unwrap()
            .items
    };
    let first = listed().await;
    assert_eq!(first.len(), 2);
    for m in &first {
        assert!(
            m.owner_references().is_empty(),
            "catalog models outlive the source"
        );
        let a = m.annotations();
        assert_eq!(a["aim.eai.amd.com/source-registry"], registry.host);
        assert_eq!(m.labels()["aim.eai.amd.com/origin"], "auto-generated");
        assert_eq!(
            m.spec.image,
            format!(
                "{}/{}:{}",
                registry.host,
                a["aim.eai.amd.com/source-repository"],
                a["aim.eai.amd.com/source-tag"]
            )
        );
    }

    // Not due yet: a second reconcile reads nothing and writes nothing; requeue at the interval.
    let r = env
        .reconcile_once(
            ModelSourcePipeline::new(Arc::clone(&env.ctx)),
            controller::MODEL_SOURCE,
            &s,
        )
        .await;
    assert_eq!(r.writes(), 0, "{r:?}");
    assert_eq!(r.action, Action::requeue(Duration::from_hours(1)));

    // Room for everything: the existing models are kept, the rest created, the limit cleared.
    apply_json(&sources, source(10)).await;
    let s = wait(
        &sources,
        "catalog",
        "synced under the limit",
        |s: &AIMClusterModelSource| {
            s.status.as_ref().is_some_and(|st| {
                st.observed_generation == s.metadata.generation
                    && st.models_limit_reached == Some(false)
            })
        },
    )
    .await;
    let st = s.status.as_ref().unwrap();
    assert_eq!(st.discovered_models, Some(4));
    assert_eq!(
        condition_of(&st.conditions, "MaxModelsLimitReached"),
        ("False", "WithinLimit")
    );
    let mut images: Vec<String> = listed()
        .await
        .into_iter()
        .map(|m| m.spec.image.clone())
        .collect();
    images.sort();
    let h = &registry.host;
    assert_eq!(
        images,
        [
            format!("{h}/aim/llama:0.8.5"),
            format!("{h}/aim/llama:0.9.0"),
            format!("{h}/aim/qwen:v1.0.0"),
            format!("{h}/other/thing:1.0"),
        ]
    );
    for m in &first {
        assert!(images.contains(&m.spec.image), "kept {}", m.name_any());
    }
    // The catalog models inspect their (label-less) images and become Ready.
    for m in listed().await {
        wait(&models, &m.name_any(), "catalog model Ready", |m| {
            m.status.as_ref().is_some_and(|s| s.status == Phase::Ready)
        })
        .await;
    }

    // After the interval it lists again (a new tag appears) but writes only what changed.
    registry.push("aim/llama", "0.9.1", &none).await;
    env.clock
        .advance(Duration::from_hours(1) + Duration::from_secs(1));
    let r = env
        .reconcile_once(
            ModelSourcePipeline::new(Arc::clone(&env.ctx)),
            controller::MODEL_SOURCE,
            &s,
        )
        .await;
    assert_eq!(r.applied, 1, "only the new model: {r:?}");
    let s = sources.get("catalog").await.unwrap();
    assert_eq!(s.status.unwrap().available_models, Some(5));
}
