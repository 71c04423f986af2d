//! The upstream sample and every derived sample: Ready, and every created object valid.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, assert_valid_names, has, key, samples};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::Api;
use serde_json::Value;

#[tokio::test]
async fn upstream_and_derived_samples_reach_ready() {
    let Some(all) = samples() else { return };
    let h = Harness::start().await;
    for (_, s) in &all {
        h.create(s).await;
    }
    for (path, s) in &all {
        let (ns, name) = key(s);
        let ms = h.wait_ready(&ns, &name).await;
        for t in [
            "Ready",
            "SpecValid",
            "DecodeAvailable",
            "EndpointPickerAvailable",
        ] {
            assert!(
                has(&ms, t, "True"),
                "{}: {t}: {:?}",
                path.display(),
                ms.status
            );
        }
        assert_eq!(
            ms.status.as_ref().unwrap().observed_generation,
            ms.metadata.generation
        );
        // One condition per component: the API's types, not also the engine's `<C>Ready`.
        let types: Vec<&str> = ms
            .status
            .as_ref()
            .unwrap()
            .conditions
            .iter()
            .map(|c| c.type_.as_str())
            .collect();
        for dup in modelservice_operator::reconciler::status::SUPERSEDED {
            assert!(
                !types.contains(&dup),
                "{}: {dup} in {types:?}",
                path.display()
            );
        }
    }
}

#[tokio::test]
async fn every_created_object_validates() {
    let Some(all) = samples() else { return };
    let Some(shared) = kinfer_crdcheck::shared_dir() else {
        return;
    };
    let h = Harness::start().await;
    for (_, s) in &all {
        h.create(s).await;
    }
    let mut namespaces: Vec<String> = all.iter().map(|(_, s)| key(s).0).collect();
    namespaces.sort();
    namespaces.dedup();
    for (_, s) in &all {
        let (ns, name) = key(s);
        h.wait_ready(&ns, &name).await;
    }
    let upstream = |file: &str, version: &str| {
        let crd = kinfer_crdcheck::load_yaml_documents(&shared.join("upstream-crds").join(file))
            .remove(0);
        kinfer_crdcheck::SchemaValidator::from_crd(&crd, Some(version)).unwrap()
    };
    let validators = [
        (
            "InferencePool",
            upstream(
                "gateway-api-inference-extension/inference.networking.k8s.io_inferencepools.yaml",
                "v1",
            ),
        ),
        (
            "HTTPRoute",
            upstream(
                "gateway-api/gateway.networking.k8s.io_httproutes.yaml",
                "v1",
            ),
        ),
        (
            "DestinationRule",
            upstream("istio/networking.istio.io_destinationrules.yaml", "v1beta1"),
        ),
        (
            "PodMonitor",
            upstream(
                "prometheus-operator/monitoring.coreos.com_podmonitors.yaml",
                "v1",
            ),
        ),
        (
            "ServiceMonitor",
            upstream(
                "prometheus-operator/monitoring.coreos.com_servicemonitors.yaml",
                "v1",
            ),
        ),
    ];
    let mut checked = 0;
    for ns in &namespaces {
        let objects = h.owned(ns).await;
        assert_valid_names(&objects);
        for (kind, mut o) in objects {
            let obj = o.as_object_mut().unwrap();
            obj.remove("status");
            if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("managedFields");
            }
            let name = o["metadata"]["name"].clone();
            if let Some((_, v)) = validators.iter().find(|(k, _)| *k == kind.kind) {
                let errors = v.errors(&o);
                assert!(errors.is_empty(), "{} {name}: {errors:#?}", kind.kind);
            } else {
                typed(&kind.kind, &o);
            }
            checked += 1;
        }
    }
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    for r in roles.list(&kube::api::ListParams::default()).await.unwrap() {
        typed("ClusterRole", &serde_json::to_value(r).unwrap());
    }
    assert!(checked > 50, "{checked}");
}

/// Round-trips `o` through its k8s-openapi type with unknown fields rejected.
fn typed(kind: &str, o: &Value) {
    use k8s_openapi::api::{core::v1 as core, rbac::v1 as rbac};
    fn check<K: serde::de::DeserializeOwned + serde::Serialize>(kind: &str, o: &Value) {
        let typed: K = serde_json::from_value(o.clone())
            .unwrap_or_else(|e| panic!("{kind} {}: {e}", o["metadata"]["name"]));
        let back = serde_json::to_value(&typed).unwrap();
        assert_eq!(
            strip(&back),
            strip(o),
            "{kind} {} loses fields",
            o["metadata"]["name"]
        );
    }
    match kind {
        "Deployment" => check::<Deployment>(kind, o),
        "Service" => check::<core::Service>(kind, o),
        "ConfigMap" => check::<core::ConfigMap>(kind, o),
        "ServiceAccount" => check::<core::ServiceAccount>(kind, o),
        "Secret" => check::<core::Secret>(kind, o),
        "Role" => check::<rbac::Role>(kind, o),
        "RoleBinding" => check::<rbac::RoleBinding>(kind, o),
        "ClusterRole" => check::<ClusterRole>(kind, o),
        "ClusterRoleBinding" => check::<ClusterRoleBinding>(kind, o),
        other => panic!("no schema for {other}"),
    }
}

fn strip(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("metadata");
        o.remove("status");
        o.remove("apiVersion");
        o.remove("kind");
    }
    v
}
