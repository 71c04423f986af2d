//! The ModelService controllers: which kinds they watch, on the shared wiring of
//! [`kinfer_operator::controller`].
//!
//! Contract:
//! - [`run`] runs one controller per watched namespace ([`kinfer_operator::Controllers`]) over
//!   `DeserializeGuard<ModelService>`, owning every namespaced kind a ModelService creates
//!   whose CRD is installed (Deployments, Services, ConfigMaps, ServiceAccounts, Roles,
//!   RoleBindings, InferencePools, HTTPRoutes, DestinationRules, PodMonitors,
//!   ServiceMonitors), each watched only through the `kinfer.dev/managed-by` label, so drift
//!   on any of them is repaired. The Endpoint Picker's token Secret is deliberately not
//!   watched (so the operator needs no cluster-wide list/watch of Secrets): the engine reads
//!   it by name on every reconcile and the plan rechecks it periodically
//!   ([`crate::reconciler::plan`]).
//! - The metrics-auth ClusterRoles and ClusterRoleBindings are watched cluster-wide but only
//!   those carrying this operator's marker and a parent label ([`parent_of`]); a change or
//!   deletion reconciles the ModelService they name, which re-applies them.
//! - When the optional CRDs change ([`crate::optional_crds`]), the controllers stop gracefully
//!   and start again with a new pipeline and engine for the new set of owned kinds
//!   ([`kinfer_operator::restart_on_change`]).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kinfer_api::modelservice::ModelService;
use kinfer_builders::labels::parent_ref;
use kinfer_operator::controller::{GuardedController, Scope};
use kinfer_operator::optional_crds::InstalledCrds;
use kinfer_operator::{ControllerOptions, Controllers, restart_on_change};
use kinfer_state::metrics::Metrics;
use kinfer_state::{Engine, EngineConfig};
use kube::core::{DeserializeGuard, ObjectMeta};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Client, Resource};
use tokio::sync::watch;

use crate::optional_crds::OptionalCrds;
use crate::reconciler::{ModelServicePipeline, label_scheme};

/// The engine for `pipeline`.
pub fn engine(
    client: Client,
    pipeline: ModelServicePipeline,
    metrics: Metrics,
) -> Arc<Engine<ModelServicePipeline>> {
    Arc::new(Engine::new(
        pipeline,
        client,
        EngineConfig::new(label_scheme()),
        metrics,
    ))
}

/// The ModelService a cluster-scoped object names in its parent labels, if it is in the
/// watched `namespace` (all when `None`).
pub fn parent_of(
    meta: &ObjectMeta,
    namespace: Option<&str>,
) -> Option<ObjectRef<DeserializeGuard<ModelService>>> {
    let (ns, name) = parent_ref(meta)?;
    if namespace.is_some_and(|watched| watched != ns) {
        return None;
    }
    Some(ObjectRef::new(&name).within(&ns))
}

/// Adds the watches of a controller for the optional CRDs `crds`; see the module contract.
pub fn wire(
    c: GuardedController<ModelService>,
    scope: &Scope<'_>,
    crds: OptionalCrds,
) -> GuardedController<ModelService> {
    let mut c = scope.owns::<Deployment, _>(c);
    c = scope.owns::<Service, _>(c);
    c = scope.owns::<ConfigMap, _>(c);
    c = scope.owns::<ServiceAccount, _>(c);
    c = scope.owns::<Role, _>(c);
    c = scope.owns::<RoleBinding, _>(c);
    if crds.inference_pool {
        c = scope.owns::<kinfer_api::inference_pool::InferencePool, _>(c);
    }
    if crds.gateway_api {
        c = scope.owns::<gateway_api::httproutes::HttpRoute, _>(c);
    }
    if crds.istio {
        c = scope.owns::<kinfer_api::istio::DestinationRule, _>(c);
    }
    if crds.monitoring {
        c = scope.owns::<kinfer_api::monitoring::PodMonitor, _>(c);
        c = scope.owns::<kinfer_api::monitoring::ServiceMonitor, _>(c);
    }
    let ns = scope.namespace().map(str::to_owned);
    let ns2 = ns.clone();
    c.watches(
        Api::<ClusterRole>::all(scope.client().clone()),
        scope.marked(),
        move |o| parent_of(o.meta(), ns.as_deref()),
    )
    .watches(
        Api::<ClusterRoleBinding>::all(scope.client().clone()),
        scope.marked(),
        move |o| parent_of(o.meta(), ns2.as_deref()),
    )
}

/// Runs the controllers until `shutdown` turns true, restarting them (with a new engine for the
/// new set of child kinds) when the installed optional CRDs change; see the module contract.
/// Only `pipeline`'s configuration is used: its optional CRDs are replaced by the set `crds`
/// reports, at start and on every change. First sweeps cluster RBAC whose ModelService is gone
/// ([`crate::finalizer::sweep_orphans`]).
pub async fn run(
    client: Client,
    pipeline: ModelServicePipeline,
    metrics: Metrics,
    options: ControllerOptions,
    crds: watch::Receiver<InstalledCrds>,
    shutdown: watch::Receiver<bool>,
) {
    // The start-up sweep of cluster RBAC whose ModelService went while nobody watched
    // (NOTES: cluster-scoped objects do not go with the namespace); reconciles repair the rest.
    match crate::finalizer::sweep_orphans(&client, &options.namespaces).await {
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "sweep of orphaned cluster RBAC failed"),
    }
    // The field manager and marker come from the engine's label scheme: one source.
    let controllers = Controllers::new(client.clone(), &label_scheme().manager, options);
    restart_on_change(
        crds,
        OptionalCrds::from_installed,
        shutdown,
        |current, stop| {
            let engine = engine(client.clone(), pipeline.with_crds(current), metrics.clone());
            let controllers = controllers.clone();
            async move {
                controllers
                    .run(engine, move |c, scope| wire(c, scope, current), stop)
                    .await;
            }
        },
    )
    .await;
}
