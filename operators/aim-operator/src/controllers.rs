//! Wiring the pipelines into `kube::runtime` controllers.
//!
//! Contract:
//! - [`client`] builds a `kube::Client` with kube's in-request retry off (the engine's
//!   per-object backoff decides).
//! - [`Operator::run_following`] runs them over the serving CRDs installed, restarting on a
//!   change ([`crate::startup`]).
//! - [`Operator::start`] creates the informer caches (Nodes; discovery Jobs by label), the
//!   shared [`Context`] and one engine per controller; [`Operator::run`] runs every controller
//!   until `shutdown` turns true, each over `DeserializeGuard<K>` with bounded concurrency and
//!   the operators' shared trigger backoff ([`kinfer_operator::controller::trigger_backoff`]).
//!   The namespaced serving controllers (services, template caches, artifacts) are built by
//!   [`kinfer_operator::controller::controller_for`] ([`namespaced`]: forget on re-list, the
//!   queue-wait metric, trimmed cache, `--debounce-ms`), their owned children watched through
//!   [`owns_children`] (one label-scoped watch per child kind feeding the engine's owner index:
//!   no LIST of children per reconcile); the catalog controllers are generic over namespaced
//!   and cluster-scoped kinds, which `controller_for` does not serve: models, templates and
//!   runtime configs reconcile from the operator's one shared watch of their kind
//!   ([`shared`], [`configured`]), model sources from their own ([`base`]); no debounce.
//! - The reconciles read the AIM kinds from informer caches ([`crate::informers`]), filled
//!   here; model, template and runtime config events re-enqueue only the objects they concern
//!   ([`dependents`]).
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
use kinfer_state::child_watch::child_watch;
use kinfer_state::metrics::Metrics;
use kinfer_state::pipeline::Pipeline;
use kinfer_state::{Engine, EngineConfig, OwnerIndex};
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, controller, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use kinfer_operator::controller::{ControllerOptions, Scope, controller_for};

use self::shared::SharedWatch;
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

