//! The in-process Zerfoo operator on a simulated test cluster, and the invariants every
//! fault-matrix and bad-input case checks: converged, children exactly as planned, no
//! duplicates, no orphans, and deletion leaves nothing behind (no finalizer holds an object).
//!
//! The test's own creates go through the cluster in-process ([`TestCluster::create_object`]),
//! so injected faults and counters see the operator's requests only.

#![allow(dead_code)] // each test binary uses its own subset

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use gateway_api::httproutes::HttpRoute;
use kinfer_api::zerfoo::ZerfooInferenceService;
use kinfer_state::metrics::Metrics;
use kinfer_state::{Engine, EngineConfig, OwnerIndex};
use kinfer_testkit::TestCluster;
use kinfer_testkit::operator::{OperatorTask, controlled_by, controllers};
use kube::api::{Api, DeleteParams, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, CustomResourceExt};
use serde_json::{Value, json};
use zerfoo_operator::controller::{self, ControllerOptions};
use zerfoo_operator::{OperatorConfig, ZerfooPipeline};

pub const NS: &str = "default";
pub const GROUP: &str = "zerfoo.feza.ai";
pub const PLURAL: &str = "zerfooinferenceservices";
pub const API_VERSION: &str = "zerfoo.feza.ai/v1";

/// A simulated cluster and, when running, the Zerfoo operator in this process.
pub struct Zerfoo {
    /// First, so it is dropped (killed) before the cluster goes.
    operator: Option<OperatorTask>,
    pub cluster: TestCluster,
    pub client: Client,
}

/// A valid spec: one replica, CPU and memory, no canary, autoscaling or gateway (three
/// children: Deployment `<name>-primary`, Services `<name>-svc` and `<name>-primary`).
pub fn spec() -> Value {
    json!({ "modelRef": "llama3-8b-q4", "replicas": 1, "resources": { "cpu": "1", "memory": "2Gi" } })
}

impl Zerfoo {
    pub async fn start() -> Self {
        let cluster = TestCluster::start_simulated().await.expect("test cluster");
        cluster
            .install_crds(&[ZerfooInferenceService::crd(), HttpRoute::crd()])
            .expect("crds");
        // kube's retry layer off, as the operator binary runs it: the engine decides retries.
        let client =
            kinfer_operator::client::from_kubeconfig(cluster.kubeconfig().expect("kubeconfig"))
                .await
                .expect("client");
        Self {
            operator: None,
            cluster,
            client,
        }
    }

    /// Starts the controllers (a fresh engine: a restarted process keeps no memory).
    pub fn run_operator(&mut self) {
        let engine = controller::engine(
            self.client.clone(),
            ZerfooPipeline::new(OperatorConfig::default()),
            Metrics::new(),
        );
        self.run_engine(engine);
    }

    /// Starts the controllers on an engine with `config` (a scaled backoff or grace, so a
    /// schedule of minutes plays out in seconds), wired like [`controller::engine`]'s.
    pub fn run_operator_with(&mut self, config: EngineConfig) {
        let engine = Arc::new(
            Engine::new(
                ZerfooPipeline::new(OperatorConfig::default()),
                self.client.clone(),
                config,
                Metrics::new(),
            )
            .with_owner_index(Arc::new(OwnerIndex::new())),
        );
        self.run_engine(engine);
    }

    fn run_engine(&mut self, engine: Arc<Engine<ZerfooPipeline>>) {
        let client = self.client.clone();
        let options = ControllerOptions {
            namespaces: vec![NS.to_owned()],
            ..ControllerOptions::default()
        };
        self.operator = Some(OperatorTask::spawn(|shutdown| {
            controller::run(engine, client, options, shutdown)
        }));
    }

    /// Whether the controllers are still running (a panic in a reconcile ends their task).
    pub fn operator_alive(&self) -> bool {
        self.operator.as_ref().is_some_and(OperatorTask::alive)
    }

    /// Kills the controllers where they stand (mid-reconcile included): no graceful shutdown.
    pub fn kill_operator(&mut self) {
        self.operator = None;
    }

    /// Creates a service in-process (the raw spec, so hostile specs reach the server as is).
    pub fn create(&self, name: &str, spec: &Value) -> Result<Value, kinfer_testkit::Error> {
        self.cluster.create_object(
            API_VERSION,
            PLURAL,
            NS,
            json!({
                "apiVersion": API_VERSION,
                "kind": "ZerfooInferenceService",
                "metadata": { "name": name, "namespace": NS },
                "spec": spec.clone(),
            }),
        )
    }

    pub fn services(&self) -> Vec<Arc<Value>> {
        self.cluster.objects(GROUP, PLURAL)
    }

    pub fn service(&self, name: &str) -> Option<Arc<Value>> {
        self.services()
            .into_iter()
            .find(|s| s["metadata"]["name"] == name)
    }

