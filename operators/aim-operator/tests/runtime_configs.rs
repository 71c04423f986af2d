//! Runtime configs: the namespace config merged over the cluster config (field by field, env by
//! name, deprecated fields migrated) as the controllers resolve it, a missing non-default
//! config failing its referrer with `ConfigValid=False/ReferenceNotFound` (and recovering when
//! it appears), the validity condition on the configs themselves, and a second reconcile of
//! each config writing nothing.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;

use aim_operator::model::ModelPipeline;
use aim_operator::runtime_config::{RuntimeConfigPipeline, resolve};
use aim_operator::scheme::controller;
use kinfer_api::aim::common::ResolutionScope;
use kinfer_api::aim::{
    AIMClusterRuntimeConfig, AIMModel, AIMRuntimeConfig, AIMServiceTemplate, EnvVar,
};
use kinfer_api::phase::Phase;
use kube::api::ListParams;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::*;

fn cluster_config(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMClusterRuntimeConfig",
        "metadata": {"name": name},
        "spec": {
            "env": [{"name": "A", "value": "cluster"}, {"name": "B", "value": "cluster"}],
            "routing": {"enabled": true, "pathTemplate": "/{.metadata.name}", "requestTimeout": "60s"},
            "storage": {"defaultStorageClassName": "slow", "pvcHeadroomPercent": 20},
            "labelPropagation": {"enabled": true, "match": ["team-*"]}
        }
    })
}

fn namespace_config(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMRuntimeConfig",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "env": [{"name": "B", "value": "namespace"}, {"name": "C", "value": "namespace"}],
            "routing": {"requestTimeout": "180s"},
            // Deprecated: migrated into storage.defaultStorageClassName.
            "defaultStorageClassName": "fast"
        }
    })
}

fn model(name: &str, runtime_config: &str) -> serde_json::Value {
    json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
        "metadata": {"name": name, "namespace": NS,
                     "labels": {"team-name": "infra", "unrelated": "x"}},
        "spec": {
            "image": "ghcr.io/silogen/aim-dummy:0.1.0",
            "runtimeConfigName": runtime_config,
            "imageMetadata": {"model": {"recommendedDeployments": [
                {"gpuModel": "MI300X", "gpuCount": 1, "precision": "fp8", "metric": "latency"}
            ]}}
        }
    })
}

fn ready_condition<'a>(
    conditions: &'a [k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> Option<(&'a str, &'a str)> {
    condition(conditions, type_).map(|c| (c.status.as_str(), c.reason.as_str()))
}

#[tokio::test]
async fn namespace_config_merges_over_cluster_config_field_by_field() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "gpu-1", "74a1").await;
    let cluster: Api<AIMClusterRuntimeConfig> = Api::all(env.client.clone());
    let namespaced: Api<AIMRuntimeConfig> = Api::namespaced(env.client.clone(), NS);
    apply_json(&cluster, cluster_config("team")).await;
    apply_json(&namespaced, namespace_config("team")).await;

    // What every controller resolves for `runtimeConfigName: team` in NS.
    let fetched = resolve::fetch(&env.client, Some(NS), Some("team")).await;
    let (health, resolved) = resolve::resolve(&fetched);
    assert!(health.errors.is_empty(), "{health:?}");
    let resolved = resolved.expect("resolved");
    assert_eq!(resolved.reference.scope, Some(ResolutionScope::Merged));
    let spec = resolved.spec;
    assert_eq!(
        spec.env,
        vec![
            EnvVar::new("A", "cluster"),
            EnvVar::new("B", "namespace"),
            EnvVar::new("C", "namespace"),
        ],
        "env merged by name, namespace wins"
    );
    let routing = spec.routing.as_ref().unwrap();
    assert_eq!(routing.enabled, Some(true), "cluster field kept");
    assert_eq!(routing.path_template.as_deref(), Some("/{.metadata.name}"));
    assert_eq!(
        routing.request_timeout.as_deref(),
        Some("180s"),
        "namespace field wins"
    );
    let storage = spec.storage.as_ref().unwrap();
    assert_eq!(
        storage.default_storage_class_name.as_deref(),
        Some("fast"),
        "deprecated namespace field migrated, then merged over the cluster's"
    );
    assert_eq!(spec.default_storage_class_name, None);
    let propagation = spec.label_propagation.as_ref().unwrap();
    assert!(propagation.enabled, "taken from the cluster config");

    // A cluster-scoped referrer sees the cluster config alone.
    let (_, only_cluster) =
        resolve::resolve(&resolve::fetch(&env.client, None, Some("team")).await);
    let only_cluster = only_cluster.unwrap();
    assert_eq!(only_cluster.reference.scope, Some(ResolutionScope::Cluster));
    assert_eq!(
        only_cluster
            .spec
            .storage
            .unwrap()
            .default_storage_class_name
            .as_deref(),
        Some("slow")
    );

    // A model using it: resolved as Merged, and the merged label propagation (from the cluster
    // config) copies `team-*` labels onto the generated template.
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);
    apply_json(&models, model("merged", "team")).await;
    let merged = wait(&models, "merged", "model Ready", |m: &AIMModel| {
        m.status.as_ref().is_some_and(|s| s.status == Phase::Ready)
    })
    .await;
    let rc = merged.status.unwrap().resolved_runtime_config.unwrap();
    assert_eq!(rc.scope, Some(ResolutionScope::Merged));
    assert_eq!(rc.name.as_deref(), Some("team"));
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    let list = templates
        .list(&ListParams::default().labels("aim.eai.amd.com/model=merged"))
        .await
        .unwrap()
        .items;
    assert_eq!(list.len(), 1);
    let labels = list[0].labels();
    assert_eq!(labels.get("team-name").map(String::as_str), Some("infra"));
    assert!(!labels.contains_key("unrelated"), "only matching labels");
    assert_eq!(
        list[0].spec.common.runtime_config_name.as_deref(),
        Some("team"),
        "the template resolves the same config"
    );

    // Each config carries its own validity condition, and a second reconcile writes nothing.
    let cfg = wait(&cluster, "team", "cluster config Ready", |c| {
        c.status.as_ref().is_some_and(|s| {
            ready_condition(&s.conditions, "Ready") == Some(("True", "AllComponentsReady"))
        })
    })
    .await;
    let st = cfg.status.as_ref().unwrap();
    assert_eq!(
        ready_condition(&st.conditions, "ConfigReady"),
        Some(("True", "ConfigurationValid"))
    );
    assert_eq!(st.observed_generation, cfg.metadata.generation);
    let r = env
        .reconcile_once(
            RuntimeConfigPipeline::<AIMClusterRuntimeConfig>::new(Arc::clone(&env.ctx)),
            controller::CLUSTER_RUNTIME_CONFIG,
            &cfg,
        )
        .await;
    assert_eq!(r.writes(), 0, "cluster config steady: {r:?}");
    let n = wait(&namespaced, "team", "namespace config Ready", |c| {
        c.status
            .as_ref()
            .is_some_and(|s| ready_condition(&s.conditions, "Ready").is_some_and(|r| r.0 == "True"))
    })
    .await;
    let r = env
        .reconcile_once(
            RuntimeConfigPipeline::<AIMRuntimeConfig>::new(Arc::clone(&env.ctx)),
            controller::RUNTIME_CONFIG,
            &n,
        )
        .await;
    assert_eq!(r.writes(), 0, "namespace config steady: {r:?}");
}

