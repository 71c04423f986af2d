//! Objects being deleted, and the pipeline's finalizer.
//!
//! Contract:
//! - The finalizer ([`Pipeline::finalizer`]) is added only when the pipeline asks for one and
//!   [`Pipeline::needs_finalizer`] says this object needs it, to a live object that lacks it and
//!   is not being deleted, before any child is applied (if adding fails, nothing is applied).
//! - A live object that carries the finalizer but no longer needs it is released:
//!   [`Pipeline::finalize`] runs and the finalizer is removed once it succeeded. Release errors
//!   are retried with the engine's backoff; they do not block the rest of the reconcile.
//! - An object with a `deletionTimestamp` is never planned, applied nor given a status. When
//!   it carries our finalizer, [`Pipeline::finalize`] runs and the finalizer is removed once it
//!   succeeded. When the object's namespace is terminating, or reading it is Forbidden, the
//!   finalizer is removed without cleanup (so namespace deletion is not blocked),
//!   unless the pipeline cleans up there too ([`Pipeline::finalize_in_terminating_namespace`]:
//!   cluster-scoped objects do not go with the namespace). Other finalize errors are retried
//!   like any reconcile error.
//! - **Forbidden cleanup.** A cleanup refused with 401/403 (an Auth error of
//!   [`Pipeline::finalize`]) is the controller's RBAC, not the object owner's doing: the
//!   finalizer stays (removing it would leak what the cleanup exists to remove, cluster-scoped
//!   RBAC among it), the error becomes Infrastructure with reason [`CLEANUP_FORBIDDEN`] and is
//!   retried with backoff (so a fixed ClusterRole is picked up without an edit of the object),
//!   and the object says so: on deletion, its `Ready` condition turns False with that reason
//!   (a merge patch of `status.conditions` only, carrying the copy's `resourceVersion` so an
//!   outdated copy changes nothing; sent only when `Ready` is not already False with that
//!   reason) and a Warning event follows; on release, the error feeds the status like any
//!   other.
//! - Finalizer patches are JSON merge patches of the whole list carrying the object's
//!   resourceVersion, so a concurrent change of the list fails (409) instead of being
//!   overwritten.
//! - **Outdated copies.** A finalizer patch that succeeds replaces the copy it was sent from;
//!   the reconcile goes on with that copy (the list is the only field the patch changed), but
//!   its children's watch events start the next reconcile before the object's own watch has
//!   delivered the patched object, so the controller's cache still serves the old copy, which
//!   lacks the finalizer. Patching again from it would be refused (409). The engine therefore
//!   remembers the version the patch was sent from (and the one it produced,
//!   [`super::memory`]); a reconcile of that same copy sends nothing and plans nothing: it
//!   requeues for the rest of [`STALE_COPY_WAIT`], as the watch normally delivers the fresh
//!   copy (a reconcile) well before. A copy still served after that bound is replaced by a GET
//!   of the object, and the reconcile runs on what the server holds; so an object can never be
//!   stranded on a cache that does not move. The same holds after a patch refused with 409
//!   from a cached copy: the copy is outdated (someone else changed the object), so the
//!   reconcile stops there without counting a failure in the backoff and waits the same way.
//!   A 409 on a copy just read from the server is a real concurrent writer: an
//!   infrastructure error, retried with backoff. The rule covers every finalizer patch:
//!   adding, releasing, and removing on deletion (the copy a removal outdated is not finalized
//!   again). The wait is measured on the engine's clock; a clock stepped back before the
//!   record ends it (one GET) rather than prolonging it.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use super::{Engine, Report};
use crate::apply::{self, ApplyError};
use crate::category::Direction;
use crate::category::{CategorizedError, ErrorCategory, categorized_kube_error};
use crate::clock::now_seconds;
use crate::condition::{ConditionSet, ConditionStatus, ConditionType, Reason};
use crate::metrics::WriteVerb;
use crate::pipeline::{ObjectKey, Pipeline};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// Why releasing a finalizer no longer needed failed.
pub(super) enum Release {
    /// The pipeline's cleanup failed.
    Cleanup(CategorizedError),
    /// The patch failed.
    Patch(ApplyError),
}

