//! Wiring the pipelines into `kube::runtime` controllers.
//!
//! Contract:
//! - [`client`] builds a `kube::Client` with kube's in-request retry off (the engine's
//!   per-object backoff decides).
//! - [`Operator::start`] creates the informer caches (Nodes; discovery Jobs by label), the
//!   shared [`Context`] and one engine per controller; [`Operator::run`] runs every controller
//!   until `shutdown` turns true, each over `DeserializeGuard<K>` with bounded concurrency and
//!   the operators' shared trigger backoff ([`kinfer_operator::controller::trigger_backoff`]).
//!   The namespaced serving controllers (services, template caches, artifacts) are built by
//!   [`kinfer_operator::controller::controller_for`] ([`namespaced`]: forget on re-list, the
//!   queue-wait metric, trimmed cache, `--debounce-ms`), their owned children watched through
//!   [`owns`]; the catalog controllers are generic over namespaced and cluster-scoped kinds,
//!   which `controller_for` does not serve, and keep [`base`] (no debounce).
//! - Children are watched through the `managed-by` label of their controller and mapped back
//!   to their owner by owner reference (cluster-scoped owners without a namespace, which
//!   kube's `owns` would add).
//! - One module per controller group: `catalog` (models, templates, runtime configs, model
//!   sources), `service` (AIMService), `serving` (template caches, artifacts), and `gpu`
//!   (the Node cache that re-enqueues GPU templates).

use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kinfer_api::aim::{
    AIMClusterModel, AIMClusterRuntimeConfig, AIMClusterServiceTemplate, AIMModel,
    AIMRuntimeConfig, AIMServiceTemplate,
};
use kinfer_api::kserve::{ClusterServingRuntime, ServingRuntime};
use kinfer_state::metrics::Metrics;
use kinfer_state::pipeline::Pipeline;
use kinfer_state::{Engine, EngineConfig};
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, controller, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use kinfer_operator::controller::{ControllerOptions, Scope, controller_for};

