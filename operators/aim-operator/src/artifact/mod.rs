//! AIMArtifact: one model downloaded into a PVC (NOTES row 22, kaiwo's AIMModelCache).
//!
//! [`fetch`] (runtime config; the current Job's pods and log) -> [`compose`] (size, claim,
//! download; components `RuntimeConfig` upstream, `CheckSizeJob` or `CachePvc` and
//! `DownloadJob` downstream) -> plan (below: the check-size Job while the size is unknown,
//! then the claim while absent and the download Job). Failures are classified from the pod
//! status and log tail ([`classify`]) into the condition reason: `SourceAuthFailure` (Auth),
//! `SourceNotFound` (InvalidSpec), `StorageFull` and `OOMKilled` (ResourceExhaustion),
//! `DownloadTimeout` (Infrastructure, retried), `InvalidModelSize`, `DownloadFailed`.
//!
//! Jobs are immutable: each Job is created once (a changed spec reaches the next Job, after
//! the finished one's TTL removed it, or after a user deleted it to retry at once) and never
//! pruned; the claim is created once and never resized. So they inherit the artifact's labels
//! (NOTES row 25) except, on a shared artifact, its creator's
//! ([`crate::cache::compose::CREATOR_LABELS`]), which a takeover by another cache may change
//! after they were created ([`ArtifactPipeline::inherited_labels`]). A permanent failure (auth, not found,
//! storage full, ...) is recorded in its condition with the failed Job's fingerprint and not
//! retried until the spec changes; Infrastructure failures are retried by deleting the failed
//! Job on the bounded schedule of [`retry`] (30 s doubling to 5 min), not after its TTL, the
//! artifact being requeued for the retry time (`schedule_retry`); other user-fixable
//! failures wait for a spec change.
//!
//! Status: `discoveredSizeBytes`, `displaySize`, `allocatedSize` (the claim's request),
//! `headroomPercent`, `mode` (`Dedicated` when owned, else `Shared`),
//! `persistentVolumeClaim`, `status`, conditions, `observedGeneration`; `progress`,
//! `download` and `lastUsed` belong to the downloader: never part of the operator's status
//! apply, so they are neither overwritten with stale values nor taken over.
//!
//! Progress: the downloader patches `status.progress` itself, as the download pod's own
//! identity, planned while the download runs ([`download`]); the design is
//! [`kinfer_builders::discovery_job::progress_reporter`]'s, the behaviour docs/aim.md's.

pub mod classify;
pub mod compose;
mod download;
pub mod fetch;
pub mod retry;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::aim::{AIMArtifact, AIMArtifactStatus, CachingMode};
use kinfer_builders::discovery_job::{
    ArtifactInput, ArtifactJobs, DEFAULT_HEADROOM_PERCENT, JobResources, ProgressReporter,
    artifact_objects,
};
use kinfer_builders::naming::aim as names;
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use kinfer_state::health::ComponentHealth;
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredError, DesiredObject, Observation, Pipeline, PlanResult,
};
use kinfer_state::{CategorizedError, ErrorCategory, OverallStatus, Reason};
use kube::{Client, ResourceExt};

use self::download::compose_download;
pub use self::download::reporter_needed;
use self::fetch::Fetched;
use crate::context::Context;
use crate::runtime_config::{Resolved, resolve};
use crate::scheme;
use crate::service::{HasRuntimeConfig, observed};

/// The controller's short name (`aim-artifact-controller`).
pub const CONTROLLER: &str = scheme::controller::ARTIFACT;

