//! Changes over time: EPP config rollout, steady state, drift repair.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{Harness, minimal};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kinfer_api::modelservice::ModelService;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::core::DeserializeGuard;
use modelservice_operator::OperatorConfig;
use serde_json::json;

#[tokio::test]
async fn epp_config_change_rolls_the_epp_and_nothing_else() {
    let mut h = Harness::start().await;
    h.create(&minimal("roll", "default")).await;
    h.wait_ready("default", "roll").await;
    let before: BTreeMap<String, String> = h
        .owned("default")
        .await
        .iter()
        .map(|(k, o)| {
            (
                format!("{}/{}", k.kind, o["metadata"]["name"].as_str().unwrap()),
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    let epp_before: Deployment = h.get("default", "roll-epp").await.unwrap();
    let hash = |d: &Deployment| {
        d.spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref()
            .unwrap()
            .annotations
            .as_ref()
            .unwrap()["checksum/config"]
            .clone()
    };
    // An operator upgrade that changes the plugins configuration.
    h.run(OperatorConfig {
        epp_plugins: Some(kinfer_builders::epp::DEFAULT_PLUGINS.replace("weight: 3", "weight: 5")),
        ..OperatorConfig::default()
    })
    .await;
    let old = hash(&epp_before);
    let epp = common::wait(
        Api::<Deployment>::namespaced(h.client.clone(), "default"),
        "roll-epp",
        "EPP rolled",
        move |d: Option<&Deployment>| {
            d.is_some_and(|d| {
                d.spec
                    .as_ref()
                    .and_then(|s| s.template.metadata.as_ref())
                    .and_then(|m| m.annotations.as_ref())
                    .is_some_and(|a| a["checksum/config"] != old)
            })
        },
    )
    .await
    .unwrap();
    assert_ne!(hash(&epp), hash(&epp_before));
    h.wait_ready("default", "roll").await;
    let cm: ConfigMap = h.get("default", "roll-epp-config").await.unwrap();
    assert!(cm.data.unwrap()["default-plugins.yaml"].contains("weight: 5"));
    let after = h.owned("default").await;
    for (k, o) in &after {
        let id = format!("{}/{}", k.kind, o["metadata"]["name"].as_str().unwrap());
        if id == "ConfigMap/roll-epp-config" || id == "Deployment/roll-epp" {
            continue;
        }
        assert_eq!(
            Some(o["metadata"]["resourceVersion"].as_str().unwrap()),
            before.get(&id).map(String::as_str),
            "{id} changed"
        );
    }
}

#[tokio::test]
async fn second_reconcile_writes_nothing() {
    let mut h = Harness::start().await;
    let mut ms = minimal("steady", "default");
    ms["spec"]["prefill"] = json!({"replicas": 1});
    ms["spec"]["routingProxy"] = json!({});
    h.create(&ms).await;
    h.wait_ready("default", "steady").await;
    // Stop the running controller (in-flight reconciles and their events finish), then
    // reconcile the current object twice by hand: engine alone, then the full reconcile.
    h.halt().await;
    let ms: ModelService = Api::namespaced(h.client.clone(), "default")
        .get("steady")
        .await
        .unwrap();
    h.cluster.counters().reset();
    let report = h.engine.reconcile(&ms).await;
    assert_eq!(report.writes(), 0, "{report:#?}");
    let action = kinfer_state::engine::reconcile(
        std::sync::Arc::new(DeserializeGuard(Ok(ms))),
        h.engine.clone(),
    )
    .await
    .unwrap();
    // The only requeue is the periodic recheck of the unwatched token Secret.
    assert_eq!(
        action,
        kube::runtime::controller::Action::requeue(
            modelservice_operator::config::DEFAULT_RECHECK_INTERVAL
        )
    );
    assert_eq!(
        h.cluster.counters().mutations(None),
        0,
        "{:?}",
        h.cluster.counters().snapshot()
    );
}

#[tokio::test]
async fn drift_on_owned_monitors_and_destination_rules_is_repaired() {
    let h = Harness::start().await;
    h.create(&minimal("drift", "default")).await;
    h.wait_ready("default", "drift").await;
    let pm: Api<kinfer_api::monitoring::PodMonitor> = Api::namespaced(h.client.clone(), "default");
    pm.delete("drift-decode", &DeleteParams::default())
        .await
        .unwrap();
    common::wait(
        pm,
        "drift-decode",
        "PodMonitor recreated",
        |o: Option<&_>| o.is_some(),
    )
    .await;
    let dr: Api<kinfer_api::istio::DestinationRule> = Api::namespaced(h.client.clone(), "default");
    let patch = json!({"spec": {"host": "elsewhere"}});
    dr.patch("drift-epp", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    common::wait(
        dr,
        "drift-epp",
        "DestinationRule repaired",
        |o: Option<&kinfer_api::istio::DestinationRule>| {
            o.is_some_and(|d| d.spec.host == "drift-epp.default.svc.cluster.local")
        },
    )
    .await;
}
