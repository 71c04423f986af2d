//! The engine against the in-process test cluster (kinfer-testkit): a toy controller whose
//! `Toy` objects own one ConfigMap per entry of `spec.children`. Request counters on the
//! server prove the zero-write property; fault injection proves convergence.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_state::engine::{Engine, EngineConfig, Report};
use kinfer_state::labels::LabelScheme;
use kinfer_state::metrics::{Metrics, WriteVerb};
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredObject, Observation, Pipeline, PlanResult,
};
use kinfer_state::{
    Categorize, ComponentHealth, ComponentState, ErrorCategory, ManualClock, OverallStatus, Reason,
};
use kinfer_testkit::{Fault, TestCluster};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{DeserializeGuard, ObjectMeta};
use kube::{Client, Resource};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ToySpec {
    /// child name -> value stored in the child ConfigMap.
    children: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ToyStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed_generation: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
struct Toy {
    metadata: ObjectMeta,
    spec: ToySpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<ToyStatus>,
}

impl Resource for Toy {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;
    fn kind((): &()) -> Cow<'_, str> {
        "Toy".into()
    }
    fn group((): &()) -> Cow<'_, str> {
        "example.com".into()
    }
    fn version((): &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural((): &()) -> Cow<'_, str> {
        "toys".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[derive(Debug, thiserror::Error)]
enum ToyPlanError {
    #[error("serialise child: {0}")]
    BuildChild(#[from] kinfer_state::pipeline::DesiredError),
}

impl Categorize for ToyPlanError {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::InvalidSpec
    }
}

#[derive(Debug)]
struct ToyPipeline;

fn child_name(toy: &Toy, child: &str) -> String {
    format!(
        "{}-{child}",
        toy.metadata.name.as_deref().unwrap_or_default()
    )
}

impl Pipeline for ToyPipeline {
    type Object = Toy;
    type Fetched = ();
    type State = ();
    type PlanError = ToyPlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        vec![ChildKind::of::<ConfigMap>()]
    }

    async fn fetch(&self, _client: &Client, _object: &Toy, _children: &Children) {}

    fn compose(&self, toy: &Toy, children: &Children, (): ()) -> Observation<()> {
        let mut obs = Observation::new(());
        let ns = toy.metadata.namespace.as_deref();
        for child in toy.spec.children.keys() {
            let result = children.fetch::<ConfigMap>(ns, &child_name(toy, child));
            obs.components.push(kinfer_state::downstream(
                format!("Child{child}"),
                &result,
                |_| {
                    ComponentHealth::with_state(
                        "",
                        ComponentState::Ready,
                        Reason::ComponentReady,
                        "",
                    )
                },
            ));
        }
        obs
    }

    fn plan(&self, toy: &Toy, _obs: &Observation<()>) -> Result<PlanResult, ToyPlanError> {
        let mut plan = PlanResult::default();
        for (child, value) in &toy.spec.children {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(child_name(toy, child)),
                    ..ObjectMeta::default()
                },
                data: Some([("value".to_owned(), value.clone())].into()),
                ..ConfigMap::default()
            };
            plan.apply.push(DesiredObject::from_typed(&cm)?);
        }
        Ok(plan)
    }

    fn status(
        &self,
        toy: &Toy,
        _obs: &Observation<()>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> Value {
        serde_json::to_value(ToyStatus {
            status: Some(status.to_string()),
            conditions,
            observed_generation: toy.metadata.generation,
        })
        .unwrap_or(Value::Null)
    }
}

fn toy_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "toys.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "toys", "singular": "toy", "kind": "Toy", "listKind": "ToyList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}
            }]
        }
    })
}

struct Env {
    cluster: TestCluster,
    client: Client,
    engine: Engine<ToyPipeline>,
    clock: Arc<ManualClock>,
    toys: Api<Toy>,
    cms: Api<ConfigMap>,
}

const NS: &str = "default";

