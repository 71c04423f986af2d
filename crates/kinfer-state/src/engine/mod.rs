//! The engine: runs a [`Pipeline`] for one object and applies the result.
//!
//! Contract, per reconcile:
//! 1. An object annotated `<domain>/reconciliation-paused: "true"` is skipped entirely: no
//!    reads, no writes, no status; but not once it is being deleted: deletion and its
//!    finalizer (step 2) run while paused, so a paused object can still be deleted.
//! 2. An object being deleted (`deletionTimestamp` set) is never planned nor applied: if it
//!    carries the pipeline's finalizer, [`Pipeline::finalize`] runs (unless its namespace is
//!    terminating or may not be read) and the finalizer is removed once it succeeded
//!    ([`finalize`]). Otherwise the pipeline's finalizer, if this object needs one, is added
//!    first (nothing is applied while it is missing), or released if it is no longer needed.
//!    A copy our own finalizer patch already replaced (the cache lagging behind the patch), or
//!    one such a patch found outdated (409), is not reconciled: no request, no plan, a requeue
//!    until the watch delivers the fresh copy, or a GET once it took too long
//!    ([`finalize`]'s "Outdated copies"; [`Report::stale`]).
//! 3. Children are listed by label (or served from a [`ChildStore`]); fetch and compose run.
//! 4. Plan runs unless an **upstream** component has a user-fixable (Auth, InvalidSpec,
//!    MissingUpstream) or infrastructure error, or the engine's own listing failed: what we
//!    need must be there, and we must know what exists. Errors of downstream components (the
//!    children themselves: a failed Job, a pod that cannot pull) never block: they feed status
//!    and the requeue decision, and the plan may be exactly what fixes them. Its objects are
//!    applied in dependency order ([`apply_plan`]), each only when it differs from the live
//!    object on the fields we manage ([`crate::diff`]); then planned deletions and orphans.
//! 5. Status is derived again with plan and apply errors, and patched only when a field we
//!    write differs ([`status_write`]) and no request of this reconcile was answered with
//!    `Retry-After` (then the plan stops at that answer too, [`apply_plan`], and the status
//!    waits for the reconcile after the hold). Events are published for the transitions that matter
//!    ([`crate::events`]) after the status write.
//! 6. Decision: infrastructure errors requeue with per-object backoff (honouring Retry-After).
//!    A failed reconcile that still made **progress** ([`Report::progressed`]) does not grow
//!    the backoff: the next attempt comes after the base delay ([`crate::Backoff::failure_after`]).
//!    The children's watch events reconcile the object again soon anyway; what the rule stops
//!    is the failures without progress that follow partial progress (many children, a share
//!    of requests failing) escalating the delay from where earlier failures left it, so the
//!    retries after the last progress start from the base again. Progress is what the server
//!    accepted and what moves the object towards its plan: a finalizer added or released, a
//!    child applied with a body other than the one last applied successfully to it (a new
//!    child, a changed desired state, or the first apply since the engine started), a child
//!    deleted (deletions run only once every planned child was applied or found unchanged:
//!    [`apply_plan`]). Not progress: a
//!    status write (it reports the failure, and a flapping error message would rewrite it on
//!    every attempt), a hand-over, reads, and a re-apply of the body last applied (a diff the
//!    server never settles, another manager reverting us: each child's body counts once).
//!    Only the first [`crate::MAX_PROGRESSING_FAILURES`] consecutive failures may count as
//!    progress, so a plan whose bodies change on every attempt still backs off to the cap. A
//!    failure whose every infrastructure error carried `Retry-After` (throttling) counts like
//!    progress, within the same bound: the server's load is not the object's fault;
//!    an answer to one of the engine's own requests (finalizer, the read of an outdated copy,
//!    listing, apply, status) carrying `Retry-After` also **holds** the object until it has
//!    passed (at most the backoff cap, like the requeue: [`crate::BackoffPolicy::honoured`]): a
//!    reconcile starting earlier (a child's watch event, a spec edit) sends no request and
//!    requeues for the rest of the hold ([`Report::held`]), so the server's ask is honoured
//!    by every reconcile, not only by the requeue;
//!    user-fixable errors wait for a change, or recheck on a slow timer when the object depends
//!    on external state; success resets the backoff and requeues only if the plan asked. A plan
//!    that sets [`crate::PlanResult::requeue_despite_errors`] (with a `requeue_after`) keeps its
//!    requeue although components report errors (it scheduled the retry of what failed itself,
//!    and the errors are reported meanwhile): then only the engine's own errors (finalizer,
//!    listing, apply, status) are decided. An infrastructure error or a `Retry-After` among
//!    them backs off as above (the backoff may grow past the plan's requeue); otherwise the
//!    plan's requeue stands (the sooner of it and a user-fixable or exhaustion recheck), and
//!    the backoff is not reset (the components' errors were left out of the decision).
//!
//! A steady state therefore performs zero writes, also after a restart (the diff reads only
//! live objects). A new object costs its children, two status writes (the first pass observes
//! no children yet, so it writes Progressing; the second observes them and writes Ready: the
//! first pass cannot claim readiness it has not observed, and for workloads readiness needs a
//! rollout anyway: a real transition, kept) and no event (reaching Ready without an error on
//! the way is not one, [`crate::events`]). A planned object missing from the listing (or the
//! cache) and from the child store's objects by name ([`ChildStore::named`]: cluster-scoped
//! objects labelled with their parent) is read by name before it is applied, so a same-named
//! object that is not ours is refused, not taken over (`NameTaken`); objects the caches hold
//! are not read, and one of a kind nobody watches is read by name on every reconcile
//! ([`apply_plan`]). With a [`ChildStore`] fed by watches holding every planned object, and a
//! pipeline whose fetch reads only from caches, a reconcile that changes nothing therefore
//! sends no request at all; each planned object the caches cannot hold (a kind nobody
//! watches) and each read fetch makes costs one request. The engine
//! never panics on object content: objects that do not deserialise are handled by
//! [`Engine::reconcile_guarded`]. Per-object memory is dropped with [`Engine::forget`] (on
//! delete events, and after a reconcile whose object is gone meanwhile: `kinfer_operator`'s
//! controllers do both), [`Engine::retain`] (after a re-list, for deletions the watch missed)
//! and [`Engine::sweep`]. The
//! controller wiring records trigger arrivals through [`Engine::triggers`] (the queue-wait
//! metric).