use crate::context::{Context, Settings};
use crate::scheme;
use crate::template::fetch::DISCOVERY_SELECTOR;
/// Errors of building the client or the operator.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// No usable kubeconfig or in-cluster configuration.
    #[error("load Kubernetes client configuration: {0}")]
    Config(#[source] kube::config::InferConfigError),
    /// The client could not be built.
    #[error("build Kubernetes client: {0}")]
    Client(#[source] Box<kube::Error>),
    /// The registry inspector could not be built.
    #[error("build registry inspector: {0}")]
    Inspector(#[source] kinfer_oci::OciError),
}

/// Selects the process's rustls crypto provider (ring, the workspace's one): kinfer-oci owns
/// the rule ([`kinfer_oci::ensure_crypto_provider`]); this name stays for callers (the CLI).
pub use kinfer_oci::ensure_crypto_provider as install_crypto_provider;

/// A client from the environment with kube's retry layer off.
pub async fn client() -> Result<Client, ControllerError> {
    install_crypto_provider();
    let mut config = kube::Config::infer()
        .await
        .map_err(ControllerError::Config)?;
    config.default_retry = false;
    Client::try_from(config).map_err(|e| ControllerError::Client(Box::new(e)))
}

/// An engine for `pipeline` with its controller's label scheme.
pub fn engine<P: Pipeline>(
    client: &Client,
    pipeline: P,
    controller: &str,
    metrics: &Metrics,
) -> Arc<Engine<P>> {
    Arc::new(Engine::new(
        pipeline,
        client.clone(),
        EngineConfig::new(scheme::scheme(controller)),
        metrics.clone(),
    ))
}

type Guarded<K> = DeserializeGuard<K>;

fn object_ref<K>(name: &str, namespace: Option<&str>) -> ObjectRef<Guarded<K>>
where
    K: Resource<DynamicType = ()>,
    Guarded<K>: Resource<DynamicType = ()>,
{
    let r = ObjectRef::new(name);
    match namespace {
        Some(ns) => r.within(ns),
        None => r,
    }
}

/// Maps a child to its controller owner of kind `K` (no namespace for cluster-scoped owners).
fn owner_of<K, C>(
    namespaced: bool,
) -> impl Fn(C) -> Vec<ObjectRef<Guarded<K>>> + Send + Sync + 'static
where
    K: Resource<DynamicType = ()> + 'static,
    Guarded<K>: Resource<DynamicType = ()>,
    C: Resource,
{
    move |child: C| {
        let ns = child.meta().namespace.clone();
        child
            .meta()
            .owner_references
            .iter()
            .flatten()
            .filter(|o| o.controller == Some(true) && o.kind == K::kind(&()))
            .map(|o| object_ref::<K>(&o.name, if namespaced { ns.as_deref() } else { None }))
            .collect()
    }
}

fn children_config(controller: &str) -> watcher::Config {
    watcher::Config::default().labels(&format!(
        "{}={}",
        kinfer_state::labels::MANAGED_BY,
        scheme::manager(controller)
    ))
}

fn base<K>(client: &Client, concurrency: u16) -> Controller<Guarded<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    Controller::new(
        Api::<Guarded<K>>::all(client.clone()),
        watcher::Config::default(),
    )
    .with_config(controller::Config::default().concurrency(concurrency))
    // The shared short pause after a watch error (100 ms doubling to 2 s, reset by the next
    // event), not kube's 800 ms to 30 s that stalls every reconcile after a compaction.
    .trigger_backoff(kinfer_operator::controller::trigger_backoff())
}

/// The controller of a namespaced pipeline's kind as every kinfer operator builds it
/// ([`kinfer_operator::controller::controller_for`]): its engine forgets objects deleted while
/// the watch was down (on a re-list) and on delete events, records each object's own triggers
/// (the queue-wait metric), caches the objects with `managedFields` cut to what the engine
/// reads, and waits `options.debounce` after a trigger (`--debounce-ms`). Cluster-scoped kinds
/// (and the controllers generic over both scopes) keep [`base`]: `controller_for` serves
/// namespaced kinds only.
fn namespaced<P>(
    client: &Client,
    (controller, engine): (&str, &Arc<Engine<P>>),
    options: &ControllerOptions,
) -> Controller<Guarded<P::Object>>
where
    P: Pipeline,
    P::Object: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
{
    let manager = scheme::manager(controller);
    controller_for(&Scope::new(client, None, &manager), engine, options)
}

/// `c` also watching its children of kind `C` (by `controller`'s `managed-by` label), each
/// event reconciling the child's controller owner and recorded as a trigger of it
/// ([`Scope::trigger_owners`]: the engine's queue-wait metric).
fn owns<P, C>(
    c: Controller<Guarded<P::Object>>,
    client: &Client,
    (controller, engine): (&str, &Arc<Engine<P>>),
) -> Controller<Guarded<P::Object>>
where
    P: Pipeline,
    P::Object: Resource<DynamicType = ()> + 'static,
    Guarded<P::Object>: Resource<DynamicType = ()>,
    C: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let triggers = engine.triggers();
    let manager = scheme::manager(controller);
    let scope = Scope::new(client, None, &manager).with_triggers(&triggers);
    let events =
        watcher(Api::<C>::all(client.clone()), children_config(controller)).touched_objects();
    c.watches_stream(scope.trigger_owners(events), owner_of::<P::Object, C>(true))
}

fn drive<P: Pipeline>(
    c: Controller<Guarded<P::Object>>,
    engine: Arc<Engine<P>>,
    mut shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()>
where
    P::Object: Resource<DynamicType = ()>,
{
    Box::pin(async move {
        c.graceful_shutdown_on(async move {
            let _ = shutdown.wait_for(|s| *s).await;
        })
        .run(
            kinfer_state::engine::reconcile,
            kinfer_state::engine::error_policy,
            engine,
        )
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "controller event");
            }
        })
        .await;
    })
}

/// The running operator: context, metrics and the controllers' futures.
pub struct Operator {
    /// The shared context.
    pub ctx: Arc<Context>,
    /// The metrics registry.
    pub metrics: Metrics,
    client: Client,
    caches: Vec<BoxFuture<'static, ()>>,
    gpu_changes: watch::Receiver<u64>,
}

impl Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator")
            .field("ctx", &self.ctx)
            .finish_non_exhaustive()
    }
}

