//! Serving (AIM part 2): the AIMTemplateCache and AIMArtifact controllers, and the watches the
//! service and cache controllers share.
//!
//! Contract: templates re-enqueue every object of their namespace ([`all_in`],
//! [`with_template_watches`]). Unowned objects are mapped to the objects that use them, not
//! to their whole namespace (a download progress tick must not requeue every cache and
//! service): an artifact to the caches that list it in `status.artifacts`, created it
//! (`aim.eai.amd.com/template-cache.name`) or are not Ready yet (they may be about to adopt it)
//! ([`caches_of_artifact`]); a cache to the services whose `status.cache.templateCacheRef`
//! names it, that keep it (`aim.eai.amd.com/service`) or that are not Running yet
//! ([`services_of_cache`]). A cache also follows its runtime config; an artifact follows its
//! Jobs, PVC, its Jobs' pods (which carry the artifact's label from the pod template) and the
//! download pod's ServiceAccount, Role and RoleBinding.

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

use super::catalog::with_config_watches;
use super::{Guarded, children_config, drive, engine, namespaced, object_ref, owns};
use crate::context::Context;
use crate::scheme;
use kinfer_operator::controller::ControllerOptions;

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

/// The caches (of `caches`) that an artifact change concerns; see the module contract.
pub fn caches_of_artifact<'a>(
    artifact: &'a kinfer_api::aim::AIMArtifact,
    caches: impl IntoIterator<Item = &'a kinfer_api::aim::AIMTemplateCache> + 'a,
) -> impl Iterator<Item = &'a kinfer_api::aim::AIMTemplateCache> + 'a {
    let ns = artifact.meta().namespace.clone();
    let name = artifact.name_any();
    let creator = artifact
        .labels()
        .get(crate::cache::compose::CREATOR_LABEL)
        .cloned();
    caches.into_iter().filter(move |c| {
        c.meta().namespace == ns
            && (c.status.as_ref().is_none_or(|s| {
                s.status != kinfer_api::phase::Phase::Ready
                    || s.artifacts.values().any(|a| a.name == name)
            }) || creator.as_deref() == Some(scheme::label_value(&c.name_any()).as_str()))
    })
}