async fn env() -> Env {
    let cluster = TestCluster::start().await.expect("test cluster");
    cluster.install_crd_value(toy_crd()).expect("crd");
    // The engine decides retries (per-object backoff, Retry-After): switch off kube's own
    // retry of 429/503/504, which would otherwise hide them inside one request.
    let kubeconfig = cluster.kubeconfig().expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    config.default_retry = false;
    let client = Client::try_from(config).expect("client");
    let scheme = LabelScheme {
        domain: "example.com".into(),
        controller: "toy".into(),
        manager: "toy-controller".into(),
    };
    let clock = Arc::new(ManualClock::at_epoch_2026());
    let engine = Engine::new(
        ToyPipeline,
        client.clone(),
        EngineConfig::new(scheme),
        Metrics::new(),
    )
    .with_clock(clock.clone());
    Env {
        toys: Api::namespaced(client.clone(), NS),
        cms: Api::namespaced(client.clone(), NS),
        cluster,
        client,
        engine,
        clock,
    }
}

/// Write requests the server received (any answer): the zero-write property counts these.
fn write_requests(cluster: &TestCluster) -> u64 {
    ["create", "update", "patch", "delete", "deletecollection"]
        .iter()
        .map(|v| cluster.counters().count(v, None))
        .sum()
}

impl Env {
    async fn create(&self, name: &str, children: &[(&str, &str)]) -> Toy {
        let toy = Toy {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(NS.into()),
                ..ObjectMeta::default()
            },
            spec: ToySpec {
                children: children
                    .iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect(),
            },
            status: None,
        };
        self.toys
            .create(&PostParams::default(), &toy)
            .await
            .expect("create toy")
    }

    async fn get(&self, name: &str) -> Toy {
        self.toys.get(name).await.expect("get toy")
    }

    async fn pass(&self, name: &str) -> Report {
        let toy = self.get(name).await;
        self.engine.reconcile(&toy).await
    }

    /// Reconcile until a pass writes nothing (at most 5 passes); returns the passes taken.
    async fn converge(&self, name: &str) -> usize {
        for i in 1..=5 {
            if self.pass(name).await.writes() == 0 {
                return i;
            }
        }
        panic!("{name} did not converge in 5 passes");
    }

    async fn set_children(&self, name: &str, children: &[(&str, &str)]) {
        let map: BTreeMap<&str, &str> = children.iter().copied().collect();
        let patch = json!({"spec": {"children": map}});
        // A merge patch replaces the map only key by key; send nulls for removed keys.
        let mut current = self.get(name).await.spec.children;
        current.retain(|k, _| !map.contains_key(k.as_str()));
        let mut body = patch;
        for k in current.keys() {
            body["spec"]["children"][k] = Value::Null;
        }
        self.toys
            .patch(name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .expect("patch toy");
    }
}

fn cond<'a>(toy: &'a Toy, t: &str) -> &'a Condition {
    toy.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == t))
        .expect("condition")
}

#[tokio::test]
async fn creates_children_then_a_steady_state_writes_nothing() {
    let env = env().await;
    env.create("t1", &[("a", "1"), ("b", "2")]).await;

    let first = env.pass("t1").await;
    assert_eq!(first.applied, 2, "{first:?}");
    assert!(first.status_written);
    assert_eq!(
        first.status,
        Some(OverallStatus::Progressing),
        "children did not exist when fetched"
    );
    let cm = env.cms.get("t1-a").await.expect("child a");
    let labels = cm.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("toy-controller")
    );
    assert_eq!(
        labels.get("example.com/toy.name").map(String::as_str),
        Some("t1")
    );
    let owner = &cm.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("Toy", Some(true)));

    let second = env.pass("t1").await;
    assert_eq!(
        (second.applied, second.deleted),
        (0, 0),
        "children are unchanged: {second:?}"
    );
    assert_eq!(second.status, Some(OverallStatus::Ready));
    assert!(second.status_written, "the children are now observed ready");

    // Steady state: count every write request the server receives.
    let before = write_requests(&env.cluster);
    let third = env.pass("t1").await;
    assert_eq!(third.writes(), 0, "{third:?}");
    assert_eq!(
        write_requests(&env.cluster),
        before,
        "a steady-state reconcile sends no write"
    );
    assert_eq!(
        third.action,
        kube::runtime::controller::Action::await_change()
    );
    assert_eq!(
        env.engine
            .metrics()
            .writes("toy-controller", WriteVerb::Apply),
        2
    );
}

