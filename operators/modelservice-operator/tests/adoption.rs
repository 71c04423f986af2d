//! Drop-in migration from otterscale's model-operator: objects it created are adopted in
//! place; a same-named object that is not upstream's is refused with `NameTaken`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::{Harness, condition, minimal};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kinfer_api::inference_pool::InferencePool;
use kinfer_api::modelservice::ModelService;
use kube::api::{Api, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject};
use kube::{Resource, ResourceExt};
use modelservice_operator::reconciler::MANAGER;
use modelservice_operator::{OperatorConfig, OptionalCrds};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// otterscale's `Selector(name, component)`.
fn selector(name: &str, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "otterscale-system",
        "app.kubernetes.io/managed-by": "model-operator",
    })
}

/// otterscale's `Standard(name, component, version)`.
fn standard(name: &str, component: &str) -> Value {
    let mut l = selector(name, component);
    l["app.kubernetes.io/version"] = json!("v1.0.1");
    l
}

fn merge(a: &Value, b: &Value) -> Value {
    let mut out = a.clone();
    for (k, v) in b.as_object().unwrap() {
        out[k] = v.clone();
    }
    out
}

/// The objects otterscale's model-operator v1.0.1 creates for ModelService `ms` in `ns`
/// (its serving Deployments, the Endpoint Picker family, its cluster RBAC, and the legacy pool
/// `<epp>` of its earlier releases), as it labels and selects them.
fn upstream_objects(ms: &str, ns: &str) -> Vec<Value> {
    let epp = format!("{ms}-epp");
    let serving = json!({
        "llm-d.ai/inferenceServing": "true",
        "llm-d.ai/model": ms,
        "llm-d.ai/role": "decode",
    });
    let decode_selector = merge(&selector(ms, "model-decode"), &serving);
    let decode_pod = merge(&standard(ms, "model-decode"), &serving);
    let epp_selector = merge(&selector(&epp, "epp"), &json!({"inferencepool": epp}));
    let epp_pod = merge(&standard(&epp, "epp"), &json!({"inferencepool": epp}));
    let meta = |name: &str, labels: Value| json!({"name": name, "namespace": ns, "labels": labels});
    vec![
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": meta(&format!("{ms}-decode"), standard(ms, "model-decode")),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": decode_selector},
                "template": {
                    "metadata": {"labels": decode_pod},
                    "spec": {"containers": [{
                        "name": "vllm", "image": "ghcr.io/llm-d/llm-d-cuda:v0.5.1",
                        "command": ["vllm", "serve"], "args": ["/models", "--port", "8000"],
                    }]}
                }
            }
        }),
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": meta(&epp, standard(&epp, "epp")),
            "spec": {
                "replicas": 1,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": epp_selector},
                "template": {
                    "metadata": {"labels": epp_pod},
                    "spec": {"serviceAccountName": epp, "containers": [{
                        "name": "epp", "image": "ghcr.io/llm-d/llm-d-inference-scheduler:v0.6.0",
                        "args": [format!("--pool-name={ms}")],
                    }]}
                }
            }
        }),
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": meta(&epp, standard(&epp, "epp")),
            "spec": {
                "selector": selector(&epp, "epp"),
                "ports": [
                    {"name": "grpc-ext-proc", "port": 9002, "targetPort": 9002, "protocol": "TCP"},
                    {"name": "http-metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"},
                ]
            }
        }),
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": meta(&epp, standard(&epp, "epp")),
        }),
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": meta(&format!("{epp}-config"), standard(&epp, "epp")),
            "data": {"default-plugins.yaml": "# upstream's"},
        }),
        // The pool name of upstream's earlier releases, which its operator always deletes.
        json!({
            "apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
            "metadata": meta(&epp, standard(&epp, "epp")),
            "spec": {
                "targetPorts": [{"number": 8000}],
                "selector": {"matchLabels": selector(ms, "model-decode")},
                "endpointPickerRef": {"group": "", "kind": "Service", "name": epp, "port": {"number": 9002}},
            }
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": format!("{ns}-{epp}"), "labels": standard(&epp, "epp")},
            "rules": [{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{ns}-{epp}"), "labels": standard(&epp, "epp")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("{ns}-{epp}")},
            "subjects": [{"kind": "ServiceAccount", "name": epp, "namespace": ns}],
        }),
    ]
}