/// The artifact's composed state.
#[derive(Debug, Clone, Default)]
pub struct ArtifactState {
    /// The resolved runtime config.
    pub runtime_config: Option<Resolved>,
    /// The model size, once known.
    pub size_bytes: Option<u64>,
    /// The headroom applied.
    pub headroom: u64,
    /// The check-size Job to apply.
    pub check_size: Option<Job>,
    /// The claim to apply (only while absent).
    pub claim: Option<PersistentVolumeClaim>,
    /// The claim's name and request (live, else planned).
    pub claim_status: Option<(String, Option<Quantity>)>,
    /// The download Job to apply.
    pub download: Option<Job>,
    /// The download pod's progress identity, while the download runs ([`reporter_needed`]).
    pub reporter: Option<ProgressReporter>,
    /// A failed Job to delete so it runs again ([`retry`]).
    pub rerun: Option<String>,
    /// When a failed Job is due to run again.
    pub retry_in: Option<std::time::Duration>,
}

/// The AIMArtifact pipeline.
#[derive(Debug)]
pub struct ArtifactPipeline {
    ctx: Arc<Context>,
}

impl ArtifactPipeline {
    /// A pipeline sharing `ctx`.
    pub fn new(ctx: Arc<Context>) -> Self {
        Self { ctx }
    }
}

/// For the live Job of `component`: when its failure was classified as Infrastructure (a
/// timeout, an unreachable or forbidden source, an evicted pod, ...), delete it now (`rerun`)
/// or say when ([`retry`]). The failure stays the component's error (its reason, e.g.
/// `DownloadTimeout`, on the condition); the plan keeps its requeue for the retry time despite
/// it ([`PlanResult::requeue_despite_errors`]), so a 300 s delay is not replaced by the
/// engine's error backoff. Permanent and user-fixable failures are not retried (they wait for
/// a spec change), and neither is a failure not classified (the Job's pods or log could not
/// be read: that error stays and the engine backs off).
fn schedule_retry(
    a: &AIMArtifact,
    (component, job): (&str, &Job),
    classified: bool,
    health: &ComponentHealth,
    now: k8s_openapi::jiff::Timestamp,
    state: &mut ArtifactState,
) {
    let retryable = classified
        && !health.errors.is_empty()
        && health
            .errors
            .iter()
            .all(|e| e.category == ErrorCategory::Infrastructure);
    if !retryable || !compose::job_state(job, "Failed") {
        return;
    }
    match retry::retry(
        retry::failed_at(job),
        retry::waiting_since(a, component),
        now,
    ) {
        // The deletion's watch event runs the next attempt.
        retry::Retry::Due => state.rerun = Some(job.name_any()),
        retry::Retry::After(d) => state.retry_in = Some(d),
    }
}

/// The Job kind as registered in `child_kinds` (the engine compares kinds, `prune` included).
fn job_kind() -> ChildKind {
    ChildKind::of::<Job>().prune(false)
}

fn child_name(a: &AIMArtifact, stage: &str) -> Result<String, CategorizedError> {
    names::artifact_child_name(&a.name_any(), &a.uid().unwrap_or_default(), stage)
        .map(|n| n.to_string())
        .map_err(|e| {
            CategorizedError::new(ErrorCategory::InvalidSpec, format!("{stage} name: {e}"))
                .with_reason(Reason::custom("NameTooLong"))
        })
}

/// The current Job and its container: the download once the size is known.
fn current(a: &AIMArtifact) -> Option<(String, &'static str)> {
    match compose::known_size(a) {
        Some(Ok(_)) => child_name(a, "download")
            .ok()
            .map(|n| (n, fetch::DOWNLOAD_CONTAINER)),
        Some(Err(_)) => None,
        None => child_name(a, "check-size")
            .ok()
            .map(|n| (n, fetch::CHECK_SIZE_CONTAINER)),
    }
}

/// An input the artifact's objects cannot be built from (InvalidSpec `InvalidArtifact`).
fn invalid(e: &dyn std::fmt::Display) -> CategorizedError {
    CategorizedError::new(ErrorCategory::InvalidSpec, e.to_string())
        .with_reason(Reason::custom("InvalidArtifact"))
}

