//! The small AIM world of the fault matrix and the bad-input suite, and the invariants both
//! check.
//!
//! The world is upstream's air-gapped catalog path, as the benchmark's AIM scenario
//! (`kinfer-bench`, `scenario/aim.rs`) builds it: an `AIMClusterModel` with inline
//! `imageMetadata` recommending two MI300X deployments (latency fp8, throughput fp16), whose
//! two generated `AIMClusterServiceTemplate`s are discovered by Jobs in the operator namespace
//! (their logs written by the simulator's AIM hook), an MI300X Node, and AIMServices by model
//! name with automatic selection (the latency fp8 template, no tie), `Shared` or `Dedicated`
//! caching.
//!
//! Unlike [`super::start`], the operator here runs as the binary runs it: its own client with
//! kube's retry layer off (the engine decides retries), the real clock, and it can be killed
//! where it stands and started again with a fresh process state. Everything the test itself
//! writes before the teardown goes in-process ([`TestCluster::create_object`]), so injected
//! faults and counters see the operator's requests only; the teardown clears the faults first
//! and deletes through the test's client.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use aim_operator::controllers::{self, Operator};
use aim_operator::{Context, Settings};
use kinfer_state::metrics::Metrics;
use kinfer_testkit::TestCluster;
use kinfer_testkit::operator::{OperatorTask, controlled_by, controllers};
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use super::{NS, OPERATOR_USER, SYSTEM_NS};

pub const AIM: &str = "aim.eai.amd.com";
pub const AIM_VERSION: &str = "aim.eai.amd.com/v1alpha1";
/// The catalog model every service names.
pub const MODEL: &str = "m";
/// The model's image (the simulator answers its discovery pods by it).
pub const IMAGE: &str = "amdenterpriseai/aim-matrix-model:0.8.5";

/// Every kind the operator may create, `(group, plural)`: the children compared against a
/// fault-free run and required empty after the teardown.
pub const CHILD_KINDS: [(&str, &str); 15] = [
    ("serving.kserve.io", "inferenceservices"),
    ("serving.kserve.io", "servingruntimes"),
    ("serving.kserve.io", "clusterservingruntimes"),
    (AIM, "aimservicetemplates"),
    (AIM, "aimclusterservicetemplates"),
    (AIM, "aimmodels"),
    (AIM, "aimtemplatecaches"),
    (AIM, "aimartifacts"),
    ("", "persistentvolumeclaims"),
    ("batch", "jobs"),
    ("", "serviceaccounts"),
    ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "rolebindings"),
    ("autoscaling", "horizontalpodautoscalers"),
    ("gateway.networking.k8s.io", "httproutes"),
];

/// How the children look, independent of uids and hashed names: per `(plural, namespace,
/// controller owner kind, owner name)` (`-` for none), how many objects.
pub type Shape = BTreeMap<(String, String, String, String), usize>;

/// A test cluster with the world's context and, when running, the AIM operator in-process.
pub struct World {
    /// First, so it is dropped (killed) before the cluster goes.
    operator: Option<OperatorTask>,
    pub cluster: TestCluster,
    /// The test's client (for the teardown only: faults are cleared by then).
    pub client: Client,
}

/// A `metadata` + `spec` object of the AIM group.
pub fn aim_object(kind: &str, name: &str, namespace: Option<&str>, spec: Value) -> Value {
    let mut meta = json!({ "name": name });
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    let mut object = json!({ "apiVersion": AIM_VERSION, "kind": kind, "metadata": meta });
    object["spec"] = spec;
    object
}

/// The catalog model: inline metadata, two MI300X deployments.
pub fn cluster_model() -> Value {
    aim_object(
        "AIMClusterModel",
        MODEL,
        None,
        json!({
            "image": IMAGE,
            "imageMetadata": { "model": {
                "canonicalName": "matrix/model",
                "source": "hf://matrix/model",
                "recommendedDeployments": [
                    { "gpuModel": "MI300X", "gpuCount": 1, "metric": "latency", "precision": "fp8" },
                    { "gpuModel": "MI300X", "gpuCount": 1, "metric": "throughput", "precision": "fp16" },
                ],
            } }
        }),
    )
}

/// A service spec by model name, automatic selection, caching `mode`.
pub fn service_spec(mode: &str) -> Value {
    json!({ "model": { "name": MODEL }, "caching": { "mode": mode } })
}

