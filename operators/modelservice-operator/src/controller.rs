//! Wiring the pipeline into `kube::runtime::Controller`, and the startup checks.
//!
//! Contract:
//! - [`run`] runs one controller per watched namespace (all when none is given) over
//!   `DeserializeGuard<ModelService>` (a malformed object cannot wedge it), owning every kind a
//!   ModelService creates whose CRD is installed (Deployments, Services, ConfigMaps,
//!   ServiceAccounts, Secrets, Roles, RoleBindings, InferencePools, HTTPRoutes,
//!   DestinationRules, PodMonitors, ServiceMonitors), each watched only through the
//!   `kinfer.dev/managed-by` label, so drift on any of them is repaired. At most `concurrency`
//!   reconciles run at once per controller.
//! - When the optional CRDs change, the controllers stop gracefully (in-flight reconciles
//!   finish) and start again with a new pipeline and engine for the new set of owned kinds
//!   (the engine reads its child kinds once); the restart lists every ModelService, so each is
//!   reconciled against the new set.
//! - Each reconcile is the engine's, which also adds, runs and releases the cluster-RBAC
//!   finalizer ([`crate::finalizer`]) with its own backoff. Everything stops gracefully when
//!   `shutdown` turns true.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kinfer_api::modelservice::ModelService;
use kinfer_state::metrics::Metrics;
use kinfer_state::{Engine, EngineConfig};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::runtime::{Controller, controller, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::optional_crds::OptionalCrds;
use crate::reconciler::{MANAGER, ModelServicePipeline, label_scheme};

/// How the controllers run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerOptions {
    /// Namespaces to watch; all when empty.
    pub namespaces: Vec<String>,
    /// Reconciles running at once per controller.
    pub concurrency: u16,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            namespaces: Vec::new(),
            concurrency: 4,
        }
    }
}

/// What every reconcile needs.
pub struct Context {
    /// The engine (shared across controller restarts: metrics and backoff survive).
    pub engine: Engine<ModelServicePipeline>,
    /// The client.
    pub client: Client,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

/// The context for `pipeline`.
pub fn context(client: Client, pipeline: ModelServicePipeline, metrics: Metrics) -> Arc<Context> {
    Arc::new(Context {
        engine: Engine::new(
            pipeline,
            client.clone(),
            EngineConfig::new(label_scheme()),
            metrics,
        ),
        client,
    })
}

/// One reconcile: the engine (which also runs the cluster-RBAC finalizer,
/// [`crate::finalizer`]); see the module contract.
pub async fn reconcile(
    object: Arc<DeserializeGuard<ModelService>>,
    ctx: Arc<Context>,
) -> Result<Action, Infallible> {
    Ok(ctx.engine.reconcile_guarded(&object).await.action)
}

#[allow(clippy::needless_pass_by_value, clippy::trivially_copy_pass_by_ref)] // the signature `Controller::run` requires
fn error_policy(
    _object: Arc<DeserializeGuard<ModelService>>,
    _error: &Infallible,
    _ctx: Arc<Context>,
) -> Action {
    // Unreachable: `reconcile` never fails (the engine decides every requeue).
    Action::requeue(Duration::from_secs(5))
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

type MsController = Controller<DeserializeGuard<ModelService>>;

fn owned<K>(c: MsController, client: &Client, namespace: Option<&str>) -> MsController
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

/// The controller of one namespace (all when `None`) owning the kinds `crds` allows.
fn build(
    client: &Client,
    namespace: Option<&str>,
    crds: OptionalCrds,
    concurrency: u16,
) -> MsController {
    let mut c = Controller::new(
        api::<DeserializeGuard<ModelService>>(client, namespace),
        watcher::Config::default(),
    )
    .with_config(controller::Config::default().concurrency(concurrency));
    c = owned::<Deployment>(c, client, namespace);
    c = owned::<Service>(c, client, namespace);
    c = owned::<ConfigMap>(c, client, namespace);
    c = owned::<ServiceAccount>(c, client, namespace);
    c = owned::<Secret>(c, client, namespace);
    c = owned::<Role>(c, client, namespace);
    c = owned::<RoleBinding>(c, client, namespace);
    if crds.inference_pool {
        c = owned::<kinfer_api::inference_pool::InferencePool>(c, client, namespace);
    }
    if crds.gateway_api {
        c = owned::<gateway_api::httproutes::HttpRoute>(c, client, namespace);
    }
    if crds.istio {
        c = owned::<kinfer_api::istio::DestinationRule>(c, client, namespace);
    }
    if crds.monitoring {
        c = owned::<kinfer_api::monitoring::PodMonitor>(c, client, namespace);
        c = owned::<kinfer_api::monitoring::ServiceMonitor>(c, client, namespace);
    }
    c
}

async fn run_one(
    ctx: Arc<Context>,
    namespace: Option<String>,
    crds: OptionalCrds,
    concurrency: u16,
    mut stop: watch::Receiver<bool>,
) {
    let ns = namespace.as_deref();
    tracing::info!(namespace = ns.unwrap_or("*"), ?crds, "controller starting");
    build(&ctx.client, ns, crds, concurrency)
        .graceful_shutdown_on(async move {
            // A dropped sender also means stop.
            let _ = stop.wait_for(|s| *s).await;
        })
        .run(reconcile, error_policy, Arc::clone(&ctx))
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "controller event");
            }
        })
        .await;
    tracing::info!(namespace = ns.unwrap_or("*"), "controller stopped");
}

/// Runs the controllers until `shutdown` turns true, restarting them (with a new engine for the
/// new set of child kinds) when `crds` changes; see the module contract.
pub async fn run(
    client: Client,
    pipeline: ModelServicePipeline,
    metrics: Metrics,
    options: ControllerOptions,
    mut crds: watch::Receiver<OptionalCrds>,
    mut shutdown: watch::Receiver<bool>,
) {
    let namespaces: Vec<Option<String>> = if options.namespaces.is_empty() {
        vec![None]
    } else {
        options.namespaces.iter().cloned().map(Some).collect()
    };
    loop {
        let current = *crds.borrow_and_update();
        let ctx = context(client.clone(), pipeline.with_crds(current), metrics.clone());
        let (stop_tx, stop_rx) = watch::channel(false);
        let all = futures::future::join_all(namespaces.iter().cloned().map(|ns| {
            run_one(
                Arc::clone(&ctx),
                ns,
                current,
                options.concurrency,
                stop_rx.clone(),
            )
        }));
        tokio::pin!(all);
        let restart = tokio::select! {
            _ = &mut all => return,
            _ = shutdown.wait_for(|s| *s) => false,
            changed = crds.changed() => changed.is_ok(),
        };
        stop_tx.send_replace(true);
        all.await;
        if !restart {
            return;
        }
        tracing::info!("optional CRDs changed; restarting the controllers");
    }
}
