//! One reconcile of a live object once [`Engine::reconcile`] let it through (not paused, not
//! held): steps 2 to 6 of the engine's contract (the finalizer, the listing, fetch and compose,
//! plan and apply, status, the requeue decision) and the decision itself.

use std::time::Duration;

use kube::Resource;
use kube::runtime::controller::Action;

use super::finalize::{self, Release};
use super::{Engine, Report};
use crate::apply::{self, ParentRef};
use crate::category::{CategorizedError, Direction, ErrorCategory};
use crate::pipeline::{ObjectKey, Pipeline};

impl<P: Pipeline> Engine<P> {
    fn parent_of(&self, obj: &P::Object, key: &ObjectKey) -> ParentRef {
        ParentRef {
            api_version: P::Object::api_version(&()).into_owned(),
            kind: P::Object::kind(&()).into_owned(),
            name: key.name.clone(),
            namespace: key.namespace.clone(),
            uid: obj.meta().uid.clone().unwrap_or_default(),
            labels: self.pipeline.inherited_labels(obj),
        }
    }

    pub(super) async fn run(&self, obj: &P::Object, key: &ObjectKey) -> Report {
        let fresh = match self.current_copy(obj, key).await {
            Ok(fresh) => fresh,
            Err(report) => return report,
        };
        let (obj, reread) = fresh.as_deref().map_or((obj, false), |f| (f, true));
        if obj.meta().deletion_timestamp.is_some() {
            return self.finalize(obj, key, reread).await;
        }
        let parent = self.parent_of(obj, key);
        let mut errors: Vec<CategorizedError> = Vec::new();
        let mut finalizers_written = 0;
        let mut finalizer_missing = false;
        match self.ensure_finalizer(obj, reread).await {
            Ok(n) => finalizers_written = n,
            Err(e) if !reread && finalize::outdated_copy(&e) => {
                return Report::stale(Action::requeue(finalize::STALE_COPY_WAIT));
            }
            Err(e) => {
                finalizer_missing = true;
                errors.push(CategorizedError::from_error(&e));
            }
        }
        match self.release_finalizer(obj, reread).await {
            Ok(n) => finalizers_written += n,
            Err(Release::Patch(e)) if !reread && finalize::outdated_copy(&e) => {
                return Report::stale(Action::requeue(finalize::STALE_COPY_WAIT));
            }
            Err(Release::Patch(e)) => errors.push(CategorizedError::from_error(&e)),
            Err(Release::Cleanup(e)) => errors.push(e),
        }
        let listing = apply::list_children(
            &self.client,
            &self.kinds,
            &parent,
            &self.config.scheme,
            self.store.as_deref(),
            self.config.slow_recheck,
        )
        .await;
        let children = listing.children;
        let fetched = self.pipeline.fetch(&self.client, obj, &children).await;
        let observation = self.pipeline.compose(obj, &children, fetched);
        errors.extend(listing.errors.iter().map(CategorizedError::from_error));

        let upstream_blocked = observation
            .components
            .iter()
            .filter(|c| c.effective_direction() == Direction::Upstream)
            .flat_map(|c| c.errors.iter())
            .any(|e| e.category.is_user_fixable() || e.category == ErrorCategory::Infrastructure);
        let blocked = upstream_blocked
            || !listing.errors.is_empty()
            || finalizer_missing
            || throttled(&errors);
        let (mut applied, mut deleted, mut progressed) = (0, 0, finalizers_written > 0);
        let mut requeue_after = None;
        let mut keep_requeue = false;
        if blocked {
            tracing::debug!(
                "an upstream dependency, the listing or adding the finalizer failed; not planning"
            );
        } else {
            match self.pipeline.plan(obj, &observation) {
                Ok(plan) => {
                    requeue_after = plan.requeue_after;
                    keep_requeue = plan.requeue_despite_errors;
                    let outcome = self
                        .apply_plan(
                            obj,
                            key,
                            plan,
                            &parent,
                            &children,
                            &listing.missing_kinds,
                            &observation,
                        )
                        .await;
                    applied = outcome.applied;
                    deleted = outcome.deleted;
                    progressed |= outcome.progressed > 0;
                    errors.extend(outcome.errors.iter().map(CategorizedError::from_error));
                }
                Err(e) => errors.push(CategorizedError::from_error(&e)),
            }
        }

        // After a `Retry-After` nothing more is sent: the status follows once the hold passed.
        let outcome = self
            .write_status(obj, key, &observation, &errors, !throttled(&errors))
            .await;
        if let Some(e) = &outcome.error {
            errors.push(CategorizedError::from_error(e));
        }
        // Only the API server's answers to the engine's own requests hold the object: a
        // component's `retry_after` may be a pipeline's recheck interval (a kind not served).
        let hold = errors.iter().filter_map(|e| e.retry_after).max();
        let mut all: Vec<CategorizedError> = Vec::new();
        for e in observation
            .components
            .iter()
            .flat_map(|c| c.errors.iter())
            .chain(errors.iter())
        {
            // A listing error also reaches the components that look up that kind: once.
            if !all.contains(e) {
                all.push(e.clone());
            }
        }
        let next = match requeue_after.filter(|_| keep_requeue) {
            // The components' errors are the plan's to retry (it scheduled that itself): the
            // engine's own errors alone decide, and the plan's requeue fills in when they ask
            // for nothing.
            Some(planned) => Some(self.decide_own(
                key,
                &errors,
                (observation.external, progressed),
                planned,
                hold,
            )),
            None => self.decide(
                key,
                &all,
                (observation.external, progressed),
                requeue_after,
                hold,
            ),
        };
        let action = next.map_or_else(Action::await_change, Action::requeue);
        Report {
            action,
            status: Some(outcome.status),
            applied,
            deleted,
            status_written: outcome.written,
            events: outcome.events,
            finalizers_written,
            progressed,
            errors: all,
            skipped: false,
            held: false,
            stale: false,
        }
    }

