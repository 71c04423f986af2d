//! Scenario test harness: the in-process test cluster with the workload simulator, the
//! ModelService CRD and the optional third-party CRDs asked for, and the operator's
//! controllers running in-process. Every wait is on a watch condition with a bounded timeout.

#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::missing_panics_doc
)]

use std::fmt::Debug;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Namespace, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::modelservice::ModelService;
use kinfer_builders::naming;
use kinfer_operator::{ControllerOptions, CrdWatch};
use kinfer_state::Engine;
use kinfer_state::metrics::Metrics;
use kinfer_testkit::TestCluster;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::ApiResource;
use kube::runtime::wait::await_condition;
use kube::{Client, CustomResourceExt, Resource};
use modelservice_operator::controller;
use modelservice_operator::optional_crds;
use modelservice_operator::reconciler::{self, MANAGER};
use modelservice_operator::{ModelServicePipeline, OperatorConfig, OptionalCrds};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub mod owned;
pub mod real_server;

/// The upstream sample shares its name and namespace with a derived one; it is created here.
pub const UPSTREAM_SAMPLE_NS: &str = "upstream-sample";

/// Bound of every wait.
pub const TIMEOUT: Duration = Duration::from_mins(1);

/// A running cluster plus operator.
pub struct Harness {
    pub cluster: TestCluster,
    pub client: Client,
    /// An engine of its own over the operator's configuration and the optional CRDs at
    /// (re)start, for reconciling by hand.
    pub engine: Arc<Engine<ModelServicePipeline>>,
    /// The metrics of the running operator's controllers (replaced by every [`Harness::run`]).
    pub metrics: Metrics,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    watcher: Option<JoinHandle<()>>,
}

/// The CRDs for `crds`.
pub fn install(cluster: &TestCluster, crds: OptionalCrds) {
    let mut all = kinfer_api::modelservice::crds();
    for crd in kinfer_api::third_party::crds() {
        let keep = match crd.spec.group.as_str() {
            "inference.networking.k8s.io" => crds.inference_pool,
            "networking.istio.io" => crds.istio,
            "monitoring.coreos.com" => crds.monitoring,
            _ => false,
        };
        if keep {
            all.push(crd);
        }
    }
    if crds.gateway_api {
        all.push(gateway_api::httproutes::HttpRoute::crd());
    }
    cluster.install_crds(&all).expect("install CRDs");
}

impl Harness {
    /// Every optional CRD, the default configuration.
    pub async fn start() -> Self {
        Self::start_with(OperatorConfig::default(), OptionalCrds::all()).await
    }

    /// A cluster with the optional CRDs `crds`, the operator with `config`.
    pub async fn start_with(config: OperatorConfig, crds: OptionalCrds) -> Self {
        let mut h = Self::without_operator(&config, crds).await;
        h.run(config).await;
        h
    }