/// [`engine`] for a pipeline with external dependencies (registries, pull secrets read by
/// name): its user-fixable failures are checked again every `recheck`.
pub fn external_engine<P: Pipeline>(
    client: &Client,
    pipeline: P,
    controller: &str,
    metrics: &Metrics,
    recheck: std::time::Duration,
) -> Arc<Engine<P>> {
    let mut config = EngineConfig::new(scheme::scheme(controller));
    config.slow_recheck = recheck;
    Arc::new(Engine::new(
        pipeline,
        client.clone(),
        config,
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
    configured(
        Controller::new(
            Api::<Guarded<K>>::all(client.clone()),
            watcher::Config::default(),
        ),
        concurrency,
    )
}

/// `c` with `concurrency` and the shared trigger backoff (the catalog controllers).
fn configured<K>(c: Controller<Guarded<K>>, concurrency: u16) -> Controller<Guarded<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    c.with_config(controller::Config::default().concurrency(concurrency))
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

/// A watch of every `K` kept in a store (`managedFields` dropped: the reconciles never read
/// them) for a controller that is triggered by it and whose reconciles read that store: the
/// store is updated before the event is passed on (a re-list's objects once the list is in
/// the store: [`shared::touched_after_store`]), so a reconcile never reads an older copy
/// than the one that triggered it (a store of another watch can lag its trigger and leave the
/// reconcile with nothing to wake it again).
fn stored_watch<K>(
    client: &Client,
) -> (
    Store<Guarded<K>>,
    impl futures::Stream<Item = Result<Guarded<K>, watcher::Error>> + Send + 'static,
)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store();
    let events = shared::touched_after_store(
        reflector::reflector(
            writer,
            watcher(
                Api::<Guarded<K>>::all(client.clone()),
                watcher::Config::default(),
            )
            .default_backoff()
            .modify(|o| o.meta_mut().managed_fields = None),
        ),
        reader.clone(),
    );
    (reader, events)
}

/// An engine for `pipeline` ([`engine`]) that reads its children from an owner index, fed by
/// [`owns_children`].
fn indexed_engine<P: Pipeline>(
    client: &Client,
    pipeline: P,
    controller: &str,
    metrics: &Metrics,
) -> Arc<Engine<P>> {
    Arc::new(
        Engine::new(
            pipeline,
            client.clone(),
            EngineConfig::new(scheme::scheme(controller)),
            metrics.clone(),
        )
        .with_owner_index(Arc::new(OwnerIndex::new())),
    )
}

/// `c` owning every child kind of `engine`'s pipeline, each through one watch (by
/// `controller`'s `managed-by` label) that also feeds the engine's owner index
/// ([`kinfer_state::child_watch`]: `managedFields` cut to the operator's own apply entries),
/// so a reconcile reads its children without a LIST per kind; each event reconciles the
/// child's controller owner and is recorded as its trigger. An engine without an index
/// ([`engine`]) gets the same watches and keeps listing.
fn owns_children<P>(
    mut c: Controller<Guarded<P::Object>>,
    client: &Client,
    (controller, engine): (&str, &Arc<Engine<P>>),
    served: crate::startup::ServingCrds,
) -> Controller<Guarded<P::Object>>
where
    P: Pipeline,
    P::Object: Resource<DynamicType = ()> + 'static,
    Guarded<P::Object>: Resource<DynamicType = ()>,
{
    let index = engine
        .owner_index()
        .cloned()
        .unwrap_or_else(|| Arc::new(OwnerIndex::new()));
    let triggers = engine.triggers();
    let manager = scheme::manager(controller);
    let scope = Scope::new(client, None, &manager).with_triggers(&triggers);
    for kind in engine.pipeline().child_kinds() {
        if !served.serves(&kind.resource) {
            // The engine LISTs it per reconcile and reports it not installed.
            continue;
        }
        let events = child_watch(
            client,
            &kind,
            None,
            children_config(controller),
            Arc::clone(&index),
            &manager,
        );
        c = c.owns_stream_with(scope.trigger_owners(events), kind.resource.clone());
    }
    c
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
    catalog: Catalog,
    gpu_changes: watch::Receiver<u64>,
}

/// The catalog kinds' shared watches ([`shared`]), one per kind for the whole operator.
pub(crate) struct Catalog {
    models: SharedWatch<AIMModel>,
    cluster_models: SharedWatch<AIMClusterModel>,
    templates: SharedWatch<AIMServiceTemplate>,
    cluster_templates: SharedWatch<AIMClusterServiceTemplate>,
    configs: SharedWatch<AIMRuntimeConfig>,
    cluster_configs: SharedWatch<AIMClusterRuntimeConfig>,
}

impl Catalog {
    fn new(client: &Client) -> Self {
        Self {
            models: SharedWatch::new(client),
            cluster_models: SharedWatch::new(client),
            templates: SharedWatch::new(client),
            cluster_templates: SharedWatch::new(client),
            configs: SharedWatch::new(client),
            cluster_configs: SharedWatch::new(client),
        }
    }

    /// The runtime configs' pair ([`dependents::Pair`]).
    fn configs(&self) -> catalog::Configs<'_> {
        dependents::Pair {
            namespaced: &self.configs,
            cluster: &self.cluster_configs,
        }
    }

    /// The models' pair ([`dependents::Pair`]).
    fn models(&self) -> dependents::Pair<'_, AIMModel, AIMClusterModel> {
        dependents::Pair {
            namespaced: &self.models,
            cluster: &self.cluster_models,
        }
    }

    /// The templates' pair ([`dependents::Pair`]).
    fn templates(&self) -> dependents::Pair<'_, AIMServiceTemplate, AIMClusterServiceTemplate> {
        dependents::Pair {
            namespaced: &self.templates,
            cluster: &self.cluster_templates,
        }
    }
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
        let catalog = Catalog::new(&client);
        let ctx = ctx.with_caches(nodes, jobs);
        let informers = &ctx.informers;
        // Each slot is set here once (a fresh context's are empty), so a failed `set` cannot
        // happen; the serving kinds' slots are set by their controllers in `run`.
        let _ = informers.models.set(catalog.models.store());
        let _ = informers.cluster_models.set(catalog.cluster_models.store());
        let _ = informers.templates.set(catalog.templates.store());
        let _ = informers
            .cluster_templates
            .set(catalog.cluster_templates.store());
        let _ = informers.runtime_configs.set(catalog.configs.store());
        let _ = informers
            .cluster_runtime_configs
            .set(catalog.cluster_configs.store());
        Ok(Self {
            ctx: Arc::new(ctx),
            metrics,
            client,
            caches: vec![nodes_fut, jobs_fut],
            catalog,
            gpu_changes,
        })
    }

    /// [`Operator::start`] on a fresh context for every set of installed serving CRDs: runs
    /// until `shutdown` turns true, and stops and starts the controllers again (new caches,
    /// new context) whenever `crds` reports a KServe or Gateway API CRD installed or removed
    /// ([`crate::startup`]; [`kinfer_operator::restart_on_change`]). Controllers that cannot
    /// start end the run with the error.
    pub async fn run_following(
        client: Client,
        settings: Settings,
        metrics: Metrics,
        crds: watch::Receiver<kinfer_operator::InstalledCrds>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<(), ControllerError> {
        let failed = Arc::new(std::sync::Mutex::new(None));
        let failure = Arc::clone(&failed);
        kinfer_operator::restart_on_change(
            crds,
            crate::startup::ServingCrds::from_installed,
            shutdown,
            |served, stop| {
                let missing = served.missing();
                if !missing.is_empty() {
                    tracing::warn!(
                        missing = ?missing,
                        "serving CRDs not installed: the catalog runs; AIMServices report the missing kinds until they are installed"
                    );
                }
                let started = Context::new(settings.clone())
                    .map_err(ControllerError::Inspector)
                    .and_then(|ctx| {
                        Self::start_with(client.clone(), ctx.with_serving_crds(served), metrics.clone())
                    });
                let failure = Arc::clone(&failure);
                async move {
                    match started {
                        Ok(operator) => operator.run(stop).await,
                        // Ends the run: the binary exits non-zero.
                        Err(e) => {
                            *failure
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                        }
                    }
                }
            },
        )
        .await;
        let failed = failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        failed.map_or(Ok(()), Err)
    }

    /// Runs every controller until `shutdown` turns true (boxed: the controllers' state makes
    /// a large future).
    pub fn run(self, shutdown: watch::Receiver<bool>) -> BoxFuture<'static, ()> {
        Box::pin(self.run_controllers(shutdown))
    }

    async fn run_controllers(self, shutdown: watch::Receiver<bool>) {
        let Self {
            ctx,
            metrics,
            client,
            caches,
            catalog,
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

        // The serving controllers subscribe to the catalog's shared watches first: the catalog
        // controllers below take their watch and run it.
        futures.push(service::service_controller(
            &client,
            &ctx,
            &metrics,
            (&serving_options, &catalog),
            shutdown.clone(),
        ));
        // Serving: template caches and artifacts.
        futures.push(serving::controllers(
            &client,
            &ctx,
            &metrics,
            (&serving_options, &catalog),
            shutdown.clone(),
        ));
        let Catalog {
            models,
            cluster_models,
            templates,
            cluster_templates,
            configs,
            cluster_configs,
        } = catalog;
        // The runtime config watches run last: every controller above subscribes to them.
        let config_pair = dependents::Pair {
            namespaced: &configs,
            cluster: &cluster_configs,
        };
        futures.push(catalog::model_controller::<AIMModel>(
            &client,
            &ctx,
            &metrics,
            (n, true, models),
            &config_pair,
            shutdown.clone(),
        ));
        futures.push(catalog::model_controller::<AIMClusterModel>(
            &client,
            &ctx,
            &metrics,
            (n, false, cluster_models),
            &config_pair,
            shutdown.clone(),
        ));
        futures.push(catalog::template_controller::<
            AIMServiceTemplate,
            ServingRuntime,
        >(
            &client,
            &ctx,
            &metrics,
            (n, true, templates),
            &config_pair,
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
            (n, false, cluster_templates),
            &config_pair,
            gpu_changes,
            shutdown.clone(),
        ));
        futures.push(catalog::config_controller::<AIMRuntimeConfig>(
            &client,
            &ctx,
            &metrics,
            (n, configs),
            shutdown.clone(),
        ));
        futures.push(catalog::config_controller::<AIMClusterRuntimeConfig>(
            &client,
            &ctx,
            &metrics,
            (n, cluster_configs),
            shutdown.clone(),
        ));
        futures.push(catalog::source_controller(
            &client,
            &ctx,
            &metrics,
            n,
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
mod coalesce;
mod dependents;
mod gpu;
mod shared;
// Serving: the AIMTemplateCache and AIMArtifact controllers.
mod service;
mod serving;

pub use dependents::{Changed, model_concerns, template_concerns, template_concerns_cache};
pub use gpu::{GpuNodes, gpu_fingerprint};