/// The artifact as the parent of what it creates.
fn parent(a: &AIMArtifact) -> Result<kinfer_builders::Parent, CategorizedError> {
    Ok(kinfer_builders::Parent {
        name: Dns1123Subdomain::new(a.name_any()).map_err(|e| invalid(&e))?,
        namespace: Dns1123Label::new(a.namespace().unwrap_or_default()).map_err(|e| invalid(&e))?,
        managed_by: scheme::manager(CONTROLLER),
    })
}

fn input(
    a: &AIMArtifact,
    rc: Option<&Resolved>,
    bytes: Option<u64>,
    headroom: u64,
    jobs: &JobResources,
) -> Result<ArtifactInput, CategorizedError> {
    let env = crate::env::merge(&[
        rc.map(|r| r.spec.env.as_slice()).unwrap_or_default(),
        &a.spec.env,
    ]);
    Ok(ArtifactInput {
        parent: parent(a)?,
        uid: a.uid().unwrap_or_default(),
        pod_identity: kinfer_builders::security::PodIdentity::default(),
        source_uri: a.spec.source_uri.clone(),
        size_bytes: bytes,
        storage_class: a.spec.storage_class_name.clone().or_else(|| {
            rc.and_then(|r| r.spec.storage.as_ref())
                .and_then(|s| s.default_storage_class_name.clone())
        }),
        headroom_percent: Some(headroom),
        downloader_image: Some(a.spec.model_download_image.clone()),
        env: crate::env::k8s_env(&env).map_err(|e| invalid(&e))?,
        // The runtime config has none: the artifact's own (its creator copies a cache's).
        image_pull_secrets: a
            .spec
            .image_pull_secrets
            .iter()
            .map(|s| s.name.clone())
            .collect(),
        resources: Some(jobs.clone()),
    })
}

/// The claim's headroom: the runtime config's, else the default.
fn headroom(rc: Option<&Resolved>) -> u64 {
    rc.and_then(|r| r.spec.storage.as_ref())
        .and_then(|s| u64::try_from(s.headroom_percent()).ok())
        .unwrap_or(DEFAULT_HEADROOM_PERCENT)
}

fn error_health(component: &'static str, e: CategorizedError) -> ComponentHealth {
    ComponentHealth::new(component).downstream().error(e)
}

impl HasRuntimeConfig for ArtifactState {
    fn runtime_config(&self) -> Option<&Resolved> {
        self.runtime_config.as_ref()
    }
}