mod apply_plan;
mod config;
mod finalize;
mod memory;
mod report;
mod status_write;
mod steps;
mod triggers;

pub use config::EngineConfig;
pub use finalize::{CLEANUP_FORBIDDEN, STALE_COPY_WAIT};
pub use report::Report;
pub use triggers::Triggers;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use kube::{Client, Resource, ResourceExt};
use tracing::Instrument;

use crate::backoff::Backoff;
use crate::category::ErrorCategory;
use crate::clock::{Clock, SystemClock, elapsed};
use crate::condition::{ConditionStatus, ConditionType, Reason, Transition};
use crate::events::Events;
use crate::metrics::{ControllerMetrics, Metrics, ReconcileResult, WriteVerb};
use crate::pipeline::{ChildKind, ObjectKey, Pipeline};
use crate::store::{ChildStore, OwnerIndex};
use memory::Memory;

/// Runs one controller's pipeline; see the module contract.
pub struct Engine<P: Pipeline> {
    pipeline: P,
    client: Client,
    config: EngineConfig,
    clock: Arc<dyn Clock>,
    backoff: Backoff<ObjectKey>,
    metrics: Metrics,
    handles: ControllerMetrics,
    events: Events,
    kinds: Vec<ChildKind>,
    store: Option<Arc<dyn ChildStore>>,
    index: Option<Arc<OwnerIndex>>,
    memory: Arc<Memory>,
}

impl<P: Pipeline> std::fmt::Debug for Engine<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<P: Pipeline> Engine<P> {
    /// An engine with the system clock. The pipeline's [`Pipeline::child_kinds`] are read once,
    /// here.
    pub fn new(pipeline: P, client: Client, config: EngineConfig, metrics: Metrics) -> Self {
        let events = Events::new(
            client.clone(),
            &config.scheme.manager,
            config.instance.clone(),
        );
        let handles = metrics.controller(&config.scheme.manager);
        let kinds = pipeline.child_kinds();
        let memory: Arc<Memory> = Arc::default();
        let weak = Arc::downgrade(&memory);
        metrics.queue_depth(&config.scheme.manager, move || {
            weak.upgrade().map(|m| m.pending())
        });
        Self {
            pipeline,
            backoff: Backoff::new(config.backoff),
            client,
            config,
            clock: Arc::new(SystemClock),
            metrics,
            handles,
            events,
            kinds,
            store: None,
            index: None,
            memory,
        }
    }

