//! Shared helpers: a started cluster, the Widget CRD, typed Widget, waiting on conditions.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinfer_testkit::{Source, TestCluster, TestEnv, test_client_on};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, CustomResource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The bound of [`wait_until`] and [`wait_deleted`]: [`TIMEOUT`] in process; a minute on a real
/// cluster, whose garbage collector learns of a kind created after it started (the Widget)
/// only at its next discovery resync, every 30 seconds.
pub fn settle_bound() -> Duration {
    if external() {
        Duration::from_mins(1)
    } else {
        TIMEOUT
    }
}

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "test.kinfer.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    pub size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "observedGeneration"
    )]
    pub observed_generation: Option<i64>,
}

pub fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": "widgets.test.kinfer.dev" },
        "spec": {
            "group": "test.kinfer.dev",
            "scope": "Namespaced",
            "names": { "plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"] },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["size"],
                            "properties": {
                                "size": { "type": "integer", "minimum": 1, "maximum": 10 },
                                "color": { "type": "string", "enum": ["red", "blue"], "default": "red" },
                                "name": { "type": "string", "pattern": "^[a-z]+$", "maxLength": 8 },
                                "memory": { "x-kubernetes-int-or-string": true, "format": "quantity",
                                            "anyOf": [{ "type": "integer" }, { "type": "string" }] },
                                "when": { "type": "string", "format": "date-time" },
                                "tags": { "type": "array", "maxItems": 3, "items": { "type": "string", "minLength": 1 } },
                                "frozen": { "type": "string",
                                            "x-kubernetes-validations": [{ "rule": "self == oldSelf", "message": "frozen is immutable" }] },
                                "free": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                                "ports": { "type": "array", "x-kubernetes-list-type": "map",
                                           "x-kubernetes-list-map-keys": ["name"],
                                           "items": { "type": "object", "required": ["name"],
                                                      "properties": { "name": { "type": "string" }, "port": { "type": "integer" } } } },
                                "labels": { "type": "object", "additionalProperties": { "type": "string" } }
                            }
                        },
                        "status": {
                            "type": "object",
                            "properties": {
                                "phase": { "type": "string" },
                                "observedGeneration": { "type": "integer" },
                                "resolvedNodeAffinity": { "type": "object", "required": ["nodeSelectorTerms"],
                                    "properties": { "nodeSelectorTerms": { "type": "array", "items": {
                                        "type": "object", "required": ["key"],
                                        "properties": { "key": { "type": "string" },
                                                        "values": { "type": "array", "items": { "type": "string" } } } } } } }
                            }
                        }
                    }
                }}
            }]
        }
    })
}

pub fn widget_ar() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.kinfer.dev", "v1", "Widget"),
        "widgets",
    )
}

/// Where this binary's tests take their cluster from: the environment's choice for the
/// conformance binary, the real control plane for the control-plane conformance binary.
pub fn source() -> Source {
    crate::source()
}

/// Whether the suite runs against a shared, real cluster (the control plane or
/// `KINFER_TEST_KUBECONFIG`) rather than an in-process one of its own.
pub fn external() -> bool {
    source().is_shared()
}

/// On a real cluster, say why this test does not apply there and return true: it exercises a
/// capability only the in-process cluster has (fault injection, request counters, the
/// simulator, a cluster started with options of its own). The conformance binary runs it on
/// the in-process cluster.
pub fn skip_external(why: &str) -> bool {
    if external() {
        eprintln!("not applicable to a real cluster (runs on the in-process one): {why}");
    }
    external()
}

/// The ConfigMap the controller manager publishes in every namespace of a real cluster (the
/// in-process cluster has none: a known difference). Tests that list ConfigMaps leave it out.
pub const ROOT_CA: &str = "kube-root-ca.crt";

