//! The AIMService controller's wiring: its children (InferenceService, HTTPRoute, HPA, derived
//! templates, dedicated caches; read from the engine's owner index), the
//! caches it uses, its inference pods, and the models, templates and runtime configs it reads.

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kinfer_api::aim::{AIMService, AIMTemplateCache};
use kinfer_state::metrics::Metrics;
use kube::runtime::reflector::{self, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::watch;

use super::catalog::with_config_watches;
use super::dependents::{self, Changed, concerned};
use super::{
    Catalog, Guarded, drive, indexed_engine, namespaced, object_ref, owns_children, serving,
    stored_watch,
};
use crate::context::Context;
use crate::scheme;
use crate::service::ServicePipeline;
use kinfer_operator::controller::ControllerOptions;

pub(super) fn service_controller(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    (options, catalog): (&ControllerOptions, &Catalog),
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let controller = scheme::controller::SERVICE;
    let engine = indexed_engine(
        client,
        ServicePipeline::new(Arc::clone(ctx)),
        controller,
        metrics,
    );
    let c = namespaced(client, (controller, &engine), options);
    // Its children (InferenceService, HTTPRoute, HPA, derived templates, dedicated caches):
    // watched by label, read by the engine from their index.
    let c = owns_children(c, client, (controller, &engine), ctx.serving_crds);
    // The service reconciles read their peers from this controller's cache.
    let _ = ctx.informers.services.set(c.store());
    // Shared caches have no owner: a cache change re-enqueues the services using it; the
    // reconciles read the caches from this watch's store.
    let (caches, cache_events) = stored_watch::<AIMTemplateCache>(client);
    let _ = ctx.informers.caches.set(caches);
    let store = c.store();
    let c = c.watches_stream(cache_events, move |tc: Guarded<AIMTemplateCache>| {
        let Ok(tc) = tc.0 else {
            return Vec::new();
        };
        let state = store.state();
        let services = state.iter().filter_map(|g| g.0.as_ref().ok());
        serving::services_of_cache(&tc, services)
            .map(|s| object_ref::<AIMService>(&s.name_any(), s.meta().namespace.as_deref()))
            .collect::<Vec<_>>()
    });
    // Inference pods (image pulls, crashes): back to the service whose InferenceService they
    // run. Only AIM's: KServe copies the InferenceService's labels (`aim.eai.amd.com/service`)
    // to its pods.
    let store = c.store();
    let (pods, writer) = reflector::store();
    let _ = ctx.informers.pods.set(pods.clone());
    let pod_events = super::shared::touched_after_store(
        reflector(
            writer,
            watcher(
                Api::<Pod>::all(client.clone()),
                watcher::Config::default().labels(&format!(
                    "{},{}",
                    crate::service::runtime::ISVC_POD_LABEL,
                    crate::service::runtime::AIM_POD_LABEL
                )),
            )
            .default_backoff()
            // Cached for the service reconciles' reads ([`crate::informers`]): never read.
            .modify(|p| p.metadata.managed_fields = None),
        ),
        pods,
    );
    let c = c.watches_stream(pod_events, move |pod| {
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
    });
    // Resolution and selection read models and templates: re-enqueue the services a change
    // concerns ([`dependents`]).
    let of_model = concerned(c.store(), dependents::model_concerns);
    let c = catalog
        .models()
        .trigger(c, (Changed::model, Changed::model), of_model);
    let of_template = concerned(c.store(), dependents::template_concerns);
    let c = catalog
        .templates()
        .trigger(c, (Changed::template, Changed::template), of_template);
    let c = with_config_watches(c, &catalog.configs(), |s: &AIMService| {
        s.spec.runtime_config_name.as_deref()
    });
    drive(c, engine, shutdown)
}
