//! Shared helpers: a started cluster, the Widget CRD, typed Widget, waiting on conditions.

use std::time::Duration;

use kinfer_testkit::TestCluster;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, CustomResource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub const TIMEOUT: Duration = Duration::from_secs(10);

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
                                "observedGeneration": { "type": "integer" }
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

/// A started cluster with the Widget CRD installed and a client.
pub async fn cluster() -> (TestCluster, Client) {
    let c = TestCluster::start().await.expect("start");
    c.install_crd_value(widget_crd()).expect("crd");
    let client = c.client().expect("client");
    (c, client)
}

pub fn widgets(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), "default", &widget_ar())
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
        TIMEOUT,
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
        TIMEOUT,
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