async fn create<K>(h: &Harness, v: &Value) -> K
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + Serialize + DeserializeOwned,
{
    let resource = ApiResource::erase::<K>(&());
    let o: DynamicObject = serde_json::from_value(v.clone()).unwrap();
    let api: Api<DynamicObject> = match o.metadata.namespace.as_deref() {
        Some(ns) => Api::namespaced_with(h.client.clone(), ns, &resource),
        None => Api::all_with(h.client.clone(), &resource),
    };
    let created = api.create(&PostParams::default(), &o).await.unwrap();
    serde_json::from_value(serde_json::to_value(created).unwrap()).unwrap()
}

async fn create_any(h: &Harness, v: &Value) -> (String, String) {
    let uid = match v["kind"].as_str().unwrap() {
        "Deployment" => create::<Deployment>(h, v).await.uid(),
        "Service" => create::<Service>(h, v).await.uid(),
        "ServiceAccount" => create::<ServiceAccount>(h, v).await.uid(),
        "ConfigMap" => create::<ConfigMap>(h, v).await.uid(),
        "ClusterRole" => create::<ClusterRole>(h, v).await.uid(),
        "InferencePool" => create::<InferencePool>(h, v).await.uid(),
        "ClusterRoleBinding" => create::<ClusterRoleBinding>(h, v).await.uid(),
        other => panic!("{other}"),
    };
    (
        format!(
            "{}/{}",
            v["kind"].as_str().unwrap(),
            v["metadata"]["name"].as_str().unwrap()
        ),
        uid.unwrap(),
    )
}

fn kinfer_marked(o: &impl Resource) -> bool {
    o.meta()
        .labels
        .as_ref()
        .and_then(|l| l.get(kinfer_state::labels::MANAGED_BY))
        .is_some_and(|v| v == MANAGER)
}

fn controlled_by(o: &impl Resource, ms: &ModelService) -> bool {
    o.meta()
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && Some(&r.uid) == ms.meta().uid.as_ref())
}