impl Pipeline for ArtifactPipeline {
    type Object = AIMArtifact;
    type Fetched = Fetched;
    type State = ArtifactState;
    type PlanError = DesiredError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        vec![
            // Jobs are immutable and expire by TTL, claims hold data: both are created once
            // and never pruned.
            job_kind(),
            ChildKind::of::<PersistentVolumeClaim>(),
            // The download pod's identity: pruned once the download is over.
            ChildKind::of::<ServiceAccount>(),
            ChildKind::of::<Role>(),
            ChildKind::of::<RoleBinding>(),
        ]
    }

    /// A shared artifact (no controller owner) keeps its creator's labels
    /// ([`crate::cache::compose::CREATOR_LABELS`]) to itself: a takeover by another cache
    /// changes them, and its claim and Jobs, created once, would keep whichever cache
    /// reconciled first. Its other labels, and all of a Dedicated artifact's, are inherited.
    fn inherited_labels(&self, object: &AIMArtifact) -> BTreeMap<String, String> {
        let mut labels = object.labels().clone();
        if !object
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true))
        {
            labels.retain(|k, _| !crate::cache::compose::CREATOR_LABELS.contains(&k.as_str()));
        }
        labels
    }

    async fn fetch(&self, client: &Client, object: &AIMArtifact, children: &Children) -> Fetched {
        let cur = current(object);
        fetch::fetch(
            &self.ctx,
            client,
            object,
            children,
            cur.as_ref().map(|(n, c)| (n.as_str(), *c)),
        )
        .await
    }

    fn compose(
        &self,
        object: &AIMArtifact,
        children: &Children,
        fetched: Fetched,
    ) -> Observation<ArtifactState> {
        let ns = object.namespace().unwrap_or_default();
        let (rc_health, rc) = resolve::resolve(&fetched.runtime_config);
        let headroom = headroom(rc.as_ref());
        let mut components = vec![rc_health];
        let mut state = ArtifactState {
            headroom,
            ..ArtifactState::default()
        };
        let job = |name: &str| children.typed::<Job>(Some(&ns), name).ok().flatten();
        let size = match compose::known_size(object) {
            Some(Ok(b)) => Some(b),
            Some(Err(e)) => {
                components.push(error_health(compose::CHECK_SIZE_JOB, e));
                None
            }
            None => match child_name(object, "check-size") {
                Ok(name) => {
                    let live = job(&name);
                    let (h, measured) =
                        compose::check_size(object, live.as_ref(), fetched.job.as_ref());
                    if let Some(j) = &live {
                        schedule_retry(
                            object,
                            (compose::CHECK_SIZE_JOB, j),
                            matches!(fetched.job, Some(Ok(_))),
                            &h,
                            fetched.now,
                            &mut state,
                        );
                    }
                    components.push(h);
                    if measured.is_none() && live.is_none() {
                        match input(object, rc.as_ref(), None, headroom, &fetched.jobs)
                            .and_then(|i| artifact_objects(&i).map_err(|e| invalid(&e)))
                        {
                            Ok(ArtifactJobs::CheckSize(j)) => {
                                let fp = compose::fingerprint(&j);
                                match compose::recorded_failure(
                                    object,
                                    compose::CHECK_SIZE_JOB,
                                    &fp,
                                ) {
                                    // A permanent failure is reported, not retried.
                                    Some(e) => {
                                        components.pop();
                                        components.push(error_health(compose::CHECK_SIZE_JOB, e));
                                    }
                                    None => state.check_size = Some(*j),
                                }
                            }
                            Ok(ArtifactJobs::Download { .. }) => {}
                            Err(e) => components.push(error_health(compose::CHECK_SIZE_JOB, e)),
                        }
                    }
                    measured
                }
                Err(e) => {
                    components.push(error_health(compose::CHECK_SIZE_JOB, e));
                    None
                }
            },
        };
        state.size_bytes = size;
        match size {
            Some(bytes) => compose_download(
                (object, children, &fetched, rc.as_ref()),
                bytes,
                &mut state,
                &mut components,
            ),
            None => components.push(compose::awaiting_size()),
        }
        state.runtime_config = rc;
        let obs = Observation::new(state);
        observed(obs, components)
    }

    fn plan(
        &self,
        object: &AIMArtifact,
        observation: &Observation<ArtifactState>,
    ) -> Result<PlanResult, DesiredError> {
        let s = &observation.state;
        let mut plan = PlanResult::default();
        for job in [&s.check_size, &s.download].into_iter().flatten() {
            plan.apply.push(DesiredObject::from_typed(job)?);
        }
        if let Some(name) = &s.rerun {
            let kind = job_kind();
            let key = kinfer_state::pipeline::ObjectKey {
                kind: kind.resource.kind.clone(),
                group: kind.resource.group.clone(),
                namespace: object.namespace(),
                name: name.clone(),
            };
            plan.delete.push((kind, key));
        }
        plan.requeue_after = s.retry_in;
        // The retry's delay, not the error backoff of the failure it retries.
        plan.requeue_despite_errors = s.retry_in.is_some();
        if let Some(c) = &s.claim {
            plan.apply.push(DesiredObject::from_typed(c)?);
        }
        if let Some(r) = &s.reporter {
            plan.apply
                .push(DesiredObject::from_typed(&r.service_account)?);
            plan.apply.push(DesiredObject::from_typed(&r.role)?);
            plan.apply.push(DesiredObject::from_typed(&r.binding)?);
        }
        Ok(plan)
    }

    fn status(
        &self,
        object: &AIMArtifact,
        observation: &Observation<ArtifactState>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value {
        let s = &observation.state;
        let previous = object.status.clone().unwrap_or_default();
        let owned = object
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true));
        let discovered = if object.spec.size.is_none() {
            s.size_bytes
                .and_then(|b| i64::try_from(b).ok())
                .or(previous.discovered_size_bytes)
        } else {
            previous.discovered_size_bytes
        };
        let st = AIMArtifactStatus {
            allocated_size: s
                .claim_status
                .as_ref()
                .and_then(|(_, q)| q.clone())
                .or(previous.allocated_size),
            conditions,
            discovered_size_bytes: discovered,
            display_size: s
                .size_bytes
                .map(compose::display_size)
                .or(previous.display_size),
            // The downloader's (it patches them): left out of our apply so it keeps them.
            download: None,
            headroom_percent: i32::try_from(s.headroom).ok(),
            last_used: None,
            mode: Some(if owned {
                CachingMode::Dedicated
            } else {
                CachingMode::Shared
            }),
            observed_generation: object.metadata.generation,
            persistent_volume_claim: s
                .claim_status
                .as_ref()
                .map(|(n, _)| n.clone())
                .or(previous.persistent_volume_claim),
            progress: None,
            status: scheme::phase(status),
        };
        serde_json::to_value(st).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use kinfer_state::pipeline::{ObjectKey, Pipeline as _};
    use kinfer_state::status::{DEFAULT_INFRA_GRACE, DeriveInput, derive};
    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;

    /// An artifact still measuring its size is not Ready, even when its size check's log is
    /// unreadable within the infrastructure grace period (which keeps its `CheckSizeJobReady`
    /// condition True): nothing has been downloaded, and a Ready artifact never starts its
    /// download.
    #[test]
    fn an_artifact_is_not_ready_before_its_download() {
        let at = "2026-01-01T00:00:00Z";
        let artifact: AIMArtifact = serde_json::from_value(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMArtifact",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "generation": 1},
            "spec": {"sourceUri": "hf://org/m"},
            "status": {"status": "Progressing", "conditions": [{
                "type": "CheckSizeJobReady", "status": "True", "reason": "SizeChecked",
                "message": "", "lastTransitionTime": at,
            }]},
        }))
        .unwrap();
        let name = child_name(&artifact, "check-size").unwrap();
        let job: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ns"},
            "status": {"conditions": [{"type": "Complete", "status": "True"}]},
        }))
        .unwrap();
        let mut children = Children::default();
        children.insert(
            ObjectKey {
                kind: "Job".into(),
                group: "batch".into(),
                namespace: Some("ns".into()),
                name,
            },
            job,
        );
        let now: k8s_openapi::jiff::Timestamp = at.parse().unwrap();
        let fetched = Fetched {
            runtime_config: resolve::Fetched {
                name: "default".into(),
                namespaced: Ok(None),
                cluster: Ok(None),
            },
            job: Some(Err(CategorizedError::new(
                ErrorCategory::Infrastructure,
                "reading the size check's log: 429",
            ))),
            account_pull_secrets: None,
            jobs: JobResources::default(),
            now,
        };
        let ctx = Arc::new(Context::new(crate::Settings::default()).unwrap());
        let observation = ArtifactPipeline::new(ctx).compose(&artifact, &children, fetched);
        let derived = derive(&DeriveInput {
            components: &observation.components,
            errors: &[],
            previous: &artifact.status.as_ref().unwrap().conditions,
            generation: Some(1),
            now,
            grace: DEFAULT_INFRA_GRACE,
        });
        assert!(derived.infra_within_grace);
        assert_ne!(
            derived.status,
            OverallStatus::Ready,
            "{:?}",
            observation.components
        );
    }
}