fn cache<K>(api: Api<K>, wc: watcher::Config) -> (Store<K>, BoxFuture<'static, ()>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, wc))
        .default_backoff()
        .touched_objects();
    let fut = Box::pin(async move {
        stream
            .for_each(|r| async move {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "cache watch");
                }
            })
            .await;
    });
    (reader, fut)
}

impl Operator {
    /// Builds the caches and the context; nothing runs until [`Operator::run`].
    pub fn start(
        client: Client,
        settings: Settings,
        metrics: Metrics,
    ) -> Result<Self, ControllerError> {
        Self::start_with(
            client,
            Context::new(settings).map_err(ControllerError::Inspector)?,
            metrics,
        )
    }

    /// [`Operator::start`] with a prepared context (a test clock, a test inspector).
    pub fn start_with(
        client: Client,
        ctx: Context,
        metrics: Metrics,
    ) -> Result<Self, ControllerError> {
        let (gpu_tx, gpu_changes) = watch::channel(0);
        let (nodes, nodes_fut) = gpu::node_cache(Api::<Node>::all(client.clone()), gpu_tx);
        let (jobs, jobs_fut) = cache(
            Api::<Job>::all(client.clone()),
            watcher::Config::default().labels(DISCOVERY_SELECTOR),
        );
        Ok(Self {
            ctx: Arc::new(ctx.with_caches(nodes, jobs)),
            metrics,
            client,
            caches: vec![nodes_fut, jobs_fut],
            gpu_changes,
        })
    }

    /// Runs every controller until `shutdown` turns true.
    pub async fn run(self, shutdown: watch::Receiver<bool>) {
        let Self {
            ctx,
            metrics,
            client,
            caches,
            gpu_changes,
        } = self;
        let n = ctx.settings.concurrency;
        // The serving controllers ([`namespaced`]); the catalog ones take `n` alone.
        let serving_options = ControllerOptions {
            namespaces: Vec::new(),
            concurrency: n,
            debounce: ctx.settings.debounce,
        };
        let mut futures: Vec<BoxFuture<'static, ()>> = Vec::new();
        futures.extend(caches);

        futures.push(catalog::model_controller::<AIMModel>(
            &client,
            &ctx,
            &metrics,
            n,
            true,
            shutdown.clone(),
        ));
        futures.push(catalog::model_controller::<AIMClusterModel>(
            &client,
            &ctx,
            &metrics,
            n,
            false,
            shutdown.clone(),
        ));
        futures.push(catalog::template_controller::<
            AIMServiceTemplate,
            ServingRuntime,
        >(
            &client,
            &ctx,
            &metrics,
            (n, true),
            gpu_changes.clone(),
            shutdown.clone(),
        ));
        futures.push(catalog::template_controller::<
            AIMClusterServiceTemplate,
            ClusterServingRuntime,
        >(
            &client,
            &ctx,
            &metrics,
            (n, false),
            gpu_changes,
            shutdown.clone(),
        ));
        futures.push(catalog::config_controller::<AIMRuntimeConfig>(
            &client,
            &ctx,
            &metrics,
            n,
            shutdown.clone(),
        ));
        futures.push(catalog::config_controller::<AIMClusterRuntimeConfig>(
            &client,
            &ctx,
            &metrics,
            n,
            shutdown.clone(),
        ));
        futures.push(service::service_controller(
            &client,
            &ctx,
            &metrics,
            &serving_options,
            shutdown.clone(),
        ));
        futures.push(catalog::source_controller(
            &client,
            &ctx,
            &metrics,
            n,
            shutdown.clone(),
        ));
        // Part 2, serving: template caches and artifacts.
        futures.push(serving::controllers(
            &client,
            &ctx,
            &metrics,
            &serving_options,
            shutdown.clone(),
        ));

        // The caches end with their watch streams: stop waiting for them on shutdown.
        let mut stop = shutdown;
        tokio::select! {
            _ = futures::future::join_all(futures) => {}
            _ = stop.wait_for(|s| *s) => {}
        }
    }
}

mod catalog;
mod gpu;
// Part 2, serving: the AIMTemplateCache and AIMArtifact controllers.
mod service;
mod serving;

pub use gpu::{GpuNodes, gpu_fingerprint};
