//! The toy controller: `Toy` objects own one ConfigMap per entry of `spec.children`, and
//! optionally a shared ConfigMap, a Deployment, planned deletions and simulated component
//! errors, so each engine rule can be exercised against the in-process test cluster.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_state::engine::{Engine, EngineConfig, Report};
use kinfer_state::labels::LabelScheme;
use kinfer_state::metrics::Metrics;
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredObject, Observation, Pipeline, PlanResult,
};
use kinfer_state::{
    Categorize, CategorizedError, ComponentHealth, ComponentState, ErrorCategory, ManualClock,
    OverallStatus, Reason,
};
use kinfer_testkit::TestCluster;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, ObjectMeta};
use kube::{Client, Resource};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ToySpec {
    /// child name -> value stored in the child ConfigMap.
    pub children: BTreeMap<String, String>,
    /// A ConfigMap of this name is applied without owner (shared by every toy naming it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<String>,
    /// Also own a Deployment `<toy>-web`.
    #[serde(default)]
    pub deployment: bool,
    /// The Deployment releases `spec.replicas` to another controller (an HPA).
    #[serde(default)]
    pub release_replicas: bool,
    /// ConfigMap names the plan deletes explicitly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete: Vec<String>,
    /// Child components (`Child<name>`) reported with an Auth error (a downstream failure such
    /// as an image pull refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken: Vec<String>,
    /// An upstream dependency is missing.
    #[serde(default)]
    pub upstream_missing: bool,
    /// Plan the first child twice.
    #[serde(default)]
    pub duplicate: bool,
    /// The plan's `requeue_after`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_s: Option<u64>,
    /// The plan keeps its requeue although components report errors.
    #[serde(default)]
    pub keep_requeue: bool,
    /// Also own a Secret of this name: a kind the toy controller neither lists nor watches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwatched: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToyStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Written by someone else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Toy {
    pub metadata: ObjectMeta,
    pub spec: ToySpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ToyStatus>,
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
pub enum ToyPlanError {
    #[error("serialise child: {0}")]
    BuildChild(#[from] kinfer_state::pipeline::DesiredError),
}

impl Categorize for ToyPlanError {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::InvalidSpec
    }
}

/// The toy pipeline; the switches exercise optional engine features.
#[derive(Debug, Default)]
pub struct ToyPipeline {
    /// Ask for this finalizer.
    pub finalizer: Option<String>,
    /// The finalizer is needed only by toys labelled with this key (`None`: by every toy).
    pub finalizer_label: Option<String>,
    /// `finalize` fails with an infrastructure error.
    pub fail_finalize: bool,
    /// While set, `finalize` is refused as the API server refuses a request RBAC denies.
    pub forbid_finalize: Arc<std::sync::atomic::AtomicBool>,
    /// `finalize` calls so far.
    pub finalized: Arc<AtomicUsize>,
    /// Also list `Widget`s, a kind the cluster does not serve.
    pub widgets: bool,
    /// Retired by every plan ([`PlanResult::retire`]).
    pub retire: Arc<std::sync::Mutex<Vec<kinfer_state::Retire>>>,
}

pub fn widget_kind() -> ChildKind {
    ChildKind::dynamic(
        ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
        },
        true,
    )
}

pub fn child_name(toy: &Toy, child: &str) -> String {
    format!(
        "{}-{child}",
        toy.metadata.name.as_deref().unwrap_or_default()
    )
}

fn cm(name: String, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "main", "image": "img:1",
                        "resources": {"limits": {"cpu": "1000m", "memory": "1Gi"}},
                        "volumeMounts": [{"name": "cache", "mountPath": "/cache", "readOnly": false}]
                    }],
                    "volumes": [{"name": "cache", "emptyDir": {}}]
                }
            }
        }
    }))
    .expect("deployment")
}