#[tokio::test]
async fn lasttransitiontime_does_not_move_on_a_no_op() {
    let env = env().await;
    env.create("t2", &[("a", "1")]).await;
    env.converge("t2").await;
    let before = env.get("t2").await;
    env.clock.advance(Duration::from_hours(1));
    let report = env.pass("t2").await;
    assert_eq!(report.writes(), 0);
    let after = env.get("t2").await;
    assert_eq!(
        before.metadata.resource_version,
        after.metadata.resource_version
    );
    assert_eq!(before.status, after.status);
    assert_eq!(cond(&after, "Ready").status, "True");
    assert_eq!(
        cond(&after, "Ready").observed_generation,
        after.metadata.generation
    );
}

#[tokio::test]
async fn a_changed_spec_writes_only_what_changed() {
    let env = env().await;
    env.create("t3", &[("a", "1"), ("b", "2")]).await;
    env.converge("t3").await;
    env.set_children("t3", &[("a", "1"), ("b", "changed")])
        .await;
    env.cluster.counters().reset();
    let report = env.pass("t3").await;
    assert_eq!(report.applied, 1, "{report:?}");
    assert_eq!(env.cluster.counters().count("patch", Some("configmaps")), 1);
    assert!(report.status_written, "observedGeneration moved");
    let b = env.cms.get("t3-b").await.expect("b");
    assert_eq!(
        b.data.unwrap_or_default().get("value").map(String::as_str),
        Some("changed")
    );
    assert_eq!(env.converge("t3").await, 1);
}

