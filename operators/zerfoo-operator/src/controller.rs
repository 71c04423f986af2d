//! Wiring the pipeline into `kube::runtime::Controller`, and the startup checks.
//!
//! Contract:
//! - [`check_crd`] fails fast, with an install hint, when the ZerfooInferenceService CRD is not
//!   installed; [`routes_served`] tells whether Gateway API HTTPRoutes exist in the cluster
//!   (both through [`kinfer_operator::crds`]; the client comes from
//!   [`kinfer_operator::client`], with kube's retry layer off).
//! - [`engine`] serves each reconcile's children from an [`OwnerIndex`] that [`run`] fills
//!   from the controller's own watches of the owned kinds
//!   ([`kinfer_state::child_watch`]: `managedFields` cut to this operator's apply entries),
//!   so a reconcile that changes nothing sends no request for its children; a kind not listed
//!   yet is LISTed as before.
//! - [`run`] runs one controller per watched namespace (all namespaces when none is given;
//!   [`kinfer_operator::Controllers`]) over `DeserializeGuard<ZerfooInferenceService>` (a
//!   malformed object cannot wedge it), owning the pipeline's child kinds (Deployments,
//!   Services, HPAs and, when served, HTTPRoutes), each watched only through the
//!   `managed-by` marker label; every child event is recorded as a trigger of its owner
//!   ([`Scope::trigger_owners`], the queue-wait metric); the watch plumbing (short trigger
//!   backoff after watch errors, per-watch backoff) is [`kinfer_operator::Controllers`]'s;
//!   at most `concurrency` reconciles at once per controller;
//!   stops gracefully (in-flight reconciles finish) when `shutdown` turns true.
//! - [`run_following_crds`] is [`run`] for whether HTTPRoutes are served as a
//!   [`CrdWatch`](kinfer_operator::CrdWatch) reports it: when the Gateway API CRD is installed
//!   or removed, the controllers stop gracefully and start again with a new engine for the new
//!   set of child kinds (the restart re-lists, so every service is reconciled against it).

use std::sync::Arc;

use kinfer_api::zerfoo::ZerfooInferenceService;
use kinfer_operator::controller::{GuardedController, Scope};
use kinfer_operator::crds;
use kinfer_operator::{Controllers, CrdError, InstalledCrds, restart_on_change};
use kinfer_state::child_watch::child_watch;
use kinfer_state::metrics::Metrics;
use kinfer_state::{ChildKind, Engine, EngineConfig, OwnerIndex, Pipeline};
use kube::{Client, CustomResourceExt};
use tokio::sync::watch;

use crate::reconciler::{MANAGER, ZerfooPipeline, label_scheme};

/// The HTTPRoute CRD's name.
pub const HTTPROUTE_CRD: &str = "httproutes.gateway.networking.k8s.io";

/// How to install the CRD, for the start-up error.
pub const INSTALL_HINT: &str =
    "`kubectl apply -k deploy/crds` or `zerfoo-operator crds | kubectl apply -f -`";

/// How the controllers run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerOptions {
    /// Namespaces to watch; all when empty.
    pub namespaces: Vec<String>,
    /// Reconciles running at once per controller.
    pub concurrency: u16,
    /// Quiet time after a trigger before the reconcile
    /// ([`kinfer_operator::ControllerOptions::debounce`]).
    pub debounce: std::time::Duration,
    /// Whether to watch HTTPRoutes (see [`routes_served`]); the pipeline decides whether it
    /// manages them ([`ZerfooPipeline::with_routes`]).
    pub routes: bool,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            namespaces: Vec::new(),
            concurrency: 4,
            debounce: kinfer_operator::ControllerOptions::default().debounce,
            routes: true,
        }
    }
}

/// Fails with an install hint unless the ZerfooInferenceService CRD is installed.
pub async fn check_crd(client: &Client) -> Result<(), CrdError> {
    crds::require(client, &[ZerfooInferenceService::crd_name()], INSTALL_HINT).await
}

/// Whether the cluster serves Gateway API HTTPRoutes.
pub async fn routes_served(client: &Client) -> Result<bool, CrdError> {
    crds::installed(client, HTTPROUTE_CRD).await
}

/// The engine for `pipeline`, reading children from an index [`run`] fills.
pub fn engine(
    client: Client,
    pipeline: ZerfooPipeline,
    metrics: Metrics,
) -> Arc<Engine<ZerfooPipeline>> {
    Arc::new(
        Engine::new(pipeline, client, EngineConfig::new(label_scheme()), metrics)
            .with_owner_index(Arc::new(OwnerIndex::new())),
    )
}

/// The child kinds the controllers watch.
fn watched_kinds(engine: &Engine<ZerfooPipeline>, options: &ControllerOptions) -> Vec<ChildKind> {
    engine
        .pipeline()
        .child_kinds()
        .into_iter()
        .filter(|k| options.routes || k.resource.kind != "HTTPRoute")
        .collect()
}

/// `c` owning `kinds`, each through one watch that also feeds `index`.
fn wire(
    mut c: GuardedController<ZerfooInferenceService>,
    scope: &Scope<'_>,
    kinds: &[ChildKind],
    index: &Arc<OwnerIndex>,
) -> GuardedController<ZerfooInferenceService> {
    for kind in kinds {
        let events = child_watch(
            scope.client(),
            kind,
            scope.namespace(),
            scope.marked(),
            Arc::clone(index),
            MANAGER,
        );
        c = c.owns_stream_with(scope.trigger_owners(events), kind.resource.clone());
    }
    c
}

/// Runs the controllers until `shutdown` turns true; see the module contract.
pub async fn run(
    engine: Arc<Engine<ZerfooPipeline>>,
    client: Client,
    options: ControllerOptions,
    shutdown: watch::Receiver<bool>,
) {
    let kinds = watched_kinds(&engine, &options);
    // An engine built without an index (not by `engine`) still works: it LISTs, and this
    // index is fed but unread.
    let index = engine
        .owner_index()
        .cloned()
        .unwrap_or_else(|| Arc::new(OwnerIndex::new()));
    let controllers = Controllers::new(
        client,
        MANAGER,
        kinfer_operator::ControllerOptions {
            namespaces: options.namespaces,
            concurrency: options.concurrency,
            debounce: options.debounce,
        },
    );
    controllers
        .run(engine, |c, scope| wire(c, scope, &kinds, &index), shutdown)
        .await;
}

/// Runs the controllers until `shutdown` turns true, following whether HTTPRoutes are
/// served; see the module contract.
pub async fn run_following_crds(
    client: Client,
    pipeline: ZerfooPipeline,
    metrics: Metrics,
    options: ControllerOptions,
    crds: watch::Receiver<InstalledCrds>,
    shutdown: watch::Receiver<bool>,
) {
    restart_on_change(
        crds,
        |installed: &InstalledCrds| installed.contains(HTTPROUTE_CRD),
        shutdown,
        |routes, stop| {
            if !routes {
                tracing::warn!(
                    "Gateway API HTTPRoutes are not served; services asking for a gateway report RouteReady=False until the CRD is installed"
                );
            }
            let engine = engine(
                client.clone(),
                pipeline.clone().with_routes(routes),
                metrics.clone(),
            );
            let options = ControllerOptions {
                routes,
                ..options.clone()
            };
            run(engine, client.clone(), options, stop)
        },
    )
    .await;
}
