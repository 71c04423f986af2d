//! Wiring the pipelines into `kube::runtime` controllers.
//!
//! Contract:
//! - [`client`] builds a `kube::Client` with kube's in-request retry off (the engine's
//!   per-object backoff decides).
//! - [`Operator::start`] creates the informer caches (Nodes; discovery Jobs by label), the
//!   shared [`Context`] and one engine per controller; [`Operator::run`] runs every controller
//!   until `shutdown` turns true, each over `DeserializeGuard<K>` with bounded concurrency.
//! - Children are watched through the `managed-by` label of their controller and mapped back
//!   to their owner by owner reference (cluster-scoped owners without a namespace, which
//!   kube's `owns` would add).
//! - The Node cache re-enqueues templates that need a GPU only when a Node's GPU labels
//!   (`amd.com/*`, `beta.amd.com/*`, `nvidia.com/*`) or GPU capacity/allocatable change, or a
//!   GPU Node is deleted ([`GpuNodes`]); the trigger fires after the cache's store has taken
//!   the event, so the reconciles see the new Nodes. (`reconcile_on` needs kube's
//!   `unstable-runtime` feature.)
//! - Runtime config changes re-enqueue the models and templates that name them; Secret changes
//!   (metadata only) re-enqueue the models and model sources that name them as pull secrets.
//! - Part 2 registers its controllers here beside these.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Secret};
use kinfer_api::aim::{
    AIMClusterModel, AIMClusterModelSource, AIMClusterRuntimeConfig, AIMClusterServiceTemplate,
    AIMModel, AIMRuntimeConfig, AIMService, AIMServiceTemplate,
};
use kinfer_api::kserve::{ClusterServingRuntime, InferenceService, ServingRuntime};
use kinfer_state::metrics::Metrics;
use kinfer_state::pipeline::Pipeline;
use kinfer_state::{Engine, EngineConfig};
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, controller, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::context::{Context, Settings};
use crate::model::{ModelKind, ModelPipeline};
use crate::model_source::ModelSourcePipeline;
use crate::runtime_config::{RuntimeConfigKind, RuntimeConfigPipeline, resolve};
use crate::scheme;
use crate::service::ServicePipeline;
use crate::template::fetch::DISCOVERY_SELECTOR;
use crate::template::{TemplateKind, TemplatePipeline};

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

/// Re-enqueues everything in `store` that names runtime config `name` (cluster configs:
/// everywhere; namespace configs: in their namespace).
fn by_runtime_config<K>(
    store: Store<Guarded<K>>,
    name_of: fn(&K) -> Option<&str>,
) -> impl Fn(&str, Option<&str>) -> Vec<ObjectRef<Guarded<K>>> + Send + Sync + 'static
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    Guarded<K>: Resource<DynamicType = ()>,
{
    move |config: &str, namespace: Option<&str>| {
        store
            .state()
            .iter()
            .filter_map(|g| g.0.as_ref().ok())
            .filter(|o| namespace.is_none() || o.meta().namespace.as_deref() == namespace)
            .filter(|o| resolve::effective_name(name_of(o)) == config)
            .map(|o| object_ref::<K>(&o.name_any(), o.meta().namespace.as_deref()))
            .collect()
    }
}

fn with_config_watches<K>(
    c: Controller<Guarded<K>>,
    client: &Client,
    name_of: fn(&K) -> Option<&str>,
) -> Controller<Guarded<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let by_ns = by_runtime_config(c.store(), name_of);
    let by_cluster = by_runtime_config(c.store(), name_of);
    c.watches(
        Api::<AIMRuntimeConfig>::all(client.clone()),
        watcher::Config::default(),
        move |rc| by_ns(&rc.name_any(), rc.meta().namespace.as_deref()),
    )
    .watches(
        Api::<AIMClusterRuntimeConfig>::all(client.clone()),
        watcher::Config::default(),
        move |rc| by_cluster(&rc.name_any(), None),
    )
}

/// The GPU-relevant part of a Node: GPU labels and GPU capacity/allocatable.
pub fn gpu_fingerprint(node: &Node) -> u64 {
    let gpu_key = |k: &str| {
        k.starts_with("amd.com/") || k.starts_with("beta.amd.com/") || k.starts_with("nvidia.com/")
    };
    let labels: BTreeMap<&String, &String> =
        node.labels().iter().filter(|(k, _)| gpu_key(k)).collect();
    let status = node.status.as_ref();
    let resources =
        |m: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
            m.into_iter()
                .flatten()
                .filter(|(k, _)| gpu_key(k))
                .map(|(k, v)| (k.clone(), v.0.clone()))
                .collect::<BTreeMap<_, _>>()
        };
    let mut h = DefaultHasher::new();
    labels.hash(&mut h);
    resources(status.and_then(|s| s.capacity.as_ref())).hash(&mut h);
    resources(status.and_then(|s| s.allocatable.as_ref())).hash(&mut h);
    h.finish()
}