/// How long a reconcile waits for the watch to replace a copy our finalizer patch outdated
/// before it reads the object itself (see the module contract). Watch delivery takes
/// milliseconds; seconds mean the watch is down or far behind.
pub const STALE_COPY_WAIT: Duration = Duration::from_secs(5);

/// The reason of a cleanup refused with 401/403 (see the module contract).
pub const CLEANUP_FORBIDDEN: &str = "CleanupForbidden";

/// `e` as the engine reports a cleanup error: an Auth error (the controller's RBAC) becomes
/// an Infrastructure error with reason [`CLEANUP_FORBIDDEN`], retried with backoff.
fn cleanup_error(e: CategorizedError, finalizer: &str) -> CategorizedError {
    if e.category != ErrorCategory::Auth {
        return e;
    }
    tracing::warn!(error = %e.message, "cleanup forbidden; keeping the finalizer");
    let message = format!(
        "cleanup was refused, so the finalizer {finalizer} stays until the operator's RBAC \
         allows it (or it is removed by hand, leaving what it cleans up behind): {}",
        e.message
    );
    CategorizedError {
        message,
        ..CategorizedError::new(ErrorCategory::Infrastructure, "")
            .with_reason(Reason::custom(CLEANUP_FORBIDDEN))
    }
}

/// Whether `e` is a finalizer patch refused because the copy it was sent from is outdated
/// (409 `Conflict`; not `AlreadyExists`).
pub(super) fn outdated_copy(e: &ApplyError) -> bool {
    matches!(
        e,
        ApplyError::PatchFinalizers { source }
            if matches!(&**source, kube::Error::Api(s) if s.code == 409 && s.reason != "AlreadyExists")
    )
}

impl Report {
    /// Not reconciled: the copy given is outdated ([`Report::stale`]).
    pub(super) fn stale(action: Action) -> Self {
        let mut report = Self::skipped(action);
        report.stale = true;
        report
    }
}

impl<P: Pipeline> Engine<P> {
    /// The copy of the object to reconcile instead of `obj` (`None`: `obj` itself), or the
    /// report ending this reconcile: `obj` is a copy a finalizer patch outdated, known so for
    /// less than [`STALE_COPY_WAIT`] (requeue for the rest), or the GET that replaces it after
    /// that found nothing (or an object that does not deserialise: the watch delivers that to
    /// [`Engine::reconcile_guarded`]) or failed. See the module contract.
    pub(super) async fn current_copy(
        &self,
        obj: &P::Object,
        key: &ObjectKey,
    ) -> Result<Option<Box<P::Object>>, Report> {
        let version = obj.meta().resource_version.as_deref();
        let Some(known) = self.memory.outdated_for(key, version, self.clock.now()) else {
            return Ok(None);
        };
        if let Some(rest) = STALE_COPY_WAIT.checked_sub(known).filter(|d| !d.is_zero()) {
            tracing::debug!(
                wait_s = rest.as_secs_f64(),
                "copy outdated by a finalizer patch; waiting for the watch"
            );
            return Err(Report::stale(Action::requeue(rest)));
        }
        let resource = ApiResource::erase::<P::Object>(&());
        let api = apply::parent_api(&self.client, &resource, obj.meta().namespace.as_deref());
        tracing::info!(
            "the watch has not replaced a copy a finalizer patch outdated; reading the object"
        );
        match api.get_opt(&key.name).await {
            Ok(found) => {
                let fresh = found.and_then(|o| {
                    o.try_parse::<P::Object>()
                        .map_err(
                            |e| tracing::warn!(error = %e, "the object read does not deserialise"),
                        )
                        .ok()
                });
                let Some(fresh) = fresh else {
                    return Err(Report::skipped(Action::await_change()));
                };
                self.memory
                    .fresh(key, fresh.meta().resource_version.as_deref());
                Ok(Some(Box::new(fresh)))
            }
            Err(e) => {
                let e = categorized_kube_error(&e, Direction::Upstream);
                let mut report = Report::skipped(Action::await_change());
                report.skipped = false;
                report.action = self
                    .decide(
                        key,
                        std::slice::from_ref(&e),
                        (false, false),
                        None,
                        e.retry_after,
                    )
                    .map_or_else(Action::await_change, Action::requeue);
                report.errors.push(e);
                Err(report)
            }
        }
    }

