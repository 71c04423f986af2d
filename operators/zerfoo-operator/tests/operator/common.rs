//! The harness: a simulated test cluster with the CRDs installed, an engine driven one
//! reconcile at a time (or the real controller in the background), and bounded waits on
//! conditions instead of sleeps.

use std::sync::Arc;
use std::time::Duration;

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use kinfer_api::zerfoo::{
    CanarySpec, GatewayRef, HealthCheckSpec, ResourceSpec, ZerfooInferenceService,
    ZerfooInferenceServiceSpec,
};
use kinfer_state::metrics::Metrics;
use kinfer_state::{Engine, Report};
use kinfer_testkit::TestCluster;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::{Client, CustomResourceExt, Resource, ResourceExt};
use tokio::sync::watch;
use zerfoo_operator::controller::{self, ControllerOptions};
use zerfoo_operator::{OperatorConfig, ZerfooPipeline};

pub const NS: &str = "default";
pub const WAIT: Duration = Duration::from_secs(20);
/// The field manager of the HPA controller's `/scale` writes.
pub const HPA_MANAGER: &str = "kube-controller-manager";

pub struct Env {
    pub cluster: TestCluster,
    pub client: Client,
    pub engine: Arc<Engine<ZerfooPipeline>>,
    pub services: Api<ZerfooInferenceService>,
    pub deployments: Api<Deployment>,
    pub svcs: Api<Service>,
    pub hpas: Api<HorizontalPodAutoscaler>,
    pub routes: Api<HttpRoute>,
    stop: Option<watch::Sender<bool>>,
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(stop) = &self.stop {
            stop.send_replace(true);
        }
    }
}

/// Upstream's `validSpec()`: llama3-8b-q4, 2 replicas, 4 CPUs, 16Gi, 24Gi GPU memory,
/// health on /healthz every 10 s with a 5 s timeout.
pub fn valid_spec() -> ZerfooInferenceServiceSpec {
    ZerfooInferenceServiceSpec {
        model_ref: "llama3-8b-q4".into(),
        replicas: 2,
        min_replicas: None,
        max_replicas: None,
        resources: Some(ResourceSpec {
            cpu: Some("4".into()),
            memory: Some("16Gi".into()),
            gpu_memory: Some("24Gi".into()),
        }),
        canary: None,
        health_check: Some(HealthCheckSpec {
            path: "/healthz".into(),
            interval: "10s".into(),
            timeout: "5s".into(),
        }),
        gateway_ref: None,
    }
}

/// Every part on: [`valid_spec`] with a 20 % canary, autoscaling 2..10 and a Gateway.
pub fn full_spec() -> ZerfooInferenceServiceSpec {
    let mut spec = valid_spec();
    spec.canary = Some(CanarySpec {
        model_ref: "llama3-8b-q8".into(),
        weight: 20,
    });
    spec.min_replicas = Some(2);
    spec.max_replicas = Some(10);
    spec.gateway_ref = Some(GatewayRef {
        name: "public".into(),
        namespace: None,
        section_name: None,
    });
    spec
}

pub async fn env() -> Env {
    env_with(OperatorConfig::default()).await
}

