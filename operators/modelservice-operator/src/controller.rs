//! The ModelService controllers: which kinds they watch, on the shared wiring of
//! [`kinfer_operator::controller`].
//!
//! Contract:
//! - [`run`] runs one controller per watched namespace ([`kinfer_operator::Controllers`]) over
//!   `DeserializeGuard<ModelService>`, owning every namespaced kind a ModelService creates
//!   whose CRD is installed ([`crate::reconciler::child_kinds`]: Deployments, Services,
//!   ConfigMaps, ServiceAccounts, Roles, RoleBindings, InferencePools, HTTPRoutes,
//!   DestinationRules, PodMonitors, ServiceMonitors), each watched only through the
//!   `kinfer.dev/managed-by` label, so drift on any of them is repaired. Each of those watches
//!   also feeds the engine's [`OwnerIndex`] ([`kinfer_state::child_watch`], `managedFields` cut
//!   to this operator's apply entries), so a reconcile reads its children from memory instead
//!   of a LIST per kind (a kind whose watch has not listed yet is LISTed as before), and
//!   records each event as a trigger of its owner ([`Scope::trigger_owners`], the queue-wait
//!   metric); the watch plumbing (short trigger backoff after watch errors, per-watch backoff)
//!   is [`kinfer_operator::Controllers`]'s. The Endpoint Picker's token Secret is deliberately
//!   not watched (so the operator needs no cluster-wide list/watch of Secrets): the engine
//!   reads it by name on every reconcile and the plan rechecks it periodically
//!   ([`crate::reconciler::plan`]).
//! - The metrics-auth ClusterRoleBindings are watched cluster-wide but only those carrying
//!   this operator's marker; a change or deletion (also one a re-list finds)
//!   reconciles the ModelService their parent labels name ([`parent_of`]) when it is in this
//!   controller's namespace, which re-applies them. With several watched namespaces every
//!   controller runs these watches: each reports, after its own re-list, every object it had
//!   seen that is gone (even when another controller's watch saw the deletion first,
//!   [`kinfer_state::Feed`]), so the controller of the parent's namespace always learns of
//!   it. The watch feeds the [`OwnerIndex`] by name ([`crate::cluster_rbac`]), so neither
//!   fetch ([`crate::reconciler::fetch`]) nor the engine (the planned ClusterRoleBinding)
//!   reads the binding by name when it holds it: a no-op reconcile sends no request.
//! - When the optional CRDs change ([`crate::optional_crds`]), the controllers stop gracefully
//!   and start again with a new pipeline and engine for the new set of owned kinds
//!   ([`kinfer_operator::restart_on_change`]).

use std::sync::Arc;

use kinfer_api::modelservice::ModelService;
use kinfer_builders::labels::parent_ref;
use kinfer_operator::controller::{GuardedController, Scope};
use kinfer_operator::optional_crds::InstalledCrds;
use kinfer_operator::{ControllerOptions, Controllers, restart_on_change};
use kinfer_state::child_watch::{child_watch, child_watch_as};
use kinfer_state::metrics::Metrics;
use kinfer_state::{Engine, EngineConfig, OwnerIndex};
use kube::Client;
use kube::core::{DeserializeGuard, DynamicObject, ObjectMeta};
use kube::runtime::reflector::ObjectRef;
use tokio::sync::watch;

use crate::cluster_rbac::cluster_kinds;
use crate::optional_crds::OptionalCrds;
use crate::reconciler::{MANAGER, ModelServicePipeline, child_kinds, label_scheme};

/// The engine for `pipeline`, reading children from an [`OwnerIndex`] of its own (fed when
/// its [`Engine::owner_index`] is given to [`wire`]; until then it LISTs).
pub fn engine(
    client: Client,
    pipeline: ModelServicePipeline,
    metrics: Metrics,
) -> Arc<Engine<ModelServicePipeline>> {
    engine_reading(client, pipeline, metrics, Arc::new(OwnerIndex::new()))
}

/// The engine for `pipeline`, reading children from `index`. [`run`] builds the index first
/// and hands the same one to [`wire`], so an engine reading an index nobody feeds (a LIST per
/// reconcile, silently) cannot be wired.
fn engine_reading(
    client: Client,
    pipeline: ModelServicePipeline,
    metrics: Metrics,
    index: Arc<OwnerIndex>,
) -> Arc<Engine<ModelServicePipeline>> {
    Arc::new(
        Engine::new(pipeline, client, EngineConfig::new(label_scheme()), metrics)
            .with_owner_index(index),
    )
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

/// Adds the watches of a controller for the optional CRDs `crds`: the owned kinds and the
/// cluster RBAC, all feeding `index`; see the module contract.
pub fn wire(
    mut c: GuardedController<ModelService>,
    scope: &Scope<'_>,
    crds: OptionalCrds,
    index: &Arc<OwnerIndex>,
) -> GuardedController<ModelService> {
    for kind in child_kinds(crds) {
        let events = child_watch(
            scope.client(),
            &kind,
            scope.namespace(),
            scope.marked(),
            Arc::clone(index),
            MANAGER,
        );
        c = c.owns_stream_with(scope.trigger_owners(events), kind.resource.clone());
    }
    for kind in cluster_kinds() {
        let events = child_watch_as(
            scope.client(),
            &kind,
            None,
            scope.marked(),
            Arc::clone(index),
            index.named_feed(),
            MANAGER,
        );
        let ns = scope.namespace().map(str::to_owned);
        c = c.watches_stream_with(
            events,
            move |o: DynamicObject| parent_of(&o.metadata, ns.as_deref()),
            kind.resource.clone(),
        );
    }
    c
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
            let index = Arc::new(OwnerIndex::new());
            let engine = engine_reading(
                client.clone(),
                pipeline.with_crds(current).with_index(Arc::clone(&index)),
                metrics.clone(),
                Arc::clone(&index),
            );
            let controllers = controllers.clone();
            async move {
                controllers
                    .run(
                        engine,
                        move |c, scope| wire(c, scope, current, &index),
                        stop,
                    )
                    .await;
            }
        },
    )
    .await;
}