#[tokio::test]
async fn missing_config_fails_the_referrer_until_it_appears_and_invalid_configs_say_so() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "gpu-1", "74a1").await;
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);

    // No config named `default` anywhere: fine.
    apply_json(&models, model("plain", "")).await;
    let m = wait(
        &models,
        "plain",
        "Ready without any config",
        |m: &AIMModel| m.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
    )
    .await;
    let s = m.status.unwrap();
    assert_eq!(
        ready_condition(&s.conditions, "RuntimeConfigReady"),
        Some(("True", "DefaultConfigNotFound"))
    );
    assert!(s.resolved_runtime_config.is_none());

    // A named config that does not exist: MissingUpstream → Failed, ConfigValid=False.
    apply_json(&models, model("orphan", "gpu-team")).await;
    let m = wait(
        &models,
        "orphan",
        "Failed on the missing config",
        |m: &AIMModel| m.status.as_ref().is_some_and(|s| s.status == Phase::Failed),
    )
    .await;
    let s = m.status.as_ref().unwrap();
    assert_eq!(
        ready_condition(&s.conditions, "ConfigValid"),
        Some(("False", "ReferenceNotFound"))
    );
    let rc = condition(&s.conditions, "RuntimeConfigReady").unwrap();
    assert_eq!(
        (rc.status.as_str(), rc.reason.as_str()),
        ("False", "ConfigNotFound")
    );
    assert!(rc.message.contains("gpu-team"), "{}", rc.message);
    assert_eq!(
        ready_condition(&s.conditions, "Ready").map(|r| r.0),
        Some("False")
    );
    // Nothing was generated, and reconciling again neither writes nor polls: the config watch
    // brings it back.
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    assert!(
        templates
            .list(&ListParams::default().labels("aim.eai.amd.com/model=orphan"))
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let r = env
        .reconcile_once(
            ModelPipeline::<AIMModel>::new(Arc::clone(&env.ctx)),
            controller::MODEL,
            &m,
        )
        .await;
    assert_eq!(r.writes(), 0, "{r:?}");
    assert_eq!(r.action, Action::await_change());

    // The config appears (cluster scope): the model recovers on the watch event.
    let cluster: Api<AIMClusterRuntimeConfig> = Api::all(env.client.clone());
    apply_json(&cluster, cluster_config("gpu-team")).await;
    let m = wait(
        &models,
        "orphan",
        "Ready once the config exists",
        |m: &AIMModel| m.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
    )
    .await;
    let s = m.status.unwrap();
    assert_eq!(
        ready_condition(&s.conditions, "ConfigValid").map(|c| c.0),
        Some("True")
    );
    assert_eq!(
        s.resolved_runtime_config.unwrap().scope,
        Some(ResolutionScope::Cluster)
    );

    // An invalid config reports it on itself.
    let namespaced: Api<AIMRuntimeConfig> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &namespaced,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMRuntimeConfig",
               "metadata": {"name": "broken", "namespace": NS},
               "spec": {"routing": {"requestTimeout": "soon"}}}),
    )
    .await;
    let bad = wait(&namespaced, "broken", "invalid config flagged", |c| {
        c.status.as_ref().is_some_and(|s| {
            ready_condition(&s.conditions, "Ready").is_some_and(|r| r.0 == "False")
        })
    })
    .await;
    let s = bad.status.as_ref().unwrap();
    assert_eq!(
        ready_condition(&s.conditions, "ConfigValid"),
        Some(("False", "InvalidSpec"))
    );
    let cfg = condition(&s.conditions, "ConfigReady").unwrap();
    assert_eq!(cfg.reason, "InvalidRuntimeConfig");
    assert!(cfg.message.contains("requestTimeout"), "{}", cfg.message);
    let r = env
        .reconcile_once(
            RuntimeConfigPipeline::<AIMRuntimeConfig>::new(Arc::clone(&env.ctx)),
            controller::RUNTIME_CONFIG,
            &bad,
        )
        .await;
    assert_eq!(r.writes(), 0, "invalid config steady: {r:?}");
    assert_eq!(bad.name_any(), "broken");
}