    /// When to reconcile `key` again after the engine's own `errors` when the plan keeps its
    /// `planned` requeue despite component errors; see the module contract, step 6. An
    /// infrastructure error or a server's `Retry-After` backs off as always (the backoff may
    /// grow past `planned`); otherwise the sooner of `planned` and a user-fixable or
    /// exhaustion recheck. The backoff is never reset here: the components' errors, which may
    /// be infrastructure ones, were left out of the decision.
    fn decide_own(
        &self,
        key: &ObjectKey,
        errors: &[CategorizedError],
        (external, progressed): (bool, bool),
        planned: Duration,
        hold: Option<Duration>,
    ) -> Duration {
        let infra = errors
            .iter()
            .any(|e| e.category == ErrorCategory::Infrastructure);
        if (infra || hold.is_some())
            && let Some(own) = self.decide(key, errors, (external, progressed), None, hold)
        {
            return own;
        }
        match self.recheck(errors, external) {
            Some(Recheck::After(own)) => own.min(planned),
            Some(Recheck::OnChange) | None => planned,
        }
    }

    /// When to reconcile `key` again (`None`: on a change) after `errors`; see the module
    /// contract, step 6. `external`: the object depends on state outside the cluster;
    /// `progressed`: the reconcile made progress ([`Report::progressed`]), so an
    /// infrastructure error does not grow the backoff ([`crate::Backoff::failure_after`]).
    pub(super) fn decide(
        &self,
        key: &ObjectKey,
        errors: &[CategorizedError],
        (external, progressed): (bool, bool),
        requeue_after: Option<Duration>,
        hold: Option<Duration>,
    ) -> Option<Duration> {
        let has = |c: ErrorCategory| errors.iter().any(|e| e.category == c);
        if has(ErrorCategory::Infrastructure) {
            let retry_after = errors.iter().filter_map(|e| e.retry_after).max();
            // Throttled only (every infrastructure error carried the server's Retry-After: a
            // 429 or a 503 saying when to come back): the server's load, not evidence against
            // the object, and the hold below already keeps the object away for as long as the
            // server asked. Like progress, it does not grow the backoff, within the same bound
            // (`MAX_PROGRESSING_FAILURES` in a row), so a server throttling one object forever
            // still sees it back off to the cap.
            let throttled = errors
                .iter()
                .filter(|e| e.category == ErrorCategory::Infrastructure)
                .all(|e| e.retry_after.is_some());
            let delay = self
                .backoff
                .failure_after(key, retry_after, progressed || throttled);
            if let Some(ra) = hold {
                // The requeue alone would not do: a child's watch event reconciles at once.
                // Capped like the backoff, so no server can park an object (its spec edits,
                // its finalizer) for longer. The deadline is on the engine's clock (wall
                // time) while the requeue runs on tokio's monotonic timer: a clock step can
                // shift one against the other, by at most the cap.
                let now = self.clock.now();
                if let Some(until) = later(now, self.config.backoff.honoured(ra)) {
                    self.memory.hold(key, until, now);
                }
            }
            tracing::info!(
                delay_s = delay.as_secs_f64(),
                progressed,
                "infrastructure error; backing off"
            );
            return Some(delay);
        }
        self.backoff.success(key);
        match self.recheck(errors, external) {
            Some(Recheck::After(d)) => Some(d),
            Some(Recheck::OnChange) => None,
            None => requeue_after,
        }
    }

    /// The requeue `errors` without an infrastructure one decide: a user-fixable error waits
    /// for a change (a slow recheck when the parent depends on something outside the cluster),
    /// resource exhaustion rechecks slowly; `None` when they decide nothing.
    fn recheck(&self, errors: &[CategorizedError], external: bool) -> Option<Recheck> {
        if errors.iter().any(|e| e.category.is_user_fixable()) {
            for e in errors.iter().filter(|e| e.category.is_user_fixable()) {
                tracing::info!(category = %e.category, error = %e.message, "waiting for a fix");
            }
            return Some(if external {
                Recheck::After(self.config.slow_recheck)
            } else {
                Recheck::OnChange
            });
        }
        if errors
            .iter()
            .any(|e| e.category == ErrorCategory::ResourceExhaustion)
        {
            return Some(Recheck::After(self.config.slow_recheck));
        }
        None
    }
}

/// What errors without an infrastructure one ask for ([`Engine::recheck`]).
enum Recheck {
    /// Reconcile again on a change only.
    OnChange,
    /// Reconcile again after this long.
    After(Duration),
}

/// Whether the API server asked us (with `Retry-After`) to wait before the next request.
fn throttled(errors: &[CategorizedError]) -> bool {
    errors.iter().any(|e| e.retry_after.is_some())
}

/// `now + d`, `None` past the end of time.
fn later(now: k8s_openapi::jiff::Timestamp, d: Duration) -> Option<k8s_openapi::jiff::Timestamp> {
    k8s_openapi::jiff::SignedDuration::try_from(d)
        .ok()
        .and_then(|d| now.checked_add(d).ok())
}