impl Pipeline for ToyPipeline {
    type Object = Toy;
    type Fetched = ();
    type State = ();
    type PlanError = ToyPlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        let mut kinds = vec![ChildKind::of::<ConfigMap>(), ChildKind::of::<Deployment>()];
        if self.widgets {
            kinds.push(widget_kind());
        }
        kinds
    }

    async fn fetch(&self, _client: &Client, _object: &Toy, _children: &Children) {}

    fn compose(&self, toy: &Toy, children: &Children, (): ()) -> Observation<()> {
        let mut obs = Observation::new(());
        let ns = toy.metadata.namespace.as_deref();
        if toy.spec.upstream_missing {
            obs.components
                .push(
                    ComponentHealth::new("Source")
                        .upstream()
                        .error(CategorizedError::new(
                            ErrorCategory::MissingUpstreamDependency,
                            "source not found",
                        )),
                );
        }
        for child in toy.spec.children.keys() {
            let result = children.fetch::<ConfigMap>(ns, &child_name(toy, child));
            let mut h = kinfer_state::downstream(format!("Child{child}"), &result, |_| {
                ComponentHealth::with_state("", ComponentState::Ready, Reason::ComponentReady, "")
            });
            if toy.spec.broken.contains(child) {
                h.state = None;
                h = h.error(
                    CategorizedError::new(ErrorCategory::Auth, "pull refused")
                        .with_reason(Reason::custom("ImagePullAuthFailure")),
                );
            }
            obs.components.push(h);
        }
        if self.widgets
            && let Some(e) = children.list_error(&widget_kind())
        {
            obs.components.push(
                ComponentHealth::new("Widgets")
                    .downstream()
                    .error(e.clone()),
            );
        }
        obs
    }

    fn plan(&self, toy: &Toy, _obs: &Observation<()>) -> Result<PlanResult, ToyPlanError> {
        let mut plan = PlanResult::default();
        for (child, value) in &toy.spec.children {
            plan.apply.push(DesiredObject::from_typed(&cm(
                child_name(toy, child),
                value,
            ))?);
        }
        if toy.spec.duplicate
            && let Some((child, value)) = toy.spec.children.iter().next()
        {
            plan.apply.push(DesiredObject::from_typed(&cm(
                child_name(toy, child),
                value,
            ))?);
        }
        if let Some(shared) = &toy.spec.shared {
            plan.apply_without_owner
                .push(DesiredObject::from_typed(&cm(shared.clone(), "shared"))?);
        }
        if toy.spec.deployment {
            let mut d = DesiredObject::from_typed(&deployment(&child_name(toy, "web")))?;
            if toy.spec.release_replicas {
                d = d.release(kinfer_state::FieldPath::parse("spec.replicas"));
            }
            plan.apply.push(d);
        }
        if let Some(name) = &toy.spec.unwatched {
            let secret = k8s_openapi::api::core::v1::Secret {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..ObjectMeta::default()
                },
                // `data`, not `stringData`: the server folds the latter into the former, so a
                // body setting it would differ from the live object on every pass.
                data: Some([("k".to_owned(), k8s_openapi::ByteString(b"v".to_vec()))].into()),
                ..Default::default()
            };
            plan.apply.push(DesiredObject::from_typed(&secret)?);
        }
        plan.retire.clone_from(
            &self
                .retire
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        plan.requeue_after = toy.spec.requeue_s.map(std::time::Duration::from_secs);
        plan.requeue_despite_errors = toy.spec.keep_requeue;
        for name in &toy.spec.delete {
            plan.delete.push((
                ChildKind::of::<ConfigMap>(),
                kinfer_state::ObjectKey {
                    kind: "ConfigMap".into(),
                    group: String::new(),
                    namespace: toy.metadata.namespace.clone(),
                    name: name.clone(),
                },
            ));
        }
        Ok(plan)
    }

    fn finalizer(&self) -> Option<String> {
        self.finalizer.clone()
    }

    fn needs_finalizer(&self, toy: &Toy) -> bool {
        self.finalizer_label.as_ref().is_none_or(|k| {
            toy.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(k))
        })
    }

    async fn finalize(&self, _client: &Client, _object: &Toy) -> Result<(), CategorizedError> {
        self.finalized.fetch_add(1, Ordering::SeqCst);
        if self.forbid_finalize.load(Ordering::SeqCst) {
            return Err(CategorizedError::new(
                ErrorCategory::Auth,
                "clusterrolebindings.rbac.authorization.k8s.io \"t\" is forbidden: User \
                 \"system:serviceaccount:ops:op\" cannot delete resource",
            ));
        }
        if self.fail_finalize {
            return Err(CategorizedError::new(
                ErrorCategory::Infrastructure,
                "cleanup backend down",
            ));
        }
        Ok(())
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
            foreign: None,
        })
        .unwrap_or(Value::Null)
    }
}