/// Tracks the GPU part of every Node to tell when GPU templates must be re-enqueued: a Node
/// whose GPU labels or capacity changed, a GPU Node deleted, or GPU Nodes missing from a
/// re-list (deleted while the watch was down). Nodes without GPU keys never count.
#[derive(Debug, Default)]
pub struct GpuNodes {
    seen: HashMap<String, u64>,
    relisted: Option<HashSet<String>>,
}

impl GpuNodes {
    /// Records `event`; true when the GPUs the cluster offers may have changed.
    pub fn observe(&mut self, event: &watcher::Event<Node>) -> bool {
        let empty = gpu_fingerprint(&Node::default());
        match event {
            watcher::Event::Init => {
                self.relisted = Some(HashSet::new());
                false
            }
            watcher::Event::InitApply(node) | watcher::Event::Apply(node) => {
                let name = node.name_any();
                if let Some(listed) = &mut self.relisted {
                    listed.insert(name.clone());
                }
                let fp = gpu_fingerprint(node);
                self.seen.insert(name, fp).unwrap_or(empty) != fp
            }
            watcher::Event::Delete(node) => self
                .seen
                .remove(&node.name_any())
                .is_some_and(|fp| fp != empty),
            watcher::Event::InitDone => {
                let Some(listed) = self.relisted.take() else {
                    return false;
                };
                let mut gone_gpu = false;
                self.seen.retain(|name, fp| {
                    let keep = listed.contains(name);
                    gone_gpu |= !keep && *fp != empty;
                    keep
                });
                gone_gpu
            }
        }
    }
}

/// Re-enqueues every template that needs a GPU whenever `changes` ticks (the Node cache
/// updated its store first, so the reconciles see the new Nodes).
fn gpu_templates<K: TemplateKind>(
    c: Controller<Guarded<K>>,
    changes: watch::Receiver<u64>,
) -> Controller<Guarded<K>> {
    let store = c.store();
    let ticks = futures::stream::unfold(changes, |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    });
    let refs = ticks.flat_map(move |()| {
        let refs: Vec<ObjectRef<Guarded<K>>> = store
            .state()
            .iter()
            .filter_map(|g| g.0.as_ref().ok())
            .filter(|t| {
                t.common()
                    .parameters
                    .hardware
                    .as_ref()
                    .is_some_and(|h| h.gpu.is_some())
            })
            .map(|t| object_ref::<K>(&t.name_any(), t.meta().namespace.as_deref()))
            .collect();
        futures::stream::iter(refs)
    });
    c.reconcile_on(refs)
}

