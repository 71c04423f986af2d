//! Serving (AIM part 2): the AIMTemplateCache and AIMArtifact controllers, and the watches the
//! service and cache controllers share.
//!
//! Contract: unowned objects (shared caches and artifacts) and templates re-enqueue every
//! object of their namespace ([`all_in`], [`with_template_watches`]); a cache also follows its
//! artifacts and runtime config; an artifact follows its Jobs, PVC and its Jobs' pods (which
//! carry the artifact's label from the pod template).

use std::fmt::Debug;
use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::Job;
use kinfer_api::aim::{AIMClusterServiceTemplate, AIMServiceTemplate};
use kinfer_state::metrics::Metrics;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::{
    Guarded, base, children_config, drive, engine, object_ref, owner_of, with_config_watches,
};
use crate::context::Context;
use crate::scheme;

/// Every object of `store` in `namespace` (all for `None`), to re-enqueue on a change of
/// something they read (models, templates, unowned caches and artifacts).
pub(super) fn all_in<K>(
    store: Store<Guarded<K>>,
) -> impl Fn(Option<&str>) -> Vec<ObjectRef<Guarded<K>>> + Send + Sync + Clone + 'static
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    Guarded<K>: Resource<DynamicType = ()>,
{
    move |namespace: Option<&str>| {
        store
            .state()
            .iter()
            .filter_map(|g| g.0.as_ref().ok())
            .filter(|o| namespace.is_none() || o.meta().namespace.as_deref() == namespace)
            .map(|o| object_ref::<K>(&o.name_any(), o.meta().namespace.as_deref()))
            .collect()
    }
}

/// Re-enqueues through `by_ns` on template changes: a namespace template's namespace, every
/// namespace for a cluster template.
pub(super) fn with_template_watches<K>(
    c: Controller<Guarded<K>>,
    client: &Client,
    by_ns: impl Fn(Option<&str>) -> Vec<ObjectRef<Guarded<K>>> + Send + Sync + Clone + 'static,
) -> Controller<Guarded<K>>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let in_template_ns = by_ns.clone();
    c.watches(
        Api::<AIMServiceTemplate>::all(client.clone()),
        watcher::Config::default(),
        move |t| in_template_ns(t.meta().namespace.as_deref()),
    )
    .watches(
        Api::<AIMClusterServiceTemplate>::all(client.clone()),
        watcher::Config::default(),
        move |_| by_ns(None),
    )
}

pub(super) fn controllers(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    n: u16,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    use kinfer_api::aim::{AIMArtifact, AIMTemplateCache};
    let caches = {
        let c = crate::cache::CONTROLLER;
        let engine = engine(
            client,
            crate::cache::CachePipeline::new(Arc::clone(ctx)),
            c,
            metrics,
        );
        // Shared artifacts have no owner, and sources come from templates: re-enqueue the
        // namespace's caches (all caches for cluster templates).
        let base = base::<AIMTemplateCache>(client, n);
        let by_ns = all_in(base.store());
        let on_artifact = by_ns.clone();
        let c = base.watches(
            Api::<AIMArtifact>::all(client.clone()),
            watcher::Config::default(),
            move |a| on_artifact(a.meta().namespace.as_deref()),
        );
        let c = with_template_watches(c, client, by_ns);
        let c = with_config_watches(c, client, |tc: &AIMTemplateCache| {
            tc.spec.runtime_config_name.as_deref()
        });
        drive(c, engine, shutdown.clone())
    };
    let artifacts = {
        let c = crate::artifact::CONTROLLER;
        let engine = engine(
            client,
            crate::artifact::ArtifactPipeline::new(Arc::clone(ctx)),
            c,
            metrics,
        );
        let c = base::<AIMArtifact>(client, n)
            .watches(
                Api::<Job>::all(client.clone()),
                children_config(c),
                owner_of::<AIMArtifact, Job>(true),
            )
            .watches(
                Api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>::all(client.clone()),
                children_config(c),
                owner_of::<AIMArtifact, k8s_openapi::api::core::v1::PersistentVolumeClaim>(true),
            )
            // The Jobs' pods (an image pull refused while the Job keeps waiting) carry the
            // artifact's label from the pod template.
            .watches(
                Api::<k8s_openapi::api::core::v1::Pod>::all(client.clone()),
                children_config(c),
                |pod: k8s_openapi::api::core::v1::Pod| {
                    let key = scheme::scheme(crate::artifact::CONTROLLER).parent_key();
                    pod.labels()
                        .get(&key)
                        .map(|a| object_ref::<AIMArtifact>(a, pod.meta().namespace.as_deref()))
                },
            );
        let c = with_config_watches(c, client, |a: &AIMArtifact| {
            a.spec.runtime_config_name.as_deref()
        });
        drive(c, engine, shutdown)
    };
    Box::pin(async move {
        futures::join!(caches, artifacts);
    })
}
