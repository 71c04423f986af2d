//! Wiring the pipeline into `kube::runtime::Controller`, and the startup checks.
//!
//! Contract:
//! - [`check_crd`] fails fast, with an install hint, when the ZerfooInferenceService CRD is not
//!   installed; [`routes_served`] tells whether Gateway API HTTPRoutes exist in the cluster
//!   (both through [`kinfer_operator::crds`]; the client comes from
//!   [`kinfer_operator::client`], with kube's retry layer off).
//! - [`run`] runs one controller per watched namespace (all namespaces when none is given)
//!   over `DeserializeGuard<ZerfooInferenceService>` (a malformed object cannot wedge it),
//!   owning Deployments, Services, HPAs and (when served) HTTPRoutes, each watched only through
//!   the `managed-by` label; at most `concurrency` reconciles at once per controller; stops
//!   gracefully (in-flight reconciles finish) when `shutdown` turns true.

use std::sync::Arc;

use futures::StreamExt;
use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use kinfer_api::zerfoo::ZerfooInferenceService;
use kinfer_operator::CrdError;
use kinfer_operator::crds;
use kinfer_state::metrics::Metrics;
use kinfer_state::{Engine, EngineConfig};
use kube::core::DeserializeGuard;
use kube::runtime::{Controller, controller, watcher};
use kube::{Api, Client, CustomResourceExt, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::reconciler::{MANAGER, ZerfooPipeline, label_scheme};

/// The HTTPRoute CRD's name.
pub const HTTPROUTE_CRD: &str = "httproutes.gateway.networking.k8s.io";

/// How to install the CRD, for the start-up error.
pub const INSTALL_HINT: &str =
    "`kubectl apply -k deploy/crds` or `zerfoo-operator crds | kubectl apply -f -`";

/// How the controllers run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerOptions {
    /// Namespaces to watch; all when empty.
    pub namespaces: Vec<String>,
    /// Reconciles running at once per controller.
    pub concurrency: u16,
    /// Whether to own HTTPRoutes (see [`routes_served`]).
    pub routes: bool,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            namespaces: Vec::new(),
            concurrency: 4,
            routes: true,
        }
    }
}

/// Fails with an install hint unless the ZerfooInferenceService CRD is installed.
pub async fn check_crd(client: &Client) -> Result<(), CrdError> {
    crds::require(client, &[ZerfooInferenceService::crd_name()], INSTALL_HINT).await
}

/// Whether the cluster serves Gateway API HTTPRoutes.
pub async fn routes_served(client: &Client) -> Result<bool, CrdError> {
    crds::installed(client, HTTPROUTE_CRD).await
}

/// The engine for `pipeline`.
pub fn engine(
    client: Client,
    pipeline: ZerfooPipeline,
    metrics: Metrics,
) -> Arc<Engine<ZerfooPipeline>> {
    Arc::new(Engine::new(
        pipeline,
        client,
        EngineConfig::new(label_scheme()),
        metrics,
    ))
}

fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    <K as Resource>::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

fn owned<K>(
    c: Controller<DeserializeGuard<ZerfooInferenceService>>,
    client: &Client,
    namespace: Option<&str>,
) -> Controller<DeserializeGuard<ZerfooInferenceService>>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let children = watcher::Config::default()
        .labels(&format!("{}={MANAGER}", kinfer_state::labels::MANAGED_BY));
    c.owns(api::<K>(client, namespace), children)
}

async fn run_one(
    engine: Arc<Engine<ZerfooPipeline>>,
    client: Client,
    namespace: Option<String>,
    options: ControllerOptions,
    mut shutdown: watch::Receiver<bool>,
) {
    let ns = namespace.as_deref();
    let mut c = Controller::new(
        api::<DeserializeGuard<ZerfooInferenceService>>(&client, ns),
        watcher::Config::default(),
    )
    .with_config(controller::Config::default().concurrency(options.concurrency));
    c = owned::<Deployment>(c, &client, ns);
    c = owned::<Service>(c, &client, ns);
    c = owned::<HorizontalPodAutoscaler>(c, &client, ns);
    if options.routes {
        c = owned::<HttpRoute>(c, &client, ns);
    }
    tracing::info!(namespace = ns.unwrap_or("*"), "controller starting");
    c.graceful_shutdown_on(async move {
        // A dropped sender also means shut down.
        let _ = shutdown.wait_for(|stop| *stop).await;
    })
    .run(
        kinfer_state::engine::reconcile,
        kinfer_state::engine::error_policy,
        engine,
    )
    .for_each(|result| async move {
        if let Err(e) = result {
            tracing::debug!(error = %e, "controller event");
        }
    })
    .await;
    tracing::info!(namespace = ns.unwrap_or("*"), "controller stopped");
}

/// Runs the controllers until `shutdown` turns true; see the module contract.
pub async fn run(
    engine: Arc<Engine<ZerfooPipeline>>,
    client: Client,
    options: ControllerOptions,
    shutdown: watch::Receiver<bool>,
) {
    let namespaces: Vec<Option<String>> = if options.namespaces.is_empty() {
        vec![None]
    } else {
        options.namespaces.iter().cloned().map(Some).collect()
    };
    futures::future::join_all(namespaces.into_iter().map(|ns| {
        run_one(
            Arc::clone(&engine),
            client.clone(),
            ns,
            options.clone(),
            shutdown.clone(),
        )
    }))
    .await;
}
