//! Scenario-test harness: the in-process test cluster with the workload simulator, the AIM and
//! KServe CRDs, the operator running in-process on a manual clock, and helpers. Each test
//! binary uses part of it.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use aim_operator::controllers::{self, Operator};
use aim_operator::{Context, Settings};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kinfer_state::metrics::Metrics;
use kinfer_state::pipeline::Pipeline;
use kinfer_state::{ManualClock, Report};
use kinfer_testkit::TestCluster;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

pub const NS: &str = "test";
pub const SYSTEM_NS: &str = "aim-system";
pub const TIMEOUT: Duration = Duration::from_secs(30);
/// The user the operator's client impersonates: the cluster counts its requests apart from
/// the test's ([`kinfer_testkit::Counters::by_client`]).
pub const OPERATOR_USER: &str = "system:serviceaccount:aim-system:aim-operator";

pub struct Env {
    pub cluster: TestCluster,
    /// The test's client (not the operator's).
    pub client: Client,
    pub ctx: Arc<Context>,
    pub clock: Arc<ManualClock>,
    /// The running operator's metrics.
    pub metrics: Metrics,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// A cluster with the CRDs and namespaces, and the operator running.
pub async fn start() -> Env {
    start_with(|_| {}).await
}

pub async fn start_with(tune: impl FnOnce(&mut Settings)) -> Env {
    let cluster = world::cluster().await;
    let client = cluster.client().expect("client");
    for ns in [NS, SYSTEM_NS] {
        let n = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &n)
            .await
            .expect("namespace");
    }
    let mut settings = Settings {
        system_namespace: SYSTEM_NS.into(),
        ..Settings::default()
    };
    settings.discovery.throttle_recheck = Duration::from_millis(300);
    tune(&mut settings);
    let clock = Arc::new(ManualClock::at_epoch_2026());
    let ctx = Context::new(settings)
        .expect("context")
        .with_clock(clock.clone());
    let metrics = Metrics::new();
    let operator = Operator::start_with(
        client_as(&cluster, OPERATOR_USER).await,
        ctx,
        metrics.clone(),
    )
    .expect("operator");
    let ctx = Arc::clone(&operator.ctx);
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(operator.run(rx));
    Env {
        cluster,
        client,
        ctx,
        clock,
        metrics,
        stop,
        task: Some(task),
    }
}

impl Env {
    /// Reconciles `obj` once with a fresh engine of `pipeline` (same context) and reports.
    pub async fn reconcile_once<P: Pipeline>(
        &self,
        pipeline: P,
        controller: &str,
        obj: &P::Object,
    ) -> Report {
        let engine = controllers::engine(&self.client, pipeline, controller, &Metrics::new());
        Box::pin(engine.reconcile(obj)).await
    }
}

/// A client of `cluster` impersonating `user` (a kubeconfig with `as: <user>`).
pub async fn client_as(cluster: &TestCluster, user: &str) -> Client {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&cluster.kubeconfig_yaml_as(user)).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    Client::try_from(config).expect("client")
}

impl Env {
    /// Reconciles the running operator's `controller` (short name) has finished so far
    /// (paused skips excluded).
    pub fn reconciles(&self, controller: &str) -> u64 {
        self.controller_metric("kinfer_reconciles_total", controller)
    }

    /// Reconciles of the running operator's `controller` skipped for the paused annotation.
    pub fn paused_skips(&self, controller: &str) -> u64 {
        self.controller_metric("kinfer_paused_total", controller)
    }

    fn controller_metric(&self, name: &str, controller: &str) -> u64 {
        self.metrics.sum(&format!(
            "{name}{{controller=\"{}\"}} ",
            aim_operator::scheme::manager(controller)
        ))
    }

    /// Requests `verb` of `resource` the operator's client sent so far, whatever the answer.
    pub fn operator_requests(&self, verb: &str, resource: &str) -> u64 {
        self.cluster
            .counters()
            .by_client()
            .get(OPERATOR_USER)
            .into_iter()
            .flatten()
            .filter(|((v, r, _), _)| v == verb && r == resource)
            .map(|(_, n)| n)
            .sum()
    }

    /// Writes with a 2xx answer the operator's client sent so far.
    pub fn operator_writes(&self) -> u64 {
        self.cluster.counters().client_writes(OPERATOR_USER)
    }
}

/// Polls `cond` (every 20 ms, bounded by [`TIMEOUT`]) until it holds.
pub async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let r = tokio::time::timeout(TIMEOUT, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(r.is_ok(), "{what} did not happen within {TIMEOUT:?}");
}