/// The Node cache: a reflector whose events, after the store has taken them, tick `changes`
/// when the cluster's GPUs may have changed.
fn node_cache(
    api: Api<Node>,
    changes: watch::Sender<u64>,
) -> (Store<Node>, BoxFuture<'static, ()>) {
    let (reader, writer) = reflector::store();
    let stream =
        reflector::reflector(writer, watcher(api, watcher::Config::default())).default_backoff();
    let fut = Box::pin(async move {
        let mut tracker = GpuNodes::default();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(e) => {
                    if tracker.observe(&e) {
                        changes.send_modify(|n| *n = n.wrapping_add(1));
                    }
                }
                Err(e) => tracing::debug!(error = %e, "node cache watch"),
            }
        }
    });
    (reader, fut)
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
        let (nodes, nodes_fut) = node_cache(Api::<Node>::all(client.clone()), gpu_tx);
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
        let mut futures: Vec<BoxFuture<'static, ()>> = Vec::new();
        futures.extend(caches);

        futures.push(model_controller::<AIMModel>(
            &client,
            &ctx,
            &metrics,
            n,
            true,
            shutdown.clone(),
        ));
        futures.push(model_controller::<AIMClusterModel>(
            &client,
            &ctx,
            &metrics,
            n,
            false,
            shutdown.clone(),
        ));
        futures.push(template_controller::<AIMServiceTemplate, ServingRuntime>(
            &client,
            &ctx,
            &metrics,
            (n, true),
            gpu_changes.clone(),
            shutdown.clone(),
        ));
        futures.push(template_controller::<
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
        futures.push(config_controller::<AIMRuntimeConfig>(
            &client,
            &ctx,
            &metrics,
            n,
            shutdown.clone(),
        ));
        futures.push(config_controller::<AIMClusterRuntimeConfig>(
            &client,
            &ctx,
            &metrics,
            n,
            shutdown.clone(),
        ));
        futures.push(service_controller(
            &client,
            &ctx,
            &metrics,
            n,
            shutdown.clone(),
        ));
        futures.push(source_controller(
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

fn model_controller<K: ModelKind>(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    n: u16,
    namespaced: bool,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let engine = engine(
        client,
        ModelPipeline::<K>::new(Arc::clone(ctx)),
        K::CONTROLLER,
        metrics,
    );
    let c = base::<K>(client, n).watches(
        Api::<K::Template>::all(client.clone()),
        children_config(K::CONTROLLER),
        owner_of::<K, K::Template>(namespaced),
    );
    let c = with_config_watches(c, client, |m: &K| {
        m.model_spec().runtime_config_name.as_deref()
    });
    let system = ctx.settings.system_namespace.clone();
    let c = with_secret_watches(c, client, move |m: &K| {
        let ns = m.meta().namespace.clone().unwrap_or_else(|| system.clone());
        (ns, m.model_spec().image_pull_secrets.clone())
    });
    drive(c, engine, shutdown)
}

fn template_controller<K, R>(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    (n, namespaced): (u16, bool),
    gpu_changes: watch::Receiver<u64>,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()>
where
    K: TemplateKind<Runtime = R>,
    R: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let engine = engine(
        client,
        TemplatePipeline::<K>::new(Arc::clone(ctx)),
        K::CONTROLLER,
        metrics,
    );
    let c = base::<K>(client, n)
        .watches(
            Api::<Job>::all(client.clone()),
            children_config(K::CONTROLLER),
            owner_of::<K, Job>(namespaced),
        )
        .watches(
            Api::<R>::all(client.clone()),
            children_config(K::CONTROLLER),
            owner_of::<K, R>(namespaced),
        );
    let c = gpu_templates(c, gpu_changes);
    let c = with_config_watches(c, client, |t: &K| t.common().runtime_config_name.as_deref());
    drive(c, engine, shutdown)
}

fn config_controller<K: RuntimeConfigKind>(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    n: u16,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let engine = engine(
        client,
        RuntimeConfigPipeline::<K>::new(Arc::clone(ctx)),
        K::CONTROLLER,
        metrics,
    );
    drive(base::<K>(client, n), engine, shutdown)
}

fn service_controller(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    concurrency: u16,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let controller = scheme::controller::SERVICE;
    let engine = engine(
        client,
        ServicePipeline::new(Arc::clone(ctx)),
        controller,
        metrics,
    );
    let c = base::<AIMService>(client, concurrency)
        .watches(
            Api::<InferenceService>::all(client.clone()),
            children_config(controller),
            owner_of::<AIMService, InferenceService>(true),
        )
        .watches(
            Api::<gateway_api::httproutes::HttpRoute>::all(client.clone()),
            children_config(controller),
            owner_of::<AIMService, gateway_api::httproutes::HttpRoute>(true),
        )
        .watches(
            Api::<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>::all(client.clone()),
            children_config(controller),
            owner_of::<AIMService, k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>(
                true,
            ),
        );
    // Resolution and selection read models and templates: re-enqueue their namespace's services.
    let by_ns = serving::all_in(c.store());
    // Shared caches have no owner: a cache change re-enqueues the services using it.
    let cache_store = c.store();
    let c = c.watches(
        Api::<kinfer_api::aim::AIMTemplateCache>::all(client.clone()),
        watcher::Config::default(),
        move |tc| {
            let state = cache_store.state();
            let services = state.iter().filter_map(|g| g.0.as_ref().ok());
            serving::services_of_cache(&tc, services)
                .map(|s| object_ref::<AIMService>(&s.name_any(), s.meta().namespace.as_deref()))
                .collect::<Vec<_>>()
        },
    );
    // Inference pods (image pulls, crashes): back to the service whose InferenceService they
    // run. Only AIM's: KServe copies the InferenceService's labels (`aim.eai.amd.com/service`)
    // to its pods.
    let store = c.store();
    let c = c.watches(
        Api::<k8s_openapi::api::core::v1::Pod>::all(client.clone()),
        watcher::Config::default().labels(&format!(
            "{},{}",
            crate::service::runtime::ISVC_POD_LABEL,
            crate::service::runtime::AIM_POD_LABEL
        )),
        move |pod| {
            let isvc = pod
                .labels()
                .get(crate::service::runtime::ISVC_POD_LABEL)
                .cloned();
            store
                .state()
                .iter()
                .filter_map(|g| g.0.as_ref().ok())
                .filter(|s| s.meta().namespace == pod.meta().namespace)
                .filter(|s| crate::service::isvc::isvc_name(s).ok() == isvc)
                .map(|s| object_ref::<AIMService>(&s.name_any(), s.meta().namespace.as_deref()))
                .collect::<Vec<_>>()
        },
    );
    let (in_model_ns, all_models) = (by_ns.clone(), by_ns.clone());
    let c = c
        .watches(
            Api::<AIMModel>::all(client.clone()),
            watcher::Config::default(),
            move |m| in_model_ns(m.meta().namespace.as_deref()),
        )
        .watches(
            Api::<AIMClusterModel>::all(client.clone()),
            watcher::Config::default(),
            move |_| all_models(None),
        );
    let c = serving::with_template_watches(c, client, by_ns);
    let c = with_config_watches(c, client, |s: &AIMService| {
        s.spec.runtime_config_name.as_deref()
    });
    drive(c, engine, shutdown)
}

fn source_controller(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    n: u16,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let engine = engine(
        client,
        ModelSourcePipeline::new(Arc::clone(ctx)),
        scheme::controller::MODEL_SOURCE,
        metrics,
    );
    let system = ctx.settings.system_namespace.clone();
    let c = with_secret_watches(
        base::<AIMClusterModelSource>(client, n),
        client,
        move |s: &AIMClusterModelSource| (system.clone(), s.spec.image_pull_secrets.clone()),
    );
    drive(c, engine, shutdown)
}

/// Re-enqueues the objects that name a changed Secret as an image pull secret, so fixing a
/// Secret after a `SecretNotFound` or Auth failure retries at once (NOTES section g #8).
/// Name-scoped: `secrets_of` gives an object's pull secrets and the namespace they are read
/// from; only Secret metadata is watched, so no secret data reaches the operator this way.
fn with_secret_watches<K>(
    c: Controller<Guarded<K>>,
    client: &Client,
    secrets_of: impl Fn(
        &K,
    ) -> (
        String,
        Vec<k8s_openapi::api::core::v1::LocalObjectReference>,
    ) + Send
    + Sync
    + 'static,
) -> Controller<Guarded<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let store = c.store();
    let secrets = watcher(
        Api::<kube::core::PartialObjectMeta<Secret>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .touched_objects();
    c.watches_stream(
        secrets,
        move |secret: kube::core::PartialObjectMeta<Secret>| {
            let namespace = secret.metadata.namespace.unwrap_or_default();
            let name = secret.metadata.name.unwrap_or_default();
            store
                .state()
                .iter()
                .filter_map(|g| g.0.as_ref().ok())
                .filter(|o| {
                    let (ns, refs) = secrets_of(o);
                    ns == namespace && refs.iter().any(|r| r.name == name)
                })
                .map(|o| object_ref::<K>(&o.name_any(), o.meta().namespace.as_deref()))
                .collect::<Vec<_>>()
        },
    )
}

// Part 2, serving: the AIMTemplateCache and AIMArtifact controllers.
mod serving;

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;

    use super::*;

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Node::default()
        }
    }

    #[test]
    fn gpu_node_changes() {
        use watcher::Event as E;
        let mut t = GpuNodes::default();
        let gpu = node("g", &[("amd.com/gpu.device-id", "74a1")]);
        let plain = node("p", &[("kubernetes.io/os", "linux")]);
        assert!(!t.observe(&E::Init));
        assert!(t.observe(&E::InitApply(gpu.clone())), "a GPU node appears");
        assert!(
            !t.observe(&E::InitApply(plain.clone())),
            "a plain node does not count"
        );
        assert!(!t.observe(&E::InitDone));
        assert!(!t.observe(&E::Apply(gpu.clone())), "unchanged GPU part");
        let relabelled = node("p", &[("kubernetes.io/os", "windows")]);
        assert!(!t.observe(&E::Apply(relabelled)), "non-GPU labels");
        assert!(!t.observe(&E::Delete(plain)), "a plain node leaves");
        assert!(t.observe(&E::Delete(gpu.clone())), "a GPU node leaves");
        // Deleted while the watch was down: missing from the re-list.
        assert!(t.observe(&E::Apply(gpu)));
        assert!(!t.observe(&E::Init));
        assert!(t.observe(&E::InitDone), "the GPU node is gone");
    }
}
