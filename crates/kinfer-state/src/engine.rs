//! The engine: runs a [`Pipeline`] for one object and applies the result.
//!
//! Contract, per reconcile:
//! 1. An object annotated `<domain>/reconciliation-paused: "true"` is skipped entirely: no
//!    reads, no writes, no status.
//! 2. Children are listed by label; fetch and compose run; status is derived.
//! 3. With no user-fixable (Auth, InvalidSpec, MissingUpstream) and no infrastructure error,
//!    plan runs and its objects are applied in (kind, group, namespace, name) order, owned
//!    first, each only when it differs from the live object on the fields we manage; then
//!    planned deletions and orphans (children we control that are no longer planned) are
//!    deleted.
//! 4. Status is derived again with plan and apply errors, and patched only when it differs
//!    from the object's current status. Events are published for condition transitions after
//!    the status write.
//! 5. Decision: infrastructure errors requeue with per-object backoff (honouring Retry-After);
//!    user-fixable errors wait for a change, or recheck on a slow timer when the object depends
//!    on external state; success resets the backoff and requeues only if the plan asked.
//!
//! A steady state therefore performs zero writes. The engine never panics on object content:
//! objects that do not deserialise are handled by [`Engine::reconcile_guarded`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::core::{ApiResource, DeserializeGuard};
use kube::runtime::controller::Action;
use kube::{Client, Resource, ResourceExt};
use serde_json::Value;
use tracing::Instrument;

use crate::apply::{self, ApplyError, ParentRef};
use crate::backoff::{Backoff, BackoffPolicy};
use crate::category::{CategorizedError, ErrorCategory};
use crate::clock::{Clock, SystemClock, elapsed, now_seconds};
use crate::events::Events;
use crate::labels::LabelScheme;
use crate::metrics::{Metrics, WriteVerb};
use crate::pipeline::{Children, ObjectKey, Observation, Pipeline, PlanResult};
use crate::status::{DEFAULT_INFRA_GRACE, DeriveInput, OverallStatus, derive};

/// How an engine behaves.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Label domain, controller name and field manager.
    pub scheme: LabelScheme,
    /// Infrastructure grace period (upstream: 10 s).
    pub grace: Duration,
    /// Backoff for infrastructure errors (1 s doubling to 300 s).
    pub backoff: BackoffPolicy,
    /// Recheck interval for user-fixable errors of objects with external dependencies, and for
    /// resource exhaustion.
    pub slow_recheck: Duration,
}

impl EngineConfig {
    /// Defaults for `scheme`.
    pub fn new(scheme: LabelScheme) -> Self {
        Self {
            scheme,
            grace: DEFAULT_INFRA_GRACE,
            backoff: BackoffPolicy::default(),
            slow_recheck: Duration::from_mins(5),
        }
    }
}

/// What one reconcile did (for tests, logs and benchmarks).
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// What the controller runtime should do next.
    pub action: Action,
    /// The derived overall status (`None` when skipped).
    pub status: Option<OverallStatus>,
    /// Applies sent.
    pub applied: usize,
    /// Deletes sent.
    pub deleted: usize,
    /// Whether status was patched.
    pub status_written: bool,
    /// Events published.
    pub events: usize,
    /// Errors seen (components, plan, apply, status).
    pub errors: Vec<CategorizedError>,
    /// Skipped because paused or malformed.
    pub skipped: bool,
}

impl Report {
    fn skipped(action: Action) -> Self {
        Self {
            action,
            status: None,
            applied: 0,
            deleted: 0,
            status_written: false,
            events: 0,
            errors: Vec::new(),
            skipped: true,
        }
    }

    /// Total writes sent (applies, deletes, status, events).
    pub fn writes(&self) -> usize {
        self.applied + self.deleted + usize::from(self.status_written) + self.events
    }
}

/// Runs one controller's pipeline; see the module contract.
pub struct Engine<P: Pipeline> {
    pipeline: P,
    client: Client,
    config: EngineConfig,
    clock: Arc<dyn Clock>,
    backoff: Backoff<ObjectKey>,
    metrics: Metrics,
    events: Events,
    seen: Mutex<HashMap<ObjectKey, Timestamp>>,
    invalid: Mutex<HashMap<ObjectKey, String>>,
}