pub fn toy_crd() -> Value {
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

pub struct Env {
    pub cluster: TestCluster,
    pub client: Client,
    pub engine: Engine<ToyPipeline>,
    pub clock: Arc<ManualClock>,
    pub toys: Api<Toy>,
    pub cms: Api<ConfigMap>,
}

pub const NS: &str = "default";

pub fn scheme() -> LabelScheme {
    LabelScheme {
        domain: "example.com".into(),
        controller: "toy".into(),
        manager: "toy-controller".into(),
    }
}

pub async fn env() -> Env {
    env_with(ToyPipeline::default()).await
}

pub async fn env_with(pipeline: ToyPipeline) -> Env {
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
    let clock = Arc::new(ManualClock::at_epoch_2026());
    let engine = new_engine(pipeline, &client, &clock);
    Env {
        toys: Api::namespaced(client.clone(), NS),
        cms: Api::namespaced(client.clone(), NS),
        cluster,
        client,
        engine,
        clock,
    }
}

/// A fresh engine (no memory) on the same cluster: what a controller restart gets.
pub fn new_engine(
    pipeline: ToyPipeline,
    client: &Client,
    clock: &Arc<ManualClock>,
) -> Engine<ToyPipeline> {
    Engine::new(
        pipeline,
        client.clone(),
        EngineConfig::new(scheme()),
        Metrics::new(),
    )
    .with_clock(clock.clone())
}

/// Write requests the server received (any answer): the zero-write property counts these.
pub fn write_requests(cluster: &TestCluster) -> u64 {
    ["create", "update", "patch", "delete", "deletecollection"]
        .iter()
        .map(|v| cluster.counters().count(v, None))
        .sum()
}

pub fn toy(name: &str, namespace: &str, children: &[(&str, &str)]) -> Toy {
    Toy {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..ObjectMeta::default()
        },
        spec: ToySpec {
            children: children
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            ..ToySpec::default()
        },
        status: None,
    }
}

impl Env {
    pub async fn create(&self, name: &str, children: &[(&str, &str)]) -> Toy {
        self.create_toy(toy(name, NS, children)).await
    }

    pub async fn create_toy(&self, toy: Toy) -> Toy {
        let ns = toy.metadata.namespace.clone().unwrap_or_else(|| NS.into());
        Api::<Toy>::namespaced(self.client.clone(), &ns)
            .create(&PostParams::default(), &toy)
            .await
            .expect("create toy")
    }

    pub async fn get(&self, name: &str) -> Toy {
        self.toys.get(name).await.expect("get toy")
    }

    pub async fn pass(&self, name: &str) -> Report {
        let toy = self.get(name).await;
        self.engine.reconcile(&toy).await
    }

    /// Reconcile until a pass writes nothing (at most 5 passes); returns the passes taken.
    pub async fn converge(&self, name: &str) -> usize {
        for i in 1..=5 {
            if self.pass(name).await.writes() == 0 {
                return i;
            }
        }
        panic!("{name} did not converge in 5 passes");
    }

    pub async fn patch_spec(&self, name: &str, spec: Value) {
        self.toys
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({ "spec": spec })),
            )
            .await
            .expect("patch toy");
    }

    pub async fn set_children(&self, name: &str, children: &[(&str, &str)]) {
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

pub fn cond<'a>(toy: &'a Toy, t: &str) -> &'a Condition {
    toy.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == t))
        .expect("condition")
}
