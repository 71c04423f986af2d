//! Objects being deleted, and the pipeline's finalizer.
//!
//! Contract:
//! - The finalizer ([`Pipeline::finalizer`]) is added only when the pipeline asks for one and
//!   [`Pipeline::needs_finalizer`] says this object needs it, to a live object that lacks it and
//!   is not being deleted, before any child is applied (if adding fails, nothing is applied).
//! - A live object that carries the finalizer but no longer needs it is released:
//!   [`Pipeline::finalize`] runs and the finalizer is removed once it succeeded (an Auth error
//!   removes it anyway, as on deletion). Release errors are retried with the engine's backoff;
//!   they do not block the rest of the reconcile.
//! - An object with a `deletionTimestamp` is never planned, applied nor given a status. When
//!   it carries our finalizer, [`Pipeline::finalize`] runs and the finalizer is removed once it
//!   succeeded. Namespace deletion is never blocked (NOTES row 23): when the object's namespace
//!   is terminating, or reading it is Forbidden, or finalize fails with an Auth error (access
//!   Forbidden), the finalizer is removed without (further) cleanup. Other finalize errors are
//!   retried like any reconcile error.
//! - Finalizer patches are JSON merge patches of the whole list carrying the object's
//!   resourceVersion, so a concurrent change of the list fails (409, retried) instead of being
//!   overwritten.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

use super::{Engine, Report};
use crate::apply::{self, ApplyError};
use crate::category::Direction;
use crate::category::{CategorizedError, ErrorCategory, categorized_kube_error};
use crate::metrics::WriteVerb;
use crate::pipeline::{ObjectKey, Pipeline};

impl<P: Pipeline> Engine<P> {
    async fn patch_finalizers(
        &self,
        obj: &P::Object,
        finalizers: Vec<String>,
    ) -> Result<(), ApplyError> {
        let resource = ApiResource::erase::<P::Object>(&());
        let api = apply::parent_api(&self.client, &resource, obj.meta().namespace.as_deref());
        let patch = serde_json::json!({
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": obj.meta().resource_version,
            }
        });
        api.patch(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map(|_| ())
        .map_err(|source| ApplyError::PatchFinalizers {
            source: Box::new(source),
        })?;
        self.handles.writes(WriteVerb::Finalizer, 1);
        Ok(())
    }

    /// Add the pipeline's finalizer when this object needs it and lacks it; returns the patches
    /// sent.
    pub(super) async fn ensure_finalizer(&self, obj: &P::Object) -> Result<usize, ApplyError> {
        let Some(name) = self.pipeline.finalizer() else {
            return Ok(0);
        };
        if obj.finalizers().contains(&name) || !self.pipeline.needs_finalizer(obj) {
            return Ok(0);
        }
        let mut list = obj.finalizers().to_vec();
        list.push(name);
        self.patch_finalizers(obj, list).await?;
        Ok(1)
    }

    /// Release the finalizer of a live object that carries it but no longer needs it; returns
    /// the patches sent.
    pub(super) async fn release_finalizer(
        &self,
        obj: &P::Object,
    ) -> Result<usize, CategorizedError> {
        let Some(name) = self.pipeline.finalizer() else {
            return Ok(0);
        };
        if !obj.finalizers().contains(&name) || self.pipeline.needs_finalizer(obj) {
            return Ok(0);
        }
        match self.pipeline.finalize(&self.client, obj).await {
            Err(e) if e.category == ErrorCategory::Auth => {
                tracing::warn!(error = %e.message, "cleanup forbidden; releasing the finalizer anyway");
            }
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        let rest: Vec<String> = obj
            .finalizers()
            .iter()
            .filter(|f| **f != name)
            .cloned()
            .collect();
        self.patch_finalizers(obj, rest)
            .await
            .map_err(|e| CategorizedError::from_error(&e))?;
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
    pub(super) async fn finalize(&self, obj: &P::Object, key: &ObjectKey) -> Report {
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
            Ok(false) => match self.pipeline.finalize(&self.client, obj).await {
                Err(e) if e.category == ErrorCategory::Auth => {
                    tracing::warn!(error = %e.message, "cleanup forbidden; removing the finalizer anyway");
                    Ok(())
                }
                other => other,
            },
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
                match self.patch_finalizers(obj, rest).await {
                    Ok(()) => {
                        report.finalizers_written = 1;
                        self.forget(key);
                    }
                    Err(e) => report.errors.push(CategorizedError::from_error(&e)),
                }
            }
            Err(e) => report.errors.push(e),
        }
        report.action = self.decide(key, &report.errors, false, None);
        report
    }
}