impl<P: Pipeline> std::fmt::Debug for Engine<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<P: Pipeline> Engine<P> {
    /// An engine with the system clock.
    pub fn new(pipeline: P, client: Client, config: EngineConfig, metrics: Metrics) -> Self {
        let events = Events::new(client.clone(), &config.scheme.manager);
        Self {
            pipeline,
            backoff: Backoff::new(config.backoff),
            client,
            config,
            clock: Arc::new(SystemClock),
            metrics,
            events,
            seen: Mutex::new(HashMap::new()),
            invalid: Mutex::new(HashMap::new()),
        }
    }

    /// Use another clock (tests, simulations).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
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

    fn key_of(obj: &impl Resource<DynamicType = ()>) -> ObjectKey {
        ObjectKey {
            kind: P::Object::kind(&()).into_owned(),
            group: P::Object::group(&()).into_owned(),
            namespace: obj.meta().namespace.clone(),
            name: obj.meta().name.clone().unwrap_or_default(),
        }
    }

    /// Note that a watch event for `obj` was seen (feeds the queue-wait metric). Call it from
    /// the watch stream, e.g. in a `.map` before `Controller::for_stream`.
    pub fn observe_event(&self, obj: &impl Resource<DynamicType = ()>) {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.entry(Self::key_of(obj))
            .or_insert_with(|| self.clock.now());
    }

    /// Reconcile an object that may not have deserialised: a malformed object is logged,
    /// counted and reported once per distinct error as a Warning event, then waits for a change.
    pub async fn reconcile_guarded(&self, guarded: &DeserializeGuard<P::Object>) -> Report {
        match &guarded.0 {
            Ok(obj) => self.reconcile(obj).await,
            Err(invalid) => {
                let key = Self::key_of(guarded);
                self.metrics.invalid(self.name());
                self.metrics.error(self.name(), ErrorCategory::InvalidSpec);
                let is_new = {
                    let mut map = self
                        .invalid
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    map.insert(key.clone(), invalid.error.clone()).as_ref() != Some(&invalid.error)
                };
                tracing::warn!(object = %key, error = %invalid.error, "object does not deserialise; waiting for an edit");
                let mut report = Report::skipped(Action::await_change());
                if is_new {
                    let t = crate::condition::Transition {
                        type_: "ConfigValid".into(),
                        from: None,
                        status: crate::condition::ConditionStatus::False,
                        reason: "InvalidSpec".into(),
                        message: invalid.error.clone(),
                    };
                    let reference = guarded.object_ref(&());
                    report.events = self
                        .events
                        .publish(&reference, std::slice::from_ref(&t))
                        .await;
                    self.count_writes(WriteVerb::Event, report.events);
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
            if obj.annotations().get(&self.config.scheme.paused_annotation()).map(String::as_str) == Some("true") {
                tracing::debug!("reconciliation paused");
                self.metrics.paused(self.name());
                return Report::skipped(Action::await_change());
            }
            self.invalid.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&key);
            let seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&key);
            if let Some(at) = seen {
                self.metrics.queue_wait(self.name(), elapsed(at, self.clock.now()).as_secs_f64());
            }
            let started = Instant::now();
            let report = self.run(obj, &key).await;
            self.metrics.reconciled(self.name(), started.elapsed().as_secs_f64());
            for e in &report.errors {
                self.metrics.error(self.name(), e.category);
            }
            tracing::debug!(status = ?report.status, applied = report.applied, deleted = report.deleted, status_written = report.status_written, "reconciled");
            report
        }
        .instrument(span)
        .await
    }

    fn count_writes(&self, verb: WriteVerb, n: usize) {
        for _ in 0..n {
            self.metrics.write(self.name(), verb);
        }
    }

