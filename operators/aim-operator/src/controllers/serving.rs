//! Serving: the AIMTemplateCache and AIMArtifact controllers, and the watches the
//! service and cache controllers share.
//!
//! Contract: a template change re-enqueues the caches of that template
//! ([`super::dependents::template_concerns_cache`]). Unowned objects are mapped to the objects that
//! use them, not to their whole namespace (a download progress tick must not requeue every cache and
//! service): an artifact to the caches that list it in `status.artifacts`, created it
//! (`aim.eai.amd.com/template-cache.name`) or are not Ready yet (they may be about to adopt it)
//! ([`caches_of_artifact`]); a cache to the services whose `status.cache.templateCacheRef`
//! names it, that keep it (`aim.eai.amd.com/service`) or that are not Running yet
//! ([`services_of_cache`]). A cache also follows its runtime config; an artifact follows its
//! Jobs, PVC, its Jobs' pods (which carry the artifact's label from the pod template) and the
//! download pod's ServiceAccount, Role and RoleBinding. The caches' and artifacts' controller
//! caches also serve the reconciles' reads ([`crate::informers`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use kinfer_state::metrics::Metrics;
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::watch;

use super::catalog::with_config_watches;
use super::dependents::{Changed, concerned, template_concerns_cache};
use super::{
    Catalog, Guarded, children_config, drive, indexed_engine, namespaced, object_ref,
    owns_children, stored_watch,
};
use crate::context::Context;
use crate::scheme;
use kinfer_operator::controller::ControllerOptions;

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

pub(super) fn controllers(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    (options, catalog): (&ControllerOptions, &Catalog),
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    use k8s_openapi::api::core::v1::Pod;
    use kinfer_api::aim::{AIMArtifact, AIMTemplateCache};
    let caches = {
        let c = crate::cache::CONTROLLER;
        let engine = indexed_engine(
            client,
            crate::cache::CachePipeline::new(Arc::clone(ctx)),
            c,
            metrics,
        );
        // Dedicated artifacts are its children (read from the engine's owner index). Shared
        // artifacts have no owner: mapped to the caches using them; sources come from
        // templates: re-enqueue the caches of the template.
        let base = namespaced(client, (c, &engine), options);
        let base = owns_children(base, client, (c, &engine), ctx.serving_crds);
        // The reconciles read the artifacts from this watch's store.
        let (artifacts, artifact_events) = stored_watch::<AIMArtifact>(client);
        let _ = ctx.informers.artifacts.set(artifacts);
        let store = base.store();
        let c = base.watches_stream(artifact_events, move |a: Guarded<AIMArtifact>| {
            let Ok(a) = a.0 else {
                return Vec::new();
            };
            let state = store.state();
            let caches = state.iter().filter_map(|g| g.0.as_ref().ok());
            caches_of_artifact(&a, caches)
                .map(|c| {
                    object_ref::<AIMTemplateCache>(&c.name_any(), c.meta().namespace.as_deref())
                })
                .collect::<Vec<_>>()
        });
        let of_template = concerned(c.store(), template_concerns_cache);
        let c = catalog
            .templates()
            .trigger(c, (Changed::template, Changed::template), of_template);
        let c = with_config_watches(c, &catalog.configs(), |tc: &AIMTemplateCache| {
            tc.spec.runtime_config_name.as_deref()
        });
        drive(c, engine, shutdown.clone())
    };
    let artifacts = {
        let c = crate::artifact::CONTROLLER;
        // Its children come from the owner index (no LIST per kind per reconcile), which may
        // still serve a Job its TTL just deleted: the artifact's compose keeps a recorded
        // permanent failure against a failed read of that Job's pods
        // ([`crate::artifact::compose`]).
        let engine = indexed_engine(
            client,
            crate::artifact::ArtifactPipeline::new(Arc::clone(ctx)),
            c,
            metrics,
        );
        let it = (c, &engine);
        let c = namespaced(client, it, options);
        // Its Jobs and PVC, and the download pod's ServiceAccount, Role and RoleBinding (a
        // change or deletion by someone else is repaired while the download runs).
        let c = owns_children(c, client, it, ctx.serving_crds);
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
        let c = with_config_watches(c, &catalog.configs(), |a: &AIMArtifact| {
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