pub async fn env_with(config: OperatorConfig) -> Env {
    let cluster = TestCluster::start_simulated().await.expect("test cluster");
    cluster
        .install_crds(&[ZerfooInferenceService::crd(), HttpRoute::crd()])
        .expect("crds");
    // The engine decides retries: kube's own retry layer off, as the operator runs it.
    let mut config_k = kube::Config::from_custom_kubeconfig(
        cluster.kubeconfig().expect("kubeconfig"),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    config_k.default_retry = false;
    let client = Client::try_from(config_k).expect("client");
    let engine = controller::engine(client.clone(), ZerfooPipeline::new(config), Metrics::new());
    Env {
        services: Api::namespaced(client.clone(), NS),
        deployments: Api::namespaced(client.clone(), NS),
        svcs: Api::namespaced(client.clone(), NS),
        hpas: Api::namespaced(client.clone(), NS),
        routes: Api::namespaced(client.clone(), NS),
        cluster,
        client,
        engine,
        stop: None,
    }
}

impl Env {
    /// Runs the real controller in the background until the env is dropped.
    pub fn start_controller(&mut self) {
        let (tx, rx) = watch::channel(false);
        tokio::spawn(controller::run(
            Arc::clone(&self.engine),
            self.client.clone(),
            ControllerOptions {
                namespaces: vec![NS.to_owned()],
                ..ControllerOptions::default()
            },
            rx,
        ));
        self.stop = Some(tx);
    }

    pub async fn create(
        &self,
        name: &str,
        spec: ZerfooInferenceServiceSpec,
    ) -> Result<ZerfooInferenceService, kube::Error> {
        let mut zis = ZerfooInferenceService::new(name, spec);
        zis.metadata.namespace = Some(NS.into());
        self.services.create(&PostParams::default(), &zis).await
    }

    pub async fn get(&self, name: &str) -> ZerfooInferenceService {
        self.services.get(name).await.expect("get service")
    }

    /// Replaces the spec (a user edit).
    pub async fn edit(&self, name: &str, f: impl FnOnce(&mut ZerfooInferenceServiceSpec)) {
        let mut zis = self.get(name).await;
        f(&mut zis.spec);
        self.services
            .replace(name, &PostParams::default(), &zis)
            .await
            .expect("edit");
    }

    pub async fn reconcile(&self, name: &str) -> Report {
        let zis = self.get(name).await;
        self.engine.reconcile(&zis).await
    }

    /// Reconciles until a reconcile writes nothing, letting the simulator catch up between.
    pub async fn converge(&self, name: &str) -> Report {
        for _ in 0..10 {
            let report = self.reconcile(name).await;
            if report.writes() == 0 {
                return report;
            }
            self.settle().await;
        }
        panic!("{name} did not converge");
    }

    /// Waits until the simulator has caught up with every Deployment, HPA and route.
    pub async fn settle(&self) {
        for d in self.deployments.list(&ListParams::default()).await.unwrap() {
            let generation = d.metadata.generation;
            wait_for(
                &self.deployments,
                &d.name_any(),
                move |d: Option<&Deployment>| {
                    d.is_none_or(|d| {
                        d.status.as_ref().and_then(|s| s.observed_generation) >= generation
                    })
                },
            )
            .await;
        }
        for h in self.hpas.list(&ListParams::default()).await.unwrap() {
            wait_for(
                &self.hpas,
                &h.name_any(),
                |h: Option<&HorizontalPodAutoscaler>| {
                    h.is_none_or(|h| {
                        h.status
                            .as_ref()
                            .is_some_and(|s| s.current_replicas.is_some())
                    })
                },
            )
            .await;
        }
        for r in self.routes.list(&ListParams::default()).await.unwrap() {
            wait_for(&self.routes, &r.name_any(), |r: Option<&HttpRoute>| {
                r.is_none_or(|r| r.status.as_ref().is_some_and(|s| !s.parents.is_empty()))
            })
            .await;
        }
    }

    /// Waits (bounded) until the service reports `ready`.
    pub async fn wait_ready(&self, name: &str) {
        wait_for(
            &self.services,
            name,
            |z: Option<&ZerfooInferenceService>| {
                z.is_some_and(|z| z.status.as_ref().is_some_and(|s| s.ready))
            },
        )
        .await;
    }

    pub async fn deployment(&self, name: &str) -> Deployment {
        self.deployments.get(name).await.expect("deployment")
    }

    /// Sets a Deployment's replicas as the HPA controller does: an update of `/scale` by
    /// `kube-controller-manager`; then lets the simulator catch up.
    pub async fn scale_as_hpa(&self, name: &str, replicas: i32) {
        self.scale_only(name, replicas).await;
        self.settle().await;
    }

    /// The HPA's `/scale` update alone.
    pub async fn scale_only(&self, name: &str, replicas: i32) {
        let mut scale = self.deployments.get_scale(name).await.expect("get scale");
        scale.spec.get_or_insert_default().replicas = Some(replicas);
        let pp = PostParams {
            field_manager: Some(HPA_MANAGER.into()),
            ..PostParams::default()
        };
        self.deployments
            .replace_scale(name, &pp, &scale)
            .await
            .expect("scale");
    }

    pub async fn deployment_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .deployments
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        names.sort();
        names
    }

    /// Stored changes (new resourceVersions) across every resource.
    pub fn mutations(&self) -> u64 {
        self.cluster.counters().mutations(None)
    }
}

/// Waits (bounded) until `cond` holds for the named object.
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    cond: impl Fn(Option<&K>) -> bool + Send + 'static,
) where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {name}"))
        .expect("watch");
}

/// The condition of `type_` in a service's status.
pub fn condition<'a>(
    zis: &'a ZerfooInferenceService,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    zis.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

pub fn condition_status(zis: &ZerfooInferenceService, type_: &str) -> String {
    condition(zis, type_)
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

/// The first container of a Deployment.
pub fn container(d: &Deployment) -> &k8s_openapi::api::core::v1::Container {
    &d.spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
}

pub fn replicas(d: &Deployment) -> Option<i32> {
    d.spec.as_ref().and_then(|s| s.replicas)
}

/// The field managers owning a Deployment's `spec.replicas`, sorted.
pub fn replicas_managers(d: &Deployment) -> Vec<String> {
    kinfer_state::handover::owners(
        &serde_json::to_value(d).unwrap(),
        &zerfoo_operator::reconciler::plan::replicas_field(),
    )
}

/// The route's backends as (service, weight).
pub fn backends(route: &HttpRoute) -> Vec<(String, i32)> {
    route.spec.rules.as_ref().unwrap()[0]
        .backend_refs
        .as_ref()
        .unwrap()
        .iter()
        .map(|b| (b.name.clone(), b.weight.unwrap_or(1)))
        .collect()
}