    async fn run(&self, obj: &P::Object, key: &ObjectKey) -> Report {
        let parent = ParentRef {
            api_version: P::Object::api_version(&()).into_owned(),
            kind: P::Object::kind(&()).into_owned(),
            name: key.name.clone(),
            namespace: key.namespace.clone(),
            uid: obj.meta().uid.clone().unwrap_or_default(),
            labels: obj.labels().clone(),
        };
        let kinds = self.pipeline.child_kinds();
        let (children, list_errors) =
            apply::list_children(&self.client, &kinds, &parent, &self.config.scheme).await;
        let fetched = self.pipeline.fetch(&self.client, obj, &children).await;
        let observation = self.pipeline.compose(obj, &children, fetched);

        let mut errors: Vec<CategorizedError> = list_errors
            .iter()
            .map(CategorizedError::from_error)
            .collect();
        let blocked = |errors: &[CategorizedError]| {
            observation
                .components
                .iter()
                .flat_map(|c| c.errors.iter())
                .chain(errors.iter())
                .any(|e| {
                    e.category.is_user_fixable() || e.category == ErrorCategory::Infrastructure
                })
        };
        let (mut applied, mut deleted) = (0, 0);
        let mut requeue_after = None;
        if !blocked(&errors) {
            match self.pipeline.plan(obj, &observation) {
                Ok(plan) => {
                    requeue_after = plan.requeue_after;
                    let (a, d, apply_errors) = self
                        .apply_plan(plan, &parent, &kinds, &children, &observation)
                        .await;
                    applied = a;
                    deleted = d;
                    errors.extend(apply_errors.iter().map(CategorizedError::from_error));
                }
                Err(e) => errors.push(CategorizedError::from_error(&e)),
            }
        }

        let (status, status_written, events, status_error) =
            self.write_status(obj, &observation, &errors).await;
        if let Some(e) = status_error {
            errors.push(CategorizedError::from_error(&e));
        }
        let mut all: Vec<CategorizedError> = observation
            .components
            .iter()
            .flat_map(|c| c.errors.iter().cloned())
            .collect();
        all.extend(errors);
        let action = self.decide(key, &all, observation.external, requeue_after);
        Report {
            action,
            status: Some(status),
            applied,
            deleted,
            status_written,
            events,
            errors: all,
            skipped: false,
        }
    }