/// The services (of `services`) that a template cache change concerns; see the module
/// contract.
pub fn services_of_cache<'a>(
    cache: &'a kinfer_api::aim::AIMTemplateCache,
    services: impl IntoIterator<Item = &'a kinfer_api::aim::AIMService> + 'a,
) -> impl Iterator<Item = &'a kinfer_api::aim::AIMService> + 'a {
    let ns = cache.meta().namespace.clone();
    let name = cache.name_any();
    let keeper = cache
        .labels()
        .get(crate::service::cache::SERVICE_LABEL)
        .cloned();
    let owners: Vec<String> = cache
        .owner_references()
        .iter()
        .map(|o| o.uid.clone())
        .collect();
    services.into_iter().filter(move |s| {
        s.meta().namespace == ns
            && (s.status.as_ref().is_none_or(|st| {
                st.status != kinfer_api::aim::AIMServiceState::Running
                    || st
                        .cache
                        .as_ref()
                        .and_then(|c| c.template_cache_ref.as_ref())
                        .is_some_and(|r| r.name.as_deref() == Some(name.as_str()))
            }) || keeper.as_deref() == Some(scheme::label_value(&s.name_any()).as_str())
                || s.uid().is_some_and(|u| owners.contains(&u)))
    })
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
    options: &ControllerOptions,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    use kinfer_api::aim::{AIMArtifact, AIMTemplateCache};
    let caches = {
        let c = crate::cache::CONTROLLER;
        let engine = engine(
            client,
            crate::cache::CachePipeline::new(Arc::clone(ctx)),
            c,
            metrics,
        );
        // Shared artifacts have no owner: mapped to the caches using them; sources come from
        // templates: re-enqueue the namespace's caches (all caches for cluster templates).
        let base = namespaced(client, (c, &engine), options);
        let by_ns = all_in(base.store());
        let store = base.store();
        let c = base.watches(
            Api::<AIMArtifact>::all(client.clone()),
            watcher::Config::default(),
            move |a| {
                let state = store.state();
                let caches = state.iter().filter_map(|g| g.0.as_ref().ok());
                caches_of_artifact(&a, caches)
                    .map(|c| {
                        object_ref::<AIMTemplateCache>(&c.name_any(), c.meta().namespace.as_deref())
                    })
                    .collect::<Vec<_>>()
            },
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
        let it = (c, &engine);
        let c = namespaced(client, it, options);
        let c = owns::<_, Job>(c, client, it);
        let c = owns::<_, PersistentVolumeClaim>(c, client, it);
        // The download pod's ServiceAccount, Role and RoleBinding: a change or deletion by
        // someone else is repaired while the download runs.
        let c = owns::<_, ServiceAccount>(c, client, it);
        let c = owns::<_, Role>(c, client, it);
        let c = owns::<_, RoleBinding>(c, client, it);
        // The Jobs' pods (an image pull refused while the Job keeps waiting) carry the
        // artifact's label from the pod template.
        let c = c.watches(
            Api::<Pod>::all(client.clone()),
            children_config(it.0),
            |pod: Pod| {
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

#[cfg(test)]
mod tests {
    use kinfer_api::aim::{AIMArtifact, AIMService, AIMTemplateCache};
    use serde_json::json;

    use super::*;

    fn from<K: serde::de::DeserializeOwned>(v: serde_json::Value) -> K {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn cache(name: &str, ns: &str, status: &serde_json::Value) -> AIMTemplateCache {
        from(
            json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMTemplateCache",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"templateName": "t", "templateScope": "Namespace", "mode": "Shared"}, "status": status}),
        )
    }

    fn service(name: &str, status: &serde_json::Value) -> AIMService {
        from(
            json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"model": {"name": "m"}}, "status": status}),
        )
    }

    #[test]
    fn artifact_events_reach_only_the_caches_concerned() {
        let artifact: AIMArtifact = from(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
            "metadata": {"name": "art", "namespace": "ns",
                         "labels": {"aim.eai.amd.com/template-cache.name": "creator"}},
            "spec": {"sourceUri": "hf://org/m"},
            "status": {"status": "Progressing", "progress": {"percentage": 3}}}));
        let ready_other = json!({"status": "Ready", "artifacts": {"o": {
            "model": "o", "name": "other", "status": "Ready", "uid": "u"}}});
        let ready_user = json!({"status": "Ready", "artifacts": {"m": {
            "model": "m", "name": "art", "status": "Ready", "uid": "u"}}});
        let caches = [
            cache("creator", "ns", &ready_other),
            cache("user", "ns", &ready_user),
            cache("waiting", "ns", &json!({"status": "Progressing"})),
            cache("unrelated", "ns", &ready_other),
            cache("elsewhere", "other-ns", &json!({"status": "Progressing"})),
        ];
        let hit: Vec<String> = caches_of_artifact(&artifact, &caches)
            .map(ResourceExt::name_any)
            .collect();
        assert_eq!(hit, ["creator", "user", "waiting"]);
    }

    #[test]
    fn cache_events_reach_only_the_services_concerned() {
        let tc: AIMTemplateCache = from(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMTemplateCache",
            "metadata": {"name": "c", "namespace": "ns",
                         "labels": {"aim.eai.amd.com/service": "keeper"},
                         "ownerReferences": [{"apiVersion": "aim.eai.amd.com/v1alpha1",
                             "kind": "AIMService", "name": "owner", "uid": "uid-owner"}]},
            "spec": {"templateName": "t", "templateScope": "Namespace", "mode": "Shared"}}));
        let running = |cache: &str| json!({"status": "Running", "cache": {"templateCacheRef": {"name": cache}}});
        let services = [
            service("keeper", &running("x")),
            service("owner", &running("x")),
            service("user", &running("c")),
            service("starting", &json!({"status": "Starting"})),
            service("unrelated", &running("x")),
        ];
        let hit: Vec<String> = services_of_cache(&tc, &services)
            .map(ResourceExt::name_any)
            .collect();
        assert_eq!(hit, ["keeper", "owner", "user", "starting"]);
    }
}