    /// A cluster with the optional CRDs `crds` and the test namespaces, the operator not yet
    /// running (start it with [`Harness::run`]).
    pub async fn without_operator(config: &OperatorConfig, crds: OptionalCrds) -> Self {
        let cluster = TestCluster::start_simulated().await.expect("test cluster");
        install(&cluster, crds);
        let client = cluster.client().expect("client");
        for ns in [
            "ml-serving",
            "llm-d",
            "team-a",
            "gateway-system",
            UPSTREAM_SAMPLE_NS,
        ] {
            let namespace: Namespace =
                serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).unwrap();
            Api::<Namespace>::all(client.clone())
                .create(&PostParams::default(), &namespace)
                .await
                .expect("namespace");
        }
        let (stop, _) = watch::channel(false);
        Self {
            engine: dummy_engine(&client, config),
            metrics: Metrics::new(),
            cluster,
            client,
            stop,
            task: None,
            watcher: None,
        }
    }

    /// (Re)starts the operator with `config` (an operator upgrade or flag change).
    pub async fn run(&mut self, config: OperatorConfig) {
        self.run_with(config, ControllerOptions::default()).await;
    }

    /// (Re)starts the operator with `config` and the controller `options` (watched
    /// namespaces, ...).
    pub async fn run_with(&mut self, config: OperatorConfig, options: ControllerOptions) {
        self.halt().await;
        let (stop, stop_rx) = watch::channel(false);
        let crds = CrdWatch::start(&self.client, &optional_crds::NAMES, stop_rx.clone())
            .await
            .expect("optional CRD watch");
        let pipeline =
            ModelServicePipeline::new(config, OptionalCrds::from_installed(&crds.current()));
        self.engine = controller::engine(self.client.clone(), pipeline.clone(), Metrics::new());
        self.metrics = Metrics::new();
        self.task = Some(tokio::spawn(controller::run(
            self.client.clone(),
            pipeline,
            self.metrics.clone(),
            options,
            crds.subscribe(),
            stop_rx,
        )));
        self.watcher = Some(tokio::spawn(crds.stopped()));
        self.stop = stop;
    }

    /// Whether the operator's controller task is still running (a panic would have ended it).
    pub fn operator_alive(&self) -> bool {
        self.task.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Kills the operator where it stands, in-flight reconciles included (no graceful
    /// shutdown): a crash or an OOM kill. [`Harness::run`] starts it again.
    pub fn kill(&mut self) {
        for task in [self.task.take(), self.watcher.take()]
            .into_iter()
            .flatten()
        {
            task.abort();
        }
    }

    /// Stops the operator (in-flight reconciles finish).
    pub async fn halt(&mut self) {
        self.stop.send_replace(true);
        if let Some(t) = self.task.take() {
            t.await.expect("controller task");
        }
        if let Some(t) = self.watcher.take() {
            t.await.expect("CRD watch task");
        }
    }

    /// Creates a ModelService from YAML-derived JSON.
    pub async fn create(&self, ms: &Value) -> ModelService {
        let ms: ModelService = serde_json::from_value(ms.clone()).expect("ModelService");
        let ns = ms
            .meta()
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        Api::<ModelService>::namespaced(self.client.clone(), &ns)
            .create(&PostParams::default(), &ms)
            .await
            .expect("create ModelService")
    }

    /// Waits until `cond` holds for the ModelService `ns/name`.
    pub async fn wait_ms(
        &self,
        ns: &str,
        name: &str,
        what: &str,
        cond: impl Fn(&ModelService) -> bool + Send + 'static,
    ) -> ModelService {
        wait(
            Api::<ModelService>::namespaced(self.client.clone(), ns),
            name,
            what,
            move |o: Option<&ModelService>| o.is_some_and(&cond),
        )
        .await
        .expect("object")
    }

    /// Waits until the ModelService is Ready.
    pub async fn wait_ready(&self, ns: &str, name: &str) -> ModelService {
        self.wait_ms(ns, name, "phase Ready", |ms| {
            ms.status
                .as_ref()
                .and_then(|s| s.phase)
                .is_some_and(|p| p.as_str() == "Ready")
        })
        .await
    }

    /// Every object the operator manages in `ns`, by kind, as JSON.
    pub async fn owned(&self, ns: &str) -> Vec<(ApiResource, Value)> {
        let crds = detect(&self.client).await;
        let mut out = Vec::new();
        let lp = ListParams::default()
            .labels(&format!("{}={MANAGER}", kinfer_state::labels::MANAGED_BY));
        for kind in reconciler::child_kinds(crds) {
            let api: Api<DynamicObject> =
                Api::namespaced_with(self.client.clone(), ns, &kind.resource);
            for o in api.list(&lp).await.expect("list").items {
                out.push((kind.resource.clone(), serde_json::to_value(o).unwrap()));
            }
        }
        out
    }

    /// A typed object.
    pub async fn get<K>(&self, ns: &str, name: &str) -> Option<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + Debug
            + DeserializeOwned,
    {
        Api::<K>::namespaced(self.client.clone(), ns)
            .get_opt(name)
            .await
            .expect("get")
    }
}

impl Harness {
    /// The sum of the running operator's metric samples whose line starts with `name`.
    pub fn metric(&self, name: &str) -> u64 {
        self.metrics.sum(name)
    }

    /// The UID of the stored object `plural`/`name` of `group` in `ns`, read in-process (not a
    /// request, so polling it does not disturb the counters).
    pub fn stored_uid(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<String> {
        self.cluster
            .objects(group, plural)
            .iter()
            .find(|o| o["metadata"]["namespace"] == ns && o["metadata"]["name"] == name)
            .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_owned))
    }

    /// Waits (bounded by [`TIMEOUT`], polling in-process: no request) until `cond`.
    pub async fn eventually(&self, what: &str, cond: impl Fn(&Self) -> bool) {
        kinfer_testkit::wait::holds(what, TIMEOUT, || cond(self)).await;
    }
}