    async fn apply_plan(
        &self,
        plan: PlanResult,
        parent: &ParentRef,
        kinds: &[crate::pipeline::ChildKind],
        children: &Children,
        observation: &Observation<P::State>,
    ) -> (usize, usize, Vec<ApplyError>) {
        let scheme = &self.config.scheme;
        let mut errors = Vec::new();
        let mut prepared = Vec::new();
        for (desired, owned) in plan
            .apply
            .iter()
            .map(|d| (d, true))
            .chain(plan.apply_without_owner.iter().map(|d| (d, false)))
        {
            let key_guess = desired.object.metadata.name.clone().map(|name| ObjectKey {
                kind: desired.kind.resource.kind.clone(),
                group: desired.kind.resource.group.clone(),
                namespace: if desired.kind.namespaced {
                    desired
                        .object
                        .metadata
                        .namespace
                        .clone()
                        .or_else(|| parent.namespace.clone())
                } else {
                    None
                },
                name,
            });
            let mut live = key_guess.as_ref().and_then(|k| children.get(k).cloned());
            if live.is_none()
                && !owned
                && let Some(k) = &key_guess
            {
                match apply::get(&self.client, &desired.kind, k).await {
                    Ok(found) => live = found,
                    Err(e) => {
                        errors.push(e);
                        continue;
                    }
                }
            }
            match apply::prepare(
                desired,
                owned,
                parent,
                scheme,
                &observation.labels,
                live.as_ref(),
            ) {
                Ok((key, body)) => prepared.push((owned, key, desired.kind.clone(), body, live)),
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return (0, 0, errors);
        }
        prepared.sort_by(|a, b| (!a.0, &a.1).cmp(&(!b.0, &b.1)));
        let mut applied = 0;
        for (_, key, kind, body, live) in &prepared {
            let unchanged = live.as_ref().is_some_and(|l| {
                serde_json::to_value(l)
                    .is_ok_and(|lv| !crate::diff::needs_apply(body, &lv, &scheme.manager))
            });
            if unchanged {
                continue;
            }
            tracing::info!(object = %key, "applying");
            match apply::apply(&self.client, kind, key, body, &scheme.manager).await {
                Ok(()) => {
                    applied += 1;
                    self.metrics.write(self.name(), WriteVerb::Apply);
                }
                Err(e) => {
                    errors.push(e);
                    return (applied, 0, errors);
                }
            }
        }
        let keep: Vec<ObjectKey> = prepared.iter().map(|p| p.1.clone()).collect();
        let mut deletions: Vec<_> = plan.delete.clone();
        deletions.extend(apply::orphans(children, kinds, parent, &keep));
        deletions.sort_by(|a, b| a.1.cmp(&b.1));
        deletions.dedup_by(|a, b| a.1 == b.1);
        let mut deleted = 0;
        for (kind, key) in &deletions {
            tracing::info!(object = %key, "deleting");
            match apply::delete(&self.client, kind, key).await {
                Ok(true) => {
                    deleted += 1;
                    self.metrics.write(self.name(), WriteVerb::Delete);
                }
                Ok(false) => {}
                Err(e) => errors.push(e),
            }
        }
        (applied, deleted, errors)
    }

    /// Derive status, patch it if changed, publish transition events.
    async fn write_status(
        &self,
        obj: &P::Object,
        observation: &Observation<P::State>,
        errors: &[CategorizedError],
    ) -> (OverallStatus, bool, usize, Option<ApplyError>) {
        let current = serde_json::to_value(obj)
            .ok()
            .and_then(|mut v| v.get_mut("status").map(Value::take))
            .unwrap_or(Value::Null);
        let previous: Vec<Condition> = current
            .get("conditions")
            .cloned()
            .and_then(|c| serde_json::from_value(c).ok())
            .unwrap_or_default();
        let mut derived = derive(&DeriveInput {
            components: &observation.components,
            errors,
            previous: &previous,
            generation: obj.meta().generation,
            now: now_seconds(self.clock.as_ref()),
            grace: self.config.grace,
        });
        self.pipeline
            .decorate(obj, observation, &mut derived.conditions);
        derived.conditions.prune_unset();
        let (conditions, transitions) = derived.conditions.finish();
        let status = self
            .pipeline
            .status(obj, observation, derived.status, conditions);
        if status == current {
            return (derived.status, false, 0, None);
        }
        let resource = ApiResource::erase::<P::Object>(&());
        let api = apply::parent_api(&self.client, &resource, obj.meta().namespace.as_deref());
        let name = obj.meta().name.clone().unwrap_or_default();
        let body = serde_json::json!({
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": {"name": name, "namespace": obj.meta().namespace},
            "status": status,
        });
        let pp = PatchParams::apply(&self.config.scheme.manager).force();
        if let Err(source) = api.patch_status(&name, &pp, &Patch::Apply(&body)).await {
            return (
                derived.status,
                false,
                0,
                Some(ApplyError::PatchStatus {
                    source: Box::new(source),
                }),
            );
        }
        self.metrics.write(self.name(), WriteVerb::Status);
        let events = self
            .events
            .publish(&obj.object_ref(&()), &transitions)
            .await;
        self.count_writes(WriteVerb::Event, events);
        (derived.status, true, events, None)
    }

    fn decide(
        &self,
        key: &ObjectKey,
        errors: &[CategorizedError],
        external: bool,
        requeue_after: Option<Duration>,
    ) -> Action {
        let has = |c: ErrorCategory| errors.iter().any(|e| e.category == c);
        if has(ErrorCategory::Infrastructure) {
            let retry_after = errors.iter().filter_map(|e| e.retry_after).max();
            let delay = self.backoff.failure(key, retry_after);
            tracing::info!(
                delay_s = delay.as_secs_f64(),
                "infrastructure error; backing off"
            );
            return Action::requeue(delay);
        }
        self.backoff.success(key);
        if errors.iter().any(|e| e.category.is_user_fixable()) {
            for e in errors.iter().filter(|e| e.category.is_user_fixable()) {
                tracing::info!(category = %e.category, error = %e.message, "waiting for a fix");
            }
            return if external {
                Action::requeue(self.config.slow_recheck)
            } else {
                Action::await_change()
            };
        }
        if has(ErrorCategory::ResourceExhaustion) {
            return Action::requeue(self.config.slow_recheck);
        }
        requeue_after.map_or_else(Action::await_change, Action::requeue)
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