/// A simulated test cluster with the AIM CRDs and the third-party ones the operator creates
/// (KServe, HTTPRoute): every AIM test cluster starts here ([`super::start_with`] too).
pub async fn cluster() -> TestCluster {
    controllers::install_crypto_provider();
    let cluster = TestCluster::start_simulated().await.expect("cluster");
    let mut crds = kinfer_api::aim::crds();
    crds.extend(kinfer_api::third_party::crds());
    crds.push(<gateway_api::httproutes::HttpRoute as kube::CustomResourceExt>::crd());
    cluster.install_crds(&crds).expect("crds");
    cluster
}

impl World {
    /// The cluster with CRDs, namespaces, the MI300X Node, the catalog model and the
    /// simulator's AIM log hook; the operator not started.
    pub async fn start() -> Self {
        let cluster = cluster().await;
        let client = cluster.client().expect("client");
        for ns in [NS, SYSTEM_NS] {
            cluster
                .create_object(
                    "v1",
                    "namespaces",
                    "",
                    json!({ "metadata": { "name": ns } }),
                )
                .expect("namespace");
        }
        let world = Self {
            operator: None,
            cluster,
            client,
        };
        world.node("gpu-mi300x", Some("74a1"));
        let model = cluster_model();
        world.create(&model).expect("catalog model");
        kinfer_testkit::simulator::aim::install(
            &world.cluster,
            kinfer_testkit::simulator::aim::models_by_image([&model]),
        );
        world
    }

    /// A Node, with an MI300X-style device id label when `device_id` is given.
    pub fn node(&self, name: &str, device_id: Option<&str>) {
        let mut labels = json!({ "kubernetes.io/hostname": name });
        let mut capacity = json!({ "cpu": "64", "memory": "512Gi", "pods": "110" });
        if let Some(id) = device_id {
            labels["amd.com/gpu.device-id"] = json!(id);
            capacity["amd.com/gpu"] = json!("8");
        }
        self.cluster
            .create_object(
                "v1",
                "nodes",
                "",
                json!({ "metadata": { "name": name, "labels": labels },
                        "status": { "capacity": capacity, "allocatable": capacity } }),
            )
            .expect("node");
    }

    /// Creates an AIM object in-process (the raw JSON: hostile specs reach the server as is).
    pub fn create(&self, object: &Value) -> Result<Value, kinfer_testkit::Error> {
        let kind = object["kind"].as_str().unwrap_or_default();
        let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
        self.cluster
            .create_object(AIM_VERSION, &plural(kind), ns, object.clone())
    }

    /// Creates AIMService `name` in [`NS`] with `spec`.
    pub fn service(&self, name: &str, spec: &Value) -> Result<Value, kinfer_testkit::Error> {
        self.create(&aim_object("AIMService", name, Some(NS), spec.clone()))
    }

    /// Starts the operator: a fresh process state (caches, context, engines).
    pub async fn run_operator(&mut self) {
        let kubeconfig = self
            .cluster
            .kubeconfig_as(OPERATOR_USER)
            .expect("kubeconfig");
        let client = kinfer_operator::client::from_kubeconfig(kubeconfig)
            .await
            .expect("operator client");
        let settings = Settings {
            system_namespace: SYSTEM_NS.into(),
            ..Settings::default()
        };
        let ctx = Context::new(settings).expect("context");
        let operator = Operator::start_with(client, ctx, Metrics::new()).expect("operator");
        self.operator = Some(OperatorTask::spawn(|shutdown| operator.run(shutdown)));
    }

    /// Whether the operator is still running (a panic in a controller ends its task).
    pub fn operator_alive(&self) -> bool {
        self.operator.as_ref().is_some_and(OperatorTask::alive)
    }

    /// Kills the operator where it stands (mid-reconcile included): no graceful shutdown.
    pub fn kill_operator(&mut self) {
        self.operator = None;
    }

    /// Every stored object of `plural` in `group`, read in-process (no request).
    pub fn objects(&self, group: &str, plural: &str) -> Vec<Arc<Value>> {
        self.cluster.objects(group, plural)
    }

    /// The AIMServices.
    pub fn services(&self) -> Vec<Arc<Value>> {
        self.objects(AIM, "aimservices")
    }