impl Harness {
    /// Polls the stored objects in-process (no request, so fault injection and counters see
    /// none of it) until `check` is Ok, at most `bound`; the panic message has the last reason
    /// it was not.
    pub async fn until(
        &self,
        what: &str,
        bound: Duration,
        check: impl Fn(&Self) -> Result<(), String>,
    ) {
        kinfer_testkit::wait::until(what, bound, || check(self)).await;
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

fn dummy_engine(client: &Client, config: &OperatorConfig) -> Arc<Engine<ModelServicePipeline>> {
    controller::engine(
        client.clone(),
        ModelServicePipeline::new(config.clone(), OptionalCrds::default()),
        Metrics::new(),
    )
}

/// The optional CRDs installed now.
pub async fn detect(client: &Client) -> OptionalCrds {
    let mut installed = Vec::new();
    for name in optional_crds::NAMES {
        if kinfer_operator::crds::installed(client, name)
            .await
            .expect("read CRD")
        {
            installed.push(name);
        }
    }
    OptionalCrds::from_names(installed)
}

/// Waits until `cond` holds for `name` in `api`, at most [`TIMEOUT`].
pub async fn wait<K>(
    api: Api<K>,
    name: &str,
    what: &str,
    cond: impl Fn(Option<&K>) -> bool + Send + 'static,
) -> Option<K>
where
    K: Clone + Debug + Send + DeserializeOwned + Resource + 'static,
{
    match tokio::time::timeout(TIMEOUT, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => panic!("{what}: watch failed: {e}"),
        Err(elapsed) => panic!(
            "{what}: {elapsed} ({TIMEOUT:?}); last seen: {:#?}",
            api.get_opt(name).await
        ),
    }
}

/// The condition `type_` of a ModelService.
pub fn condition<'a>(ms: &'a ModelService, type_: &str) -> Option<&'a Condition> {
    ms.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// True when the condition `type_` has `status`.
pub fn has(ms: &ModelService, type_: &str, status: &str) -> bool {
    condition(ms, type_).is_some_and(|c| c.status == status)
}

/// The shared reference samples directory, or `None` (skipped) outside CI.
pub fn samples() -> Option<Vec<(PathBuf, Value)>> {
    let dir = kinfer_crdcheck::shared_dir()?.join("reference/modelservice/samples");
    let upstream = dir.join("model_v1alpha1_modelservice.yaml");
    let mut files = vec![upstream.clone()];
    let mut derived: Vec<PathBuf> = std::fs::read_dir(dir.join("derived"))
        .expect("derived samples")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    derived.sort();
    files.extend(derived);
    Some(
        files
            .into_iter()
            .flat_map(|f| {
                let is_upstream = f == upstream;
                kinfer_crdcheck::load_yaml_documents(&f)
                    .into_iter()
                    .map(move |mut d| {
                        if is_upstream {
                            d["metadata"]["namespace"] = UPSTREAM_SAMPLE_NS.into();
                        }
                        (f.clone(), d)
                    })
            })
            .collect(),
    )
}

/// One sample by file-name prefix.
pub fn sample(prefix: &str) -> Option<Value> {
    samples()?.into_iter().find_map(|(p, v)| {
        p.file_name()
            .and_then(|f| f.to_str())
            .is_some_and(|f| f.starts_with(prefix))
            .then_some(v)
    })
}

/// A minimal ModelService for tests that build their own.
pub fn minimal(name: &str, namespace: &str) -> Value {
    serde_json::json!({
        "apiVersion": "model.otterscale.io/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "model": {"name": "test/model", "image": "registry.example.com/models/test:v1"},
            "engine": {},
            "accelerator": {"type": "nvidia"},
            "decode": {"replicas": 1}
        }
    })
}

/// `ns/name` of a sample.
pub fn key(v: &Value) -> (String, String) {
    (
        v["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_owned(),
        v["metadata"]["name"].as_str().unwrap().to_owned(),
    )
}

/// The pod spec of a Deployment's template.
pub fn pod_spec(d: &Deployment) -> &PodSpec {
    d.spec.as_ref().unwrap().template.spec.as_ref().unwrap()
}

/// Test helper.
pub fn containers(d: &Deployment) -> Vec<Container> {
    let pod = pod_spec(d);
    pod.init_containers
        .iter()
        .flatten()
        .chain(pod.containers.iter())
        .cloned()
        .collect()
}

/// Test helper.
pub fn container(d: &Deployment, name: &str) -> Container {
    containers(d)
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("container {name}"))
}

/// Test helper.
pub fn gpu(c: &Container, resource: &str) -> (String, String) {
    let r = c.resources.as_ref().unwrap();
    (
        r.limits.as_ref().unwrap()[resource].0.clone(),
        r.requests.as_ref().unwrap()[resource].0.clone(),
    )
}

/// Test helper.
pub fn assert_valid_names(objects: &[(kube::core::ApiResource, Value)]) {
    for (kind, o) in objects {
        let name = o["metadata"]["name"].as_str().unwrap();
        assert!(naming::is_dns1123_subdomain(name), "{} {name}", kind.kind);
        if kind.kind == "Service" {
            assert!(
                naming::is_dns1035_label(name),
                "{} {name} is not DNS-1035",
                kind.kind
            );
        }
        for (k, v) in o["metadata"]["labels"].as_object().into_iter().flatten() {
            assert!(
                naming::is_label_value(v.as_str().unwrap()),
                "{name}: label {k}={v}"
            );
        }
    }
}