#[tokio::test]
async fn upstream_objects_are_adopted_and_foreign_ones_refused() {
    let config = OperatorConfig::default();
    let mut h = Harness::without_operator(&config, OptionalCrds::all()).await;
    // What otterscale's operator left behind (objects restored without owner references, as
    // after a backup/restore), and a foreign object that happens to hold a child's name.
    let mut uids = Vec::new();
    for o in upstream_objects("adopt", "default") {
        uids.push(create_any(&h, &o).await);
    }
    create::<Deployment>(
        &h,
        &json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "taken-decode", "namespace": "default", "labels": {"app": "mine"}},
            "spec": {
                "selector": {"matchLabels": {"app": "mine"}},
                "template": {"metadata": {"labels": {"app": "mine"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
            }
        }),
    )
    .await;
    h.create(&minimal("adopt", "default")).await;
    h.create(&minimal("taken", "default")).await;
    h.run(config).await;

    let ms = h.wait_ready("default", "adopt").await;
    assert!(
        ms.status
            .as_ref()
            .unwrap()
            .conditions
            .iter()
            .all(|c| c.reason != "NameTaken"),
        "{:?}",
        ms.status
    );
    // Adopted in place: same UIDs, our owner reference and marker, our fields.
    let decode: Deployment = h.get("default", "adopt-decode").await.unwrap();
    let epp: Deployment = h.get("default", "adopt-epp").await.unwrap();
    let service: Service = h.get("default", "adopt-epp").await.unwrap();
    let sa: ServiceAccount = h.get("default", "adopt-epp").await.unwrap();
    let cm: ConfigMap = h.get("default", "adopt-epp-config").await.unwrap();
    let live_uids = [
        ("Deployment/adopt-decode", decode.uid()),
        ("Deployment/adopt-epp", epp.uid()),
        ("Service/adopt-epp", service.uid()),
        ("ServiceAccount/adopt-epp", sa.uid()),
        ("ConfigMap/adopt-epp-config", cm.uid()),
    ];
    for (id, uid) in live_uids {
        let before = uids.iter().find(|(k, _)| k == id).unwrap();
        assert_eq!(Some(&before.1), uid.as_ref(), "{id} was replaced");
    }
    for (id, o) in [
        ("decode", decode.meta()),
        ("epp", epp.meta()),
        ("service", service.meta()),
        ("sa", sa.meta()),
        ("cm", cm.meta()),
    ] {
        let fake = Deployment {
            metadata: o.clone(),
            ..Deployment::default()
        };
        assert!(controlled_by(&fake, &ms), "{id}: {o:?}");
        assert!(kinfer_marked(&fake), "{id}: {o:?}");
    }
    let pod = decode
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap();
    let vllm = pod.containers.iter().find(|c| c.name == "vllm").unwrap();
    assert!(vllm.readiness_probe.is_some() && vllm.startup_probe.is_some());
    assert!(
        pod.init_containers
            .iter()
            .flatten()
            .any(|c| c.name == "model-unpack")
    );
    assert!(
        epp.spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0]
            .args
            .as_ref()
            .unwrap()
            .contains(&"--pool-namespace=default".to_owned())
    );
    assert!(
        cm.data.unwrap()["default-plugins.yaml"].contains("queue-scorer"),
        "our plugins config"
    );
    // Upstream's metrics ClusterRoleBinding binds its per-ModelService ClusterRole, and a
    // binding's roleRef is immutable: it is replaced by one of the shipped ClusterRole, and
    // upstream's ClusterRole goes.
    let crb: ClusterRoleBinding = common::wait(
        Api::all(h.client.clone()),
        "default-adopt-epp",
        "the binding of the shipped ClusterRole",
        |b: Option<&ClusterRoleBinding>| {
            b.is_some_and(|b| b.role_ref.name == kinfer_builders::epp::METRICS_AUTH_CLUSTER_ROLE)
        },
    )
    .await
    .unwrap();
    assert!(kinfer_marked(&crb), "{:?}", crb.metadata);
    let upstream_uid = |id: &str| uids.iter().find(|(k, _)| k == id).unwrap().1.clone();
    assert_ne!(
        Some(upstream_uid("ClusterRoleBinding/default-adopt-epp")),
        crb.uid(),
        "a new binding"
    );
    assert!(
        Api::<ClusterRole>::all(h.client.clone())
            .get_opt("default-adopt-epp")
            .await
            .unwrap()
            .is_none(),
        "upstream's per-ModelService ClusterRole is deleted"
    );
    // Upstream's legacy pool `<epp>` is deleted; the pool `<ms>` serves.
    let pools: Api<InferencePool> = Api::namespaced(h.client.clone(), "default");
    common::wait(
        pools.clone(),
        "adopt-epp",
        "the legacy pool deleted",
        |o: Option<&InferencePool>| o.is_none(),
    )
    .await;
    assert!(pools.get_opt("adopt").await.unwrap().is_some());
    // No duplicates: the namespace holds exactly one decode and one EPP Deployment for it.
    let deployments: BTreeSet<String> = Api::<Deployment>::namespaced(h.client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .filter(|n| n.starts_with("adopt"))
        .collect();
    assert_eq!(
        deployments,
        BTreeSet::from(["adopt-decode".to_owned(), "adopt-epp".to_owned()])
    );

    // The foreign object is refused and left alone.
    let taken = h
        .wait_ms("default", "taken", "NameTaken", |ms| {
            condition(ms, "Ready").is_some_and(|c| c.reason == "NameTaken")
        })
        .await;
    let c = condition(&taken, "Ready").unwrap();
    assert_eq!(c.status, "False");
    assert!(c.message.contains("taken-decode"), "{}", c.message);
    let foreign: Deployment = h.get("default", "taken-decode").await.unwrap();
    assert!(foreign.metadata.owner_references.is_none());
    assert!(!kinfer_marked(&foreign));
    assert!(h.get::<Deployment>("default", "taken-epp").await.is_none());
}