    /// Use another clock (tests, simulations).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Serve children from `store` (filled from the operator's `.owns()` watches) for the
    /// kinds it holds, instead of a LIST per kind per reconcile.
    #[must_use]
    pub fn with_child_store(mut self, store: Arc<dyn ChildStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Serve children from `index` ([`Self::with_child_store`]) and keep it for the
    /// controller wiring, which feeds it from its watches ([`crate::child_watch`],
    /// [`Self::owner_index`]).
    #[must_use]
    pub fn with_owner_index(mut self, index: Arc<OwnerIndex>) -> Self {
        self.store = Some(Arc::clone(&index) as Arc<dyn ChildStore>);
        self.index = Some(index);
        self
    }

    /// The index given to [`Self::with_owner_index`], for the watches that feed it.
    pub fn owner_index(&self) -> Option<&Arc<OwnerIndex>> {
        self.index.as_ref()
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &P {
        &self.pipeline
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    fn name(&self) -> &str {
        &self.config.scheme.manager
    }

    /// The key the engine keeps per-object memory under.
    pub fn key_of(obj: &impl Resource<DynamicType = ()>) -> ObjectKey {
        ObjectKey {
            kind: P::Object::kind(&()).into_owned(),
            group: P::Object::group(&()).into_owned(),
            namespace: obj.meta().namespace.clone(),
            name: obj.meta().name.clone().unwrap_or_default(),
        }
    }

    /// Drop everything remembered about `key` (queue-wait start, last invalid error, last
    /// status written, applied bodies, backoff). Call it on the object's delete event.
    pub fn forget(&self, key: &ObjectKey) {
        self.memory.forget(key);
        self.backoff.forget(key);
    }

    /// Drop everything remembered about the objects whose key `keep` refuses; returns how
    /// many were dropped. The controller wiring calls it after a re-list of the objects
    /// (`keep`: listed, or outside the listed scope), so objects deleted while the watch was
    /// down are forgotten although their delete event never came.
    pub fn retain(&self, mut keep: impl FnMut(&ObjectKey) -> bool) -> usize {
        let dropped = self.memory.retain(&mut keep);
        self.backoff.retain(keep);
        dropped.len()
    }

    /// Drop memory of objects not reconciled nor seen for `max_age` (objects whose delete
    /// event was missed); returns how many were dropped. Not for a periodic sweep of an
    /// operator: it also drops the applied-body memory of stable live objects, which then
    /// costs writes ([`Self::retain`] after a re-list is the precise way).
    pub fn sweep(&self, max_age: Duration) -> usize {
        let dropped = self.memory.sweep(self.clock.now(), max_age);
        self.backoff.retain(|k| !dropped.contains(k));
        dropped.len()
    }

    /// Number of objects with per-object memory (for tests and metrics).
    pub fn remembered(&self) -> usize {
        self.memory.len().max(self.backoff.len())
    }

    /// Note that a watch event for `obj` was seen (feeds the queue-wait metric). Call it from
    /// the watch stream, e.g. in a `.map` before `Controller::for_stream`; watch streams that
    /// cannot hold the engine take a [`Self::triggers`] handle instead.
    pub fn observe_event(&self, obj: &impl Resource<DynamicType = ()>) {
        self.handles.triggered();
        self.memory.seen(&Self::key_of(obj), self.clock.now());
    }

    /// Cuts a reconciled object's metadata to what the engine reads of it (of `managedFields`:
    /// the condition types its own status entry holds), for the controller's cache of those
    /// objects; every other field is kept.
    pub fn trim_for_cache(
        &self,
        meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) {
        status_write::keep_status_condition_keys(
            &mut meta.managed_fields,
            &self.config.scheme.manager,
        );
    }

    /// A handle recording trigger arrivals for this engine's queue-wait metric, for the
    /// controller's watch streams ([`Triggers`]). Take it after [`Self::with_clock`].
    pub fn triggers(&self) -> Triggers {
        Triggers::new(
            Arc::clone(&self.memory),
            Arc::clone(&self.clock),
            P::Object::kind(&()).into_owned(),
            P::Object::group(&()).into_owned(),
            self.handles.clone(),
        )
    }

    /// Reconcile an object that may not have deserialised: a malformed object is logged,
    /// counted and reported once per distinct error as a Warning event, then waits for a change.
    pub async fn reconcile_guarded(&self, guarded: &DeserializeGuard<P::Object>) -> Report {
        match &guarded.0 {
            Ok(obj) => self.reconcile(obj).await,
            Err(invalid) => {
                let key = Self::key_of(guarded);
                self.handles.invalid();
                self.handles.error(ErrorCategory::InvalidSpec);
                let is_new = self.memory.invalid(&key, &invalid.error, self.clock.now());
                tracing::warn!(object = %key, error = %invalid.error, "object does not deserialise; waiting for an edit");
                let mut report = Report::skipped(Action::await_change());
                if is_new {
                    let t = Transition {
                        type_: ConditionType::ConfigValid,
                        from: None,
                        status: ConditionStatus::False,
                        reason: Reason::InvalidSpec,
                        message: invalid.error.clone(),
                    };
                    let reference = guarded.object_ref(&());
                    report.events = self
                        .events
                        .publish(&reference, std::slice::from_ref(&t))
                        .await;
                    self.handles.writes(WriteVerb::Event, report.events);
                }
                report
            }
        }
    }

    /// Reconcile one object; see the module contract.
    pub async fn reconcile(&self, obj: &P::Object) -> Report {
        let key = Self::key_of(obj);
        let span = tracing::info_span!(
            "reconcile",
            controller = %self.name(),
            name = %key.name,
            namespace = key.namespace.as_deref().unwrap_or(""),
        );
        async move {
            let paused = obj.annotations().get(&self.config.scheme.paused_annotation()).map(String::as_str) == Some("true");
            if paused && obj.meta().deletion_timestamp.is_none() {
                tracing::debug!("reconciliation paused");
                self.memory.skipped(&key);
                self.handles.paused();
                return Report::skipped(Action::await_change());
            }
            if let Some(remaining) = self.memory.held(&key, self.clock.now()) {
                tracing::debug!(remaining_s = remaining.as_secs_f64(), "held until the server's Retry-After has passed");
                let mut report = Report::skipped(Action::requeue(remaining));
                report.held = true;
                return report;
            }
            if let Some(at) = self.memory.start(&key, self.clock.now()) {
                self.handles.queue_wait(elapsed(at, self.clock.now()).as_secs_f64());
            }
            let started = Instant::now();
            self.handles.started();
            let report = self.run(obj, &key).await;
            let result = if !report.errors.is_empty() {
                ReconcileResult::Error
            } else if report.action == Action::await_change() {
                ReconcileResult::Success
            } else {
                ReconcileResult::RequeueAfter
            };
            self.handles.reconciled(started.elapsed().as_secs_f64(), result);
            for e in &report.errors {
                self.handles.error(e.category);
            }
            tracing::debug!(status = ?report.status, applied = report.applied, deleted = report.deleted, status_written = report.status_written, "reconciled");
            report
        }
        .instrument(span)
        .await
    }
}

/// `reconcile` for `kube::runtime::Controller` over `DeserializeGuard<K>`.
pub async fn reconcile<P: Pipeline>(
    obj: Arc<DeserializeGuard<P::Object>>,
    engine: Arc<Engine<P>>,
) -> Result<Action, std::convert::Infallible> {
    Ok(engine.reconcile_guarded(&obj).await.action)
}

#[allow(clippy::needless_pass_by_value)] // the signature `Controller::run` requires
/// `error_policy` for `kube::runtime::Controller`; unreachable with [`reconcile`], which handles
/// every error itself, but required by the runtime.
pub fn error_policy<P: Pipeline>(
    _obj: Arc<DeserializeGuard<P::Object>>,
    _error: &std::convert::Infallible,
    engine: Arc<Engine<P>>,
) -> Action {
    Action::requeue(engine.config.backoff.base)
}