/// Waits until `cond` holds for the object (bounded by [`TIMEOUT`]); returns it.
pub async fn wait<K>(api: &Api<K>, name: &str, what: &str, cond: impl Fn(&K) -> bool) -> K
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let found = tokio::time::timeout(
        TIMEOUT,
        await_condition(api.clone(), name, move |o: Option<&K>| o.is_some_and(&cond)),
    )
    .await;
    match found {
        Ok(Ok(Some(o))) => o,
        other => {
            let current = api.get_opt(name).await.ok().flatten();
            panic!("{name}: {what} did not happen: {other:?}\ncurrent: {current:#?}")
        }
    }
}

/// Waits until the object is gone.
pub async fn wait_gone<K>(api: &Api<K>, name: &str)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let r = tokio::time::timeout(
        TIMEOUT,
        await_condition(api.clone(), name, |o: Option<&K>| o.is_none()),
    )
    .await;
    assert!(matches!(r, Ok(Ok(_))), "{name} still exists: {r:?}");
}

/// Server-side applies `obj` as the test.
pub async fn apply<K>(api: &Api<K>, obj: &K) -> K
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = obj.meta().name.clone().expect("name");
    api.patch(
        &name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(obj),
    )
    .await
    .expect("apply")
}

/// Applies a typed object from JSON.
pub async fn apply_json<K>(api: &Api<K>, v: serde_json::Value) -> K
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let obj: K = serde_json::from_value(v).expect("object");
    apply(api, &obj).await
}

/// A node with AMD GPU labels for `device_id` (e.g. `74a1` = MI300X, `74a5` = MI325X).
pub async fn gpu_node(client: &Client, name: &str, device_id: &str) {
    let node = Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([(
                "amd.com/gpu.device-id".to_owned(),
                device_id.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        ..Node::default()
    };
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await
        .expect("node");
}

/// A discovery result for metric/precision/GPU.
pub fn discovery_output(metric: &str, precision: &str, gpu: &str) -> String {
    format!(
        r#"[{{"filename":"profile.yaml","profile":{{"model":"org/model","metadata":{{"engine":"vllm","gpu":"{gpu}","gpu_count":1,"metric":"{metric}","precision":"{precision}","type":"optimized"}},"engine_args":{{"tensor_parallel_size":1}},"env_vars":{{"VLLM_USE_V1":"1"}}}},"models":[{{"name":"org/model","source":"hf://org/model","size_gb":2}}]}}]"#
    )
}

/// An env var of a simulated pod's first container.
pub fn pod_env(pod: &serde_json::Value, name: &str) -> Option<String> {
    pod["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str().map(str::to_owned))
}

/// A log hook answering every discovery pod with a profile matching its env, unless
/// `override_for` returns a log for its template label.
pub fn echo_hook(override_for: fn(&str) -> Option<String>) -> kinfer_testkit::simulator::LogHook {
    Arc::new(move |_ns: &str, _name: &str, pod: &serde_json::Value| {
        let template = pod["metadata"]["labels"]["aim.eai.amd.com/template"]
            .as_str()
            .unwrap_or_default();
        if let Some(log) = override_for(template) {
            return Some(log);
        }
        Some(discovery_output(
            &pod_env(pod, "AIM_METRIC").unwrap_or_else(|| "latency".into()),
            &pod_env(pod, "AIM_PRECISION").unwrap_or_else(|| "fp16".into()),
            &pod_env(pod, "AIM_GPU_MODEL").unwrap_or_else(|| "MI300X".into()),
        ))
    })
}

/// The reference a template's fetch builds for namespace model `m` (to compute its discovery
/// Job's name before the Job exists).
pub fn model_ref(m: &kinfer_api::aim::AIMModel) -> aim_operator::template::fetch::ModelRef {
    use kinfer_api::aim::common::{ResolutionScope, ResolvedReference};
    aim_operator::template::fetch::ModelRef {
        reference: ResolvedReference {
            kind: Some("AIMModel".into()),
            name: m.metadata.name.clone(),
            namespace: m.metadata.namespace.clone(),
            scope: Some(ResolutionScope::Namespace),
            uid: m.metadata.uid.clone(),
        },
        spec: m.spec.clone(),
    }
}

/// The condition of `type_` in a status' conditions.
pub fn condition<'a>(
    conditions: &'a [k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}
#[allow(unused_imports)] // not every test binary pushes images
pub use kinfer_oci::test_support::{images, registry};
pub mod serving;
pub mod world;
