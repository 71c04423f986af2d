//! The catalog controllers: models, templates, runtime configs and model
//! sources, and the watches they share.
//!
//! Contract: models, templates and runtime configs are reconciled from the operator's one
//! shared watch of their kind ([`super::shared`]); runtime config changes (deletions
//! included) re-enqueue the objects that name them ([`with_config_watches`]; cluster configs
//! everywhere, namespace configs in their namespace);
//! Secrets are neither listed nor watched (the operator reads a pull secret by name): a model or
//! model source that failed on one is checked again every `external_recheck`
//! ([`crate::Settings`]), as for registry failures; templates watch their discovery Jobs, serving
//! runtimes and (namespace templates) their own template cache, and are re-enqueued on GPU
//! changes ([`super::gpu`]).

use std::fmt::Debug;
use std::sync::Arc;

use futures::future::BoxFuture;
use kinfer_state::metrics::Metrics;
use kube::runtime::Controller;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use k8s_openapi::api::batch::v1::Job;
use kinfer_api::aim::{AIMClusterModelSource, AIMClusterRuntimeConfig, AIMRuntimeConfig};

use super::dependents::{Changed, Pair, concerned};
use super::gpu::gpu_templates;
use super::shared::SharedWatch;
use super::{Guarded, base, children_config, configured, drive, engine, external_engine, owner_of};
use crate::context::Context;
use crate::model::{ModelKind, ModelPipeline};
use crate::model_source::ModelSourcePipeline;
use crate::runtime_config::{RuntimeConfigKind, RuntimeConfigPipeline, resolve};
use crate::scheme;
use crate::template::{TemplateKind, TemplatePipeline};

/// The runtime configs' shared watches.
pub(super) type Configs<'a> = Pair<'a, AIMRuntimeConfig, AIMClusterRuntimeConfig>;

/// `c` re-enqueued by runtime config changes; see the module contract.
pub(super) fn with_config_watches<K>(
    c: Controller<Guarded<K>>,
    configs: &Configs<'_>,
    name_of: fn(&K) -> Option<&str>,
) -> Controller<Guarded<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    // Cluster configs: everywhere; namespace configs: in their namespace.
    let by_config = concerned(c.store(), move |config: &Changed, o: &K| {
        config.in_scope(o) && resolve::effective_name(name_of(o)) == config.name
    });
    configs.trigger(c, (Changed::named, Changed::named), by_config)
}

/// The model controller of `K`, reconciling from (and running) its shared watch.
pub(super) fn model_controller<K: ModelKind>(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    (n, namespaced, shared): (u16, bool, SharedWatch<K>),
    configs: &Configs<'_>,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let engine = external_engine(
        client,
        ModelPipeline::<K>::new(Arc::clone(ctx)),
        K::CONTROLLER,
        metrics,
        ctx.settings.external_recheck,
    );
    let c = configured(shared.controller(), n).watches(
        Api::<K::Template>::all(client.clone()),
        children_config(K::CONTROLLER),
        owner_of::<K, K::Template>(namespaced),
    );
    let c = with_config_watches(c, configs, |m: &K| {
        m.model_spec().runtime_config_name.as_deref()
    });
    with_shared(shared, &engine, drive(c, Arc::clone(&engine), shutdown))
}

/// `controller` together with the shared watch it reconciles from, trimmed for `engine`.
fn with_shared<K, P>(
    shared: SharedWatch<K>,
    engine: &Arc<kinfer_state::Engine<P>>,
    controller: BoxFuture<'static, ()>,
) -> BoxFuture<'static, ()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    P: kinfer_state::Pipeline,
{
    let trim = Arc::clone(engine);
    let watch = shared.run(move |meta| trim.trim_for_cache(meta));
    Box::pin(async move {
        // The watch never ends on its own; the controller ends on shutdown.
        futures::future::select(watch, controller).await;
    })
}

/// The template controller of `K`, reconciling from (and running) its shared watch.
pub(super) fn template_controller<K, R>(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    (n, namespaced, shared): (u16, bool, SharedWatch<K>),
    configs: &Configs<'_>,
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
    let c = configured(shared.controller(), n).watches(
        Api::<Job>::all(client.clone()),
        children_config(K::CONTROLLER),
        owner_of::<K, Job>(namespaced),
    );
    // The runtime (a KServe kind) is watched only while KServe's CRDs are installed.
    let c = if ctx
        .serving_crds
        .serves(&kube::core::ApiResource::erase::<R>(&()))
    {
        c.watches(
            Api::<R>::all(client.clone()),
            children_config(K::CONTROLLER),
            owner_of::<K, R>(namespaced),
        )
    } else {
        c
    };
    // A template that caches its sources reports its cache (`CacheWarm`, `resolvedCache`).
    let c = if K::CACHES {
        c.watches(
            Api::<kinfer_api::aim::AIMTemplateCache>::all(client.clone()),
            children_config(K::CONTROLLER),
            owner_of::<K, kinfer_api::aim::AIMTemplateCache>(namespaced),
        )
    } else {
        c
    };
    let c = gpu_templates(c, gpu_changes);
    let c = with_config_watches(c, configs, |t: &K| {
        t.common().runtime_config_name.as_deref()
    });
    with_shared(shared, &engine, drive(c, Arc::clone(&engine), shutdown))
}

/// The runtime config controller of `K`, reconciling from (and running) its shared watch.
pub(super) fn config_controller<K: RuntimeConfigKind>(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    (n, shared): (u16, SharedWatch<K>),
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let engine = engine(
        client,
        RuntimeConfigPipeline::<K>::new(Arc::clone(ctx)),
        K::CONTROLLER,
        metrics,
    );
    let c = configured(shared.controller(), n);
    with_shared(shared, &engine, drive(c, Arc::clone(&engine), shutdown))
}

pub(super) fn source_controller(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    n: u16,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let engine = external_engine(
        client,
        ModelSourcePipeline::new(Arc::clone(ctx)),
        scheme::controller::MODEL_SOURCE,
        metrics,
        ctx.settings.external_recheck,
    );
    drive(base::<AIMClusterModelSource>(client, n), engine, shutdown)
}
