//! The AIMService controller's wiring: its children (InferenceService, HTTPRoute, HPA), the
//! caches it uses, its inference pods, and the models, templates and runtime configs it reads.

use std::sync::Arc;

use futures::future::BoxFuture;
use kinfer_api::aim::{AIMClusterModel, AIMModel, AIMService};
use kinfer_api::kserve::InferenceService;
use kinfer_state::metrics::Metrics;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::watch;

use super::catalog::with_config_watches;
use super::{drive, engine, namespaced, object_ref, owns, serving};
use crate::context::Context;
use crate::scheme;
use crate::service::ServicePipeline;
use kinfer_operator::controller::ControllerOptions;

pub(super) fn service_controller(
    client: &Client,
    ctx: &Arc<Context>,
    metrics: &Metrics,
    options: &ControllerOptions,
    shutdown: watch::Receiver<bool>,
) -> BoxFuture<'static, ()> {
    let controller = scheme::controller::SERVICE;
    let engine = engine(
        client,
        ServicePipeline::new(Arc::clone(ctx)),
        controller,
        metrics,
    );
    let c = namespaced(client, (controller, &engine), options);
    let c = owns::<_, InferenceService>(c, client, (controller, &engine));
    let c = owns::<_, gateway_api::httproutes::HttpRoute>(c, client, (controller, &engine));
    let c = owns::<_, k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>(
        c,
        client,
        (controller, &engine),
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