    /// Patch the finalizer list of `obj`; remembers `obj`'s copy as outdated when the patch
    /// succeeded, or was refused with 409 and `obj` came from a cache (not `reread`).
    async fn patch_finalizers(
        &self,
        obj: &P::Object,
        finalizers: Vec<String>,
        reread: bool,
    ) -> Result<(), ApplyError> {
        let resource = ApiResource::erase::<P::Object>(&());
        let api = apply::parent_api(&self.client, &resource, obj.meta().namespace.as_deref());
        let patch = serde_json::json!({
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": obj.meta().resource_version,
            }
        });
        let key = Self::key_of(obj);
        let version = obj.meta().resource_version.clone();
        let result = api
            .patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map_err(|source| ApplyError::PatchFinalizers {
                source: Box::new(source),
            });
        match result {
            Ok(patched) => {
                self.handles.writes(WriteVerb::Finalizer, 1);
                if let Some(version) = version {
                    let produced = patched.metadata.resource_version;
                    self.memory
                        .outdated(&key, version, produced, self.clock.now());
                }
                Ok(())
            }
            Err(e) => {
                if !reread
                    && outdated_copy(&e)
                    && let Some(version) = version
                {
                    self.memory.outdated(&key, version, None, self.clock.now());
                }
                Err(e)
            }
        }
    }

    /// Add the pipeline's finalizer when this object needs it and lacks it; returns the patches
    /// sent.
    pub(super) async fn ensure_finalizer(
        &self,
        obj: &P::Object,
        reread: bool,
    ) -> Result<usize, ApplyError> {
        let Some(name) = self.pipeline.finalizer() else {
            return Ok(0);
        };
        if obj.finalizers().contains(&name) || !self.pipeline.needs_finalizer(obj) {
            return Ok(0);
        }
        let mut list = obj.finalizers().to_vec();
        list.push(name);
        self.patch_finalizers(obj, list, reread).await?;
        Ok(1)
    }

    /// Release the finalizer of a live object that carries it but no longer needs it; returns
    /// the patches sent (an [`outdated_copy`] refusal as the [`ApplyError`]).
    pub(super) async fn release_finalizer(
        &self,
        obj: &P::Object,
        reread: bool,
    ) -> Result<usize, Release> {
        let Some(name) = self.pipeline.finalizer() else {
            return Ok(0);
        };
        if !obj.finalizers().contains(&name) || self.pipeline.needs_finalizer(obj) {
            return Ok(0);
        }
        if let Err(e) = self.pipeline.finalize(&self.client, obj).await {
            return Err(Release::Cleanup(cleanup_error(e, &name)));
        }
        let rest: Vec<String> = obj
            .finalizers()
            .iter()
            .filter(|f| **f != name)
            .cloned()
            .collect();
        self.patch_finalizers(obj, rest, reread)
            .await
            .map_err(Release::Patch)?;
        tracing::info!("finalizer no longer needed; released");
        Ok(1)
    }

    /// Whether cleanup must be skipped because the namespace is going away or may not be read.
    async fn namespace_terminating(&self, obj: &P::Object) -> Result<bool, CategorizedError> {
        let Some(ns) = obj.meta().namespace.as_deref() else {
            return Ok(false);
        };
        match Api::<Namespace>::all(self.client.clone()).get_opt(ns).await {
            Ok(Some(n)) => Ok(n.metadata.deletion_timestamp.is_some()
                || n.status.and_then(|s| s.phase).as_deref() == Some("Terminating")),
            Ok(None) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 403 => Ok(true),
            Err(e) => Err(categorized_kube_error(&e, Direction::Upstream)),
        }
    }

    /// Handle an object with a `deletionTimestamp`; see the module contract.
    pub(super) async fn finalize(&self, obj: &P::Object, key: &ObjectKey, reread: bool) -> Report {
        let mut report = Report::skipped(Action::await_change());
        report.skipped = false;
        let Some(name) = self.pipeline.finalizer() else {
            return report;
        };
        if !obj.finalizers().contains(&name) {
            return report;
        }
        let terminating = if self.pipeline.finalize_in_terminating_namespace() {
            Ok(false)
        } else {
            self.namespace_terminating(obj).await
        };
        let cleanup = match terminating {
            Ok(true) => {
                tracing::info!(
                    "namespace terminating or not readable; removing the finalizer without cleanup"
                );
                Ok(())
            }
            Ok(false) => self
                .pipeline
                .finalize(&self.client, obj)
                .await
                .map_err(|e| cleanup_error(e, &name)),
            Err(e) => Err(e),
        };
        match cleanup {
            Ok(()) => {
                let rest: Vec<String> = obj
                    .finalizers()
                    .iter()
                    .filter(|f| **f != name)
                    .cloned()
                    .collect();
                match self.patch_finalizers(obj, rest, reread).await {
                    Ok(()) => {
                        report.finalizers_written = 1;
                        report.progressed = true;
                        // Nothing else of the object is needed but the outdated copy's
                        // record (its delete event, or the controller, forgets that too).
                        self.forget(key);
                        if let Some(version) = obj.meta().resource_version.clone() {
                            self.memory.outdated(key, version, None, self.clock.now());
                        }
                    }
                    Err(e) if !reread && outdated_copy(&e) => {
                        return Report::stale(Action::requeue(STALE_COPY_WAIT));
                    }
                    Err(e) => report.errors.push(CategorizedError::from_error(&e)),
                }
            }
            Err(e) => {
                if e.reason.as_str() == CLEANUP_FORBIDDEN {
                    self.report_forbidden_cleanup(obj, &e, &mut report).await;
                }
                report.errors.push(e);
            }
        }
        let hold = report.errors.iter().filter_map(|e| e.retry_after).max();
        report.action = self
            .decide(key, &report.errors, (false, report.progressed), None, hold)
            .map_or_else(Action::await_change, Action::requeue);
        report
    }

    /// Say on a deleting object that its cleanup was refused ([`CLEANUP_FORBIDDEN`]): `Ready`
    /// False with that reason, by a merge patch of `status.conditions` carrying the copy's
    /// `resourceVersion` (the rest of the status is left as it is; an outdated copy is
    /// refused with 409 and changes nothing), unless `Ready` already is False with that
    /// reason; then the transition's event. A failed write is logged and retried with the
    /// cleanup.
    async fn report_forbidden_cleanup(
        &self,
        obj: &P::Object,
        error: &CategorizedError,
        report: &mut Report,
    ) {
        let whole = serde_json::to_value(obj).unwrap_or(serde_json::Value::Null);
        let previous: Vec<Condition> = whole
            .pointer("/status/conditions")
            .cloned()
            .and_then(|c| serde_json::from_value(c).ok())
            .unwrap_or_default();
        let mut conditions = ConditionSet::new(
            previous,
            obj.meta().generation,
            now_seconds(self.clock.as_ref()),
        );
        let changed = conditions.set(
            &ConditionType::Ready,
            ConditionStatus::False,
            &error.reason,
            error.message.clone(),
        );
        if !changed {
            return;
        }
        let (conditions, transitions) = conditions.finish();
        let resource = ApiResource::erase::<P::Object>(&());
        let api = apply::parent_api(&self.client, &resource, obj.meta().namespace.as_deref());
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": obj.meta().resource_version},
            "status": {"conditions": conditions},
        });
        let params = PatchParams {
            field_manager: Some(self.config.scheme.manager.clone()),
            ..PatchParams::default()
        };
        if let Err(e) = api
            .patch_status(&obj.name_any(), &params, &Patch::Merge(&patch))
            .await
        {
            tracing::warn!(error = %e, "could not report the forbidden cleanup in the status");
            return;
        }
        self.handles.writes(WriteVerb::Status, 1);
        report.status_written = true;
        report.events = self
            .events
            .publish(&obj.object_ref(&()), &transitions)
            .await;
        self.handles.writes(WriteVerb::Event, report.events);
    }
}