    /// Deployments and Services, by `(kind, name)`.
    pub fn children(&self) -> BTreeMap<(String, String), Arc<Value>> {
        let mut out = BTreeMap::new();
        for (kind, group, plural) in [
            ("Deployment", "apps", "deployments"),
            ("Service", "", "services"),
        ] {
            for o in self.cluster.objects(group, plural) {
                let name = o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                out.insert((kind.to_owned(), name), o);
            }
        }
        out
    }

    /// Polls `cond` until it holds ([`kinfer_testkit::wait::until`]); panics with `what` and
    /// the last complaint after `timeout`.
    pub async fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut cond: impl FnMut(&Self) -> Result<(), String>,
    ) {
        kinfer_testkit::wait::until(what, timeout, || cond(self)).await;
    }

    /// Every named service Ready at its generation, with exactly its three children, each
    /// controlled by it alone; no other Deployment or Service in the namespace.
    pub fn converged(&self, names: &[String]) -> Result<(), String> {
        let services = self.services();
        let mut expected = BTreeSet::new();
        let mut uid_of = BTreeMap::new();
        for name in names {
            let s = services
                .iter()
                .find(|s| s["metadata"]["name"] == name.as_str())
                .ok_or_else(|| format!("{name} is gone"))?;
            let generation = s["metadata"]["generation"].as_i64();
            if s["status"]["observedGeneration"].as_i64() != generation {
                return Err(format!("{name}: status not at generation {generation:?}"));
            }
            if s["status"]["ready"] != true {
                return Err(format!("{name}: not ready: {}", s["status"]));
            }
            let uid = s["metadata"]["uid"].as_str().unwrap_or_default().to_owned();
            for (kind, child) in [
                ("Deployment", format!("{name}-primary")),
                ("Service", format!("{name}-svc")),
                ("Service", format!("{name}-primary")),
            ] {
                uid_of.insert((kind.to_owned(), child.clone()), uid.clone());
                expected.insert((kind.to_owned(), child));
            }
        }
        self.children_exactly(&expected, &uid_of)
    }

    /// Like [`Self::converged`] for `names` only: other services (and their children) may
    /// exist beside them.
    pub fn converged_some(&self, names: &[String]) -> Result<(), String> {
        let children = self.children();
        for name in names {
            let s = self
                .service(name)
                .ok_or_else(|| format!("{name} is gone"))?;
            let generation = s["metadata"]["generation"].as_i64();
            if s["status"]["observedGeneration"].as_i64() != generation
                || s["status"]["ready"] != true
            {
                return Err(format!(
                    "{name}: not ready at generation {generation:?}: {}",
                    s["status"]
                ));
            }
            let uid = s["metadata"]["uid"].as_str().unwrap_or_default();
            for (kind, child) in [
                ("Deployment", format!("{name}-primary")),
                ("Service", format!("{name}-svc")),
                ("Service", format!("{name}-primary")),
            ] {
                let o = children
                    .get(&(kind.to_owned(), child.clone()))
                    .ok_or_else(|| format!("{name}: no {kind} {child}"))?;
                if !controlled_by(o, uid) {
                    return Err(format!("{name}: {kind} {child} is not controlled by it"));
                }
            }
        }
        Ok(())
    }

    /// The children are exactly `expected` (the built-in `kubernetes` Service aside), each
    /// with one controller owner reference, to the uid in `uid_of`.
    pub fn children_exactly(
        &self,
        expected: &BTreeSet<(String, String)>,
        uid_of: &BTreeMap<(String, String), String>,
    ) -> Result<(), String> {
        let children = self.children();
        let present: BTreeSet<(String, String)> = children
            .keys()
            .filter(|(k, n)| !(k == "Service" && n == "kubernetes"))
            .cloned()
            .collect();
        if &present != expected {
            let missing: Vec<_> = expected.difference(&present).collect();
            let extra: Vec<_> = present.difference(expected).collect();
            return Err(format!(
                "children differ: missing {missing:?}, unexpected {extra:?}"
            ));
        }
        for (key, o) in &children {
            let Some(uid) = uid_of.get(key) else { continue };
            let controllers = controllers(o);
            if controllers.len() != 1 || controllers[0]["uid"] != uid.as_str() {
                return Err(format!(
                    "{key:?}: controller references {controllers:?}, want {uid}"
                ));
            }
        }
        Ok(())
    }

    /// Deletes every service (faults cleared first: the test's requests are not under test)
    /// and waits until no service and no child is left.
    pub async fn delete_all(&self, timeout: Duration) {
        self.cluster.faults().clear();
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(GROUP, "v1", "ZerfooInferenceService"),
            PLURAL,
        );
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), NS, &ar);
        for s in self.services() {
            let name = s["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => panic!("deleting {name}: {e}"),
            }
        }
        self.wait_until("deletion", timeout, |z| {
            let left = z.services();
            if let Some(s) = left.first() {
                return Err(format!(
                    "{} services left, e.g. {} with finalizers {}",
                    left.len(),
                    s["metadata"]["name"],
                    s["metadata"]["finalizers"]
                ));
            }
            z.children_exactly(&BTreeSet::new(), &BTreeMap::new())
        })
        .await;
    }
}