    /// Polls `cond` until it holds ([`kinfer_testkit::wait::until_explained`]); panics with
    /// `what`, the last complaint and the world's [`Self::summary`] after `timeout`.
    pub async fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut cond: impl FnMut(&Self) -> Result<(), String>,
    ) {
        kinfer_testkit::wait::until_explained(what, timeout, || cond(self), || self.summary())
            .await;
    }

    /// One line per AIM object and Job: its state and the reasons of its `False`
    /// conditions (for failure messages).
    pub fn summary(&self) -> String {
        let kinds = [
            (AIM, "aimclustermodels"),
            (AIM, "aimmodels"),
            (AIM, "aimclusterservicetemplates"),
            (AIM, "aimservicetemplates"),
            (AIM, "aimservices"),
            (AIM, "aimtemplatecaches"),
            (AIM, "aimartifacts"),
            ("batch", "jobs"),
        ];
        let mut lines = Vec::new();
        for (group, plural) in kinds {
            for o in self.objects(group, plural) {
                let failing: Vec<String> = o["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|c| c["status"] == "False")
                    .map(|c| {
                        let m: String = c["message"]
                            .as_str()
                            .unwrap_or_default()
                            .chars()
                            .take(160)
                            .collect();
                        format!("{}={} {m}", c["type"], c["reason"])
                    })
                    .collect();
                lines.push(format!(
                    "  {plural} {} [{}] gen {} observed {} finalizers {}: {}",
                    o["metadata"]["name"],
                    o["status"]["status"],
                    o["metadata"]["generation"],
                    o["status"]["observedGeneration"],
                    o["metadata"]["finalizers"],
                    failing.join("; ")
                ));
            }
        }
        let faulted: Vec<String> = self
            .cluster
            .counters()
            .snapshot()
            .into_iter()
            .filter(|((_, _, code), _)| *code >= 400)
            .map(|((verb, resource, code), n)| format!("{verb} {resource} {code}: {n}"))
            .collect();
        lines.push(format!("  answers >= 400: {}", faulted.join(", ")));
        lines.join("\n")
    }

    /// The uids of every object the children may be owned by.
    fn live_uids(&self) -> BTreeSet<String> {
        let owners = [
            (AIM, "aimservices"),
            (AIM, "aimclustermodels"),
            (AIM, "aimmodels"),
            (AIM, "aimservicetemplates"),
            (AIM, "aimclusterservicetemplates"),
            (AIM, "aimtemplatecaches"),
            (AIM, "aimartifacts"),
            ("batch", "jobs"),
        ];
        owners
            .into_iter()
            .flat_map(|(g, p)| self.objects(g, p))
            .filter_map(|o| o["metadata"]["uid"].as_str().map(str::to_owned))
            .collect()
    }

    /// The children's [`Shape`]; an error for a child with more than one controller reference
    /// (a duplicate claim) or whose controller no longer exists (an orphan).
    pub fn shape(&self) -> Result<Shape, String> {
        let live = self.live_uids();
        let mut shape = Shape::new();
        for (group, plural) in CHILD_KINDS {
            for o in self.objects(group, plural) {
                let name = o["metadata"]["name"].as_str().unwrap_or_default();
                let controllers = controllers(&o);
                let (kind, owner) = match controllers[..] {
                    [] => ("-".to_owned(), "-".to_owned()),
                    [r] => {
                        if !live.contains(r["uid"].as_str().unwrap_or_default()) {
                            return Err(format!(
                                "{plural} {name} is orphaned: its controller {} {} is gone",
                                r["kind"], r["name"]
                            ));
                        }
                        (
                            r["kind"].as_str().unwrap_or_default().to_owned(),
                            r["name"].as_str().unwrap_or_default().to_owned(),
                        )
                    }
                    _ => {
                        return Err(format!(
                            "{plural} {name}: {} controller references",
                            controllers.len()
                        ));
                    }
                };
                let ns = o["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                *shape
                    .entry((plural.to_owned(), ns, kind, owner))
                    .or_default() += 1;
            }
        }
        Ok(shape)
    }

    /// The catalog settled: the model and both its templates Ready at their generation.
    pub fn catalog_ready(&self) -> Result<(), String> {
        let model = self.objects(AIM, "aimclustermodels");
        let templates = self.objects(AIM, "aimclusterservicetemplates");
        if templates.len() != 2 {
            return Err(format!("{} cluster templates, want 2", templates.len()));
        }
        for o in model.iter().chain(&templates) {
            if !at_generation(o) || o["status"]["status"] != "Ready" {
                return Err(format!(
                    "{} {} not Ready at its generation: {}",
                    o["kind"], o["metadata"]["name"], o["status"]
                ));
            }
        }
        Ok(())
    }

    /// The named services Running at their generation, each controlling one
    /// InferenceService.
    pub fn running(&self, names: &[String]) -> Result<(), String> {
        let isvcs = self.objects("serving.kserve.io", "inferenceservices");
        for name in names {
            let s = self
                .services()
                .into_iter()
                .find(|s| s["metadata"]["name"] == name.as_str())
                .ok_or_else(|| format!("service {name} is gone"))?;
            if !at_generation(&s) || s["status"]["status"] != "Running" {
                return Err(format!(
                    "service {name} not Running at its generation: {}",
                    s["status"]
                ));
            }
            let uid = s["metadata"]["uid"].as_str().unwrap_or_default();
            let owned = isvcs.iter().filter(|i| controlled_by(i, uid)).count();
            if owned != 1 {
                return Err(format!("service {name} controls {owned} InferenceServices"));
            }
        }
        Ok(())
    }

    /// The template each service resolved (`status.resolvedTemplate.name`), by service name.
    pub fn selections(&self) -> BTreeMap<String, String> {
        self.services()
            .iter()
            .map(|s| {
                (
                    s["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    s["status"]["resolvedTemplate"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect()
    }

    /// Everything converged like a fault-free run: the same templates chosen
    /// (`expected_selections`) and the children shaped exactly like `expected`.
    pub fn converged(
        &self,
        names: &[String],
        expected: &Shape,
        expected_selections: &BTreeMap<String, String>,
    ) -> Result<(), String> {
        self.catalog_ready()?;
        self.running(names)?;
        let selections = self.selections();
        if &selections != expected_selections {
            return Err(format!(
                "templates chosen {selections:?}, a fault-free run chose {expected_selections:?}"
            ));
        }
        let shape = self.shape()?;
        if &shape != expected {
            return Err(format!("children differ: {}", diff(expected, &shape)));
        }
        Ok(())
    }

    /// Tears everything down (faults cleared first: the test's requests are not under test):
    /// deletes the services and waits for them (no finalizer holding one) and every child
    /// they controlled; then deletes the catalog model and what outlives services by design
    /// (Shared caches and their artifacts) and waits until no child of any kind is left and
    /// no AIM object is held by a finalizer.
    pub async fn teardown(&self, timeout: Duration) {
        self.cluster.faults().clear();
        for s in self.services() {
            self.delete(AIM, "AIMService", "aimservices", &s).await;
        }
        self.wait_until("services deleted", timeout, |w| {
            if let Some(s) = w.services().first() {
                return Err(format!(
                    "{} services left, e.g. {} with finalizers {}",
                    w.services().len(),
                    s["metadata"]["name"],
                    s["metadata"]["finalizers"]
                ));
            }
            let shape = w.shape()?;
            match shape.keys().find(|(_, _, kind, _)| kind == "AIMService") {
                Some(k) => Err(format!("{k:?} left after its service")),
                None => Ok(()),
            }
        })
        .await;
        for (kind, plural) in [
            ("AIMServiceTemplate", "aimservicetemplates"),
            ("AIMRuntimeConfig", "aimruntimeconfigs"),
            ("AIMTemplateCache", "aimtemplatecaches"),
            ("AIMArtifact", "aimartifacts"),
            ("AIMModel", "aimmodels"),
            ("AIMClusterModel", "aimclustermodels"),
        ] {
            for o in self.objects(AIM, plural) {
                self.delete(AIM, kind, plural, &o).await;
            }
        }
        self.wait_until("nothing left", timeout, |w| {
            for (group, plural) in CHILD_KINDS.into_iter().chain([
                (AIM, "aimclustermodels"),
                (AIM, "aimservices"),
                (AIM, "aimruntimeconfigs"),
            ]) {
                if let Some(o) = w.objects(group, plural).first() {
                    return Err(format!(
                        "{plural} {} left (finalizers {})",
                        o["metadata"]["name"], o["metadata"]["finalizers"]
                    ));
                }
            }
            Ok(())
        })
        .await;
    }

    async fn delete(&self, group: &str, kind: &str, plural: &str, o: &Value) {
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, "v1alpha1", kind),
            plural,
        );
        let api: Api<DynamicObject> = match o["metadata"]["namespace"].as_str() {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &ar),
            None => Api::all_with(self.client.clone(), &ar),
        };
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => panic!("deleting {kind} {name}: {e}"),
        }
    }
}

/// `status.observedGeneration` is `metadata.generation`.
pub fn at_generation(o: &Value) -> bool {
    let generation = o["metadata"]["generation"].as_i64();
    generation.is_some() && o["status"]["observedGeneration"].as_i64() == generation
}

/// The plural of an AIM kind.
pub fn plural(kind: &str) -> String {
    format!("{}s", kind.to_ascii_lowercase())
}

/// What `got` has more or less than `want`.
pub fn diff(want: &Shape, got: &Shape) -> String {
    let keys: BTreeSet<_> = want.keys().chain(got.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (w, g) = (
                want.get(k).copied().unwrap_or(0),
                got.get(k).copied().unwrap_or(0),
            );
            (w != g).then(|| format!("{k:?}: want {w}, have {g}"))
        })
        .collect::<Vec<_>>()
        .join("; ")
}