/// A name unique to this run for cluster-scoped objects (a shared cluster keeps them).
pub fn unique(name: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    if !external() {
        return name.to_owned();
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{name}-{t:x}{}", N.fetch_add(1, Ordering::Relaxed))
}

/// The cluster of one test: the in-process one (installed with the Widget CRD), or the
/// external one, where the test gets a namespace of its own, deleted when this is dropped.
#[derive(Debug)]
pub struct Env {
    env: TestEnv,
    namespace: Option<String>,
}

impl std::ops::Deref for Env {
    type Target = TestCluster;

    /// The in-process cluster; only tests started with [`local_cluster`] use it.
    fn deref(&self) -> &TestCluster {
        self.env
            .cluster()
            .expect("this test needs the in-process cluster: start it with local_cluster")
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let (Some(ns), Some(path)) = (self.namespace.take(), self.env.kubeconfig_path()) else {
            return;
        };
        let path = path.to_owned();
        // The test's runtime is going away: clean up from a runtime of our own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(client) = kinfer_testkit::client_from_kubeconfig(&path).await {
                    let _ = Api::<Namespace>::all(client)
                        .delete(&ns, &DeleteParams::default())
                        .await;
                }
            });
        })
        .join();
    }
}

/// A cluster with the Widget CRD installed and a client whose default namespace is the test's.
pub async fn cluster() -> (Env, Client) {
    let env = test_client_on(source()).await.expect("cluster");
    if let Some(c) = env.cluster() {
        c.install_crd_value(widget_crd()).expect("crd");
        let client = env.client();
        return (
            Env {
                env,
                namespace: None,
            },
            client,
        );
    }
    let admin = env.client();
    ensure_widget_crd(&admin).await;
    let ns = unique("kinfer-test");
    let nss: Api<Namespace> = Api::all(admin);
    let body: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
    nss.create(&PostParams::default(), &body)
        .await
        .expect("namespace");
    let client = env.client_in(&ns).await.expect("client");
    (
        Env {
            env,
            namespace: Some(ns),
        },
        client,
    )
}

/// The in-process cluster, for tests that need its counters, faults or simulator; `None` (the
/// test is skipped with a message) against an external cluster.
pub async fn local_cluster(why: &str) -> Option<(Env, Client)> {
    if skip_external(why) {
        return None;
    }
    Some(cluster().await)
}

async fn ensure_widget_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).unwrap();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("installing the Widget CRD: {e}"),
    }
    tokio::time::timeout(
        TIMEOUT,
        kube::runtime::wait::await_condition(
            crds,
            "widgets.test.kinfer.dev",
            kube::runtime::wait::conditions::is_crd_established(),
        ),
    )
    .await
    .expect("timed out waiting for the Widget CRD")
    .expect("watch");
}

pub fn widgets(client: &Client) -> Api<DynamicObject> {
    Api::default_namespaced_with(client.clone(), &widget_ar())
}

pub fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "test.kinfer.dev/v1", "kind": "Widget",
        "metadata": { "name": name }, "spec": spec
    }))
    .unwrap()
}

pub async fn create_widget(client: &Client, name: &str, spec: Value) -> DynamicObject {
    widgets(client)
        .create(&PostParams::default(), &widget(name, spec))
        .await
        .unwrap()
}

pub fn rv(o: &DynamicObject) -> u64 {
    o.metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// Wait (bounded) until `cond` holds on the object, through a watch.
pub async fn wait_until<K, F>(api: &Api<K>, name: &str, cond: F) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    F: Fn(&K) -> bool + Send + 'static,
{
    let got = tokio::time::timeout(
        settle_bound(),
        kube::runtime::wait::await_condition(api.clone(), name, move |o: Option<&K>| {
            o.is_some_and(&cond)
        }),
    )
    .await
    .expect("timed out")
    .expect("watch");
    got.expect("object")
}

/// Wait (bounded) until the object is gone.
pub async fn wait_deleted<K>(api: &Api<K>, name: &str, uid: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    tokio::time::timeout(
        settle_bound(),
        kube::runtime::wait::await_condition(
            api.clone(),
            name,
            kube::runtime::wait::conditions::is_deleted(uid),
        ),
    )
    .await
    .expect("timed out waiting for deletion")
    .expect("watch");
}

pub fn status_code(e: &kube::Error) -> u16 {
    match e {
        kube::Error::Api(s) => s.code,
        other => panic!("not an API error: {other:?}"),
    }
}

pub fn api_status(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("not an API error: {other:?}"),
    }
}