#[tokio::test]
async fn a_deleted_child_is_recreated_and_an_orphan_deleted() {
    let env = env().await;
    env.create("t4", &[("a", "1"), ("b", "2")]).await;
    env.converge("t4").await;

    env.cms
        .delete("t4-a", &DeleteParams::default())
        .await
        .expect("delete a");
    let report = env.pass("t4").await;
    assert_eq!(report.applied, 1, "{report:?}");
    assert!(env.cms.get_opt("t4-a").await.expect("get").is_some());
    env.converge("t4").await;

    // A labelled ConfigMap we do not control is never deleted.
    let foreign = ConfigMap {
        metadata: ObjectMeta {
            name: Some("foreign".into()),
            labels: Some(
                [
                    ("app.kubernetes.io/managed-by", "toy-controller"),
                    ("example.com/toy.name", "t4"),
                ]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into(),
            ),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    env.cms
        .create(&PostParams::default(), &foreign)
        .await
        .expect("foreign");

    env.set_children("t4", &[("a", "1")]).await;
    let report = env.pass("t4").await;
    assert_eq!((report.applied, report.deleted), (0, 1), "{report:?}");
    assert!(
        env.cms.get_opt("t4-b").await.expect("get").is_none(),
        "orphan deleted"
    );
    assert!(
        env.cms.get_opt("foreign").await.expect("get").is_some(),
        "not ours: kept"
    );
    env.converge("t4").await;
    let toy = env.get("t4").await;
    assert!(
        toy.status
            .unwrap()
            .conditions
            .iter()
            .all(|c| c.type_ != "ChildbReady"),
        "stale component condition pruned"
    );
}

#[tokio::test]
async fn injected_conflict_server_error_and_throttling_converge() {
    let env = env().await;
    env.create("t5", &[("a", "1")]).await;
    let faults = env.cluster.faults();
    let s = Duration::from_secs;

    // 409 on the child apply: infrastructure, backoff 1 s.
    faults.inject(Fault::status("patch", "configmaps", 409).times(1));
    let r = env.pass("t5").await;
    assert!(
        r.errors
            .iter()
            .any(|e| e.category == ErrorCategory::Infrastructure),
        "{r:?}"
    );
    assert_eq!(r.action, kube::runtime::controller::Action::requeue(s(1)));
    let toy = env.get("t5").await;
    assert_eq!(cond(&toy, "DependenciesReachable").status, "False");

    // 500 on the next attempt: backoff doubles.
    faults.inject(Fault::status("patch", "configmaps", 500).times(1));
    let r = env.pass("t5").await;
    assert_eq!(r.action, kube::runtime::controller::Action::requeue(s(2)));

    // 429 with Retry-After 7 s: honoured.
    faults.inject(
        Fault::status("patch", "configmaps", 429)
            .retry_after(7)
            .times(1),
    );
    let r = env.pass("t5").await;
    assert_eq!(r.action, kube::runtime::controller::Action::requeue(s(7)));

    // Faults exhausted: converges, backoff reset, conditions recover.
    env.converge("t5").await;
    let toy = env.get("t5").await;
    assert_eq!(cond(&toy, "DependenciesReachable").status, "True");
    assert_eq!(cond(&toy, "Ready").status, "True");
    faults.inject(Fault::status("list", "configmaps", 503).times(1));
    let r = env.pass("t5").await;
    assert_eq!(
        r.action,
        kube::runtime::controller::Action::requeue(s(1)),
        "backoff was reset by the success"
    );
}

#[tokio::test]
async fn infrastructure_errors_respect_the_grace_period() {
    let env = env().await;
    env.create("t6", &[("a", "1")]).await;
    env.converge("t6").await;
    let faults = env.cluster.faults();

    faults.inject(Fault::status("list", "configmaps", 503));
    let r = env.pass("t6").await;
    assert_eq!(r.status, Some(OverallStatus::Ready), "within grace: {r:?}");
    let toy = env.get("t6").await;
    assert_eq!(cond(&toy, "DependenciesReachable").status, "False");
    assert_eq!(cond(&toy, "Ready").status, "True");

    env.clock.advance(Duration::from_secs(11));
    let r = env.pass("t6").await;
    assert_eq!(r.status, Some(OverallStatus::Degraded), "{r:?}");
    let toy = env.get("t6").await;
    assert_eq!(
        (
            cond(&toy, "Ready").status.as_str(),
            cond(&toy, "Ready").reason.as_str()
        ),
        ("False", "InfrastructureError")
    );

    faults.clear();
    env.converge("t6").await;
    assert_eq!(cond(&env.get("t6").await, "Ready").status, "True");
}

#[tokio::test]
async fn paused_objects_are_not_touched() {
    let env = env().await;
    env.create("t7", &[("a", "1")]).await;
    let patch = json!({"metadata": {"annotations": {"example.com/reconciliation-paused": "true"}}});
    env.toys
        .patch("t7", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("pause");
    let toy = env.get("t7").await;
    let before: u64 = env.cluster.counters().snapshot().values().sum();
    let r = env.engine.reconcile(&toy).await;
    assert!(r.skipped);
    assert_eq!(
        env.cluster.counters().snapshot().values().sum::<u64>(),
        before,
        "no request at all"
    );
    assert!(env.cms.get_opt("t7-a").await.expect("get").is_none());
}

#[tokio::test]
async fn a_malformed_object_is_reported_once_and_does_not_stop_the_controller() {
    let env = env().await;
    let raw: Api<kube::core::DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        NS,
        &kube::core::ApiResource::erase::<Toy>(&()),
    );
    let bad: kube::core::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Toy",
        "metadata": {"name": "bad"},
        "spec": {"children": "not-a-map"}
    }))
    .expect("dynamic");
    raw.create(&PostParams::default(), &bad)
        .await
        .expect("create bad");
    env.create("good", &[("a", "1")]).await;

    let guarded: Api<DeserializeGuard<Toy>> = Api::namespaced(env.client.clone(), NS);
    let list = guarded
        .list(&kube::api::ListParams::default())
        .await
        .expect("list");
    assert_eq!(
        list.items.len(),
        2,
        "one bad object does not break the list"
    );
    let mut events = 0;
    for _ in 0..2 {
        for obj in &list.items {
            let r = env.engine.reconcile_guarded(obj).await;
            if obj.0.is_err() {
                assert!(r.skipped);
                events += r.events;
            }
        }
    }
    assert_eq!(events, 1, "the same error is reported once");
    assert!(
        env.cms.get_opt("good-a").await.expect("get").is_some(),
        "the good object was reconciled"
    );
}
