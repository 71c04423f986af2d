//! The download half of the artifact's compose, once the size is known: the claim (while
//! absent), the download Job and its pod's identity (the ServiceAccount, Role and RoleBinding
//! of [`kinfer_builders::discovery_job::progress_reporter`]), with their components. Pure.
//!
//! Contract: the identity is planned while the download Job is to be created or runs
//! ([`reporter_needed`]), decided from the live Job before anything else can fail, so a build
//! error or an unreadable claim mid-download does not prune the running pod's identity. The
//! Job is planned only with its identity (applied before it by the engine's order), and only
//! once the pull secrets of the namespace's `default` ServiceAccount are known. Those are
//! copied once, when the identity's ServiceAccount is created: once it exists, its live
//! `imagePullSecrets` are the desired ones (an atomic list, which OpenShift extends with a
//! `<sa>-dockercfg-*` entry on every ServiceAccount; applying our own list again would fight
//! that controller, one write per round) and `default` is not read.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, ServiceAccount};
use kinfer_api::aim::AIMArtifact;
use kinfer_builders::discovery_job::{
    ArtifactJobs, JobResources, ProgressReporter, artifact_objects, progress_name,
    progress_reporter,
};
use kinfer_state::health::ComponentHealth;
use kinfer_state::pipeline::Children;
use kinfer_state::{CategorizedError, ErrorCategory};
use kube::ResourceExt;

use super::fetch::Fetched;
use super::{
    ArtifactState, child_name, compose, error_health, headroom, input, invalid, parent,
    schedule_retry,
};
use crate::runtime_config::Resolved;

/// The download half of compose, once the size is known: the claim (while absent), the
/// download Job and its pod's identity, with their components.
pub(super) fn compose_download(
    (object, children, fetched, rc): (&AIMArtifact, &Children, &Fetched, Option<&Resolved>),
    bytes: u64,
    state: &mut ArtifactState,
    components: &mut Vec<ComponentHealth>,
) {
    let ns = object.namespace().unwrap_or_default();
    // Decided from the live Job before anything below can fail: a builder error or an
    // unreadable claim must not prune the identity of a download pod that runs.
    let live_job = child_name(object, "download")
        .ok()
        .and_then(|n| children.typed::<Job>(Some(&ns), &n).ok().flatten());
    let mut identity_error = None;
    if reporter_needed(false, live_job.as_ref()) {
        let (reporter, error) = identity(object, children, fetched);
        state.reporter = reporter;
        identity_error = error;
    }
    let built = input(object, rc, Some(bytes), state.headroom, &fetched.jobs)
        .and_then(|i| artifact_objects(&i).map_err(|e| invalid(&e)));
    let (claim, job) = match built {
        Ok(ArtifactJobs::Download { claim, job }) => (*claim, *job),
        Ok(ArtifactJobs::CheckSize(_)) => return,
        Err(e) => {
            components.push(error_health(compose::DOWNLOAD_JOB, e));
            return;
        }
    };
    let claim_name = claim.metadata.name.clone().unwrap_or_default();
    let live_claim = match children.typed::<PersistentVolumeClaim>(Some(&ns), &claim_name) {
        Ok(c) => c,
        Err(e) => {
            // Nothing is planned without the claim; the download is judged all the same (the
            // artifact is Ready only when its download is).
            components.push(error_health(compose::CACHE_PVC, e));
            let (h, _) = compose::download(object, live_job.as_ref(), fetched.job.as_ref(), &job);
            components.push(h);
            return;
        }
    };
    components.push(compose::claim(live_claim.as_ref(), &claim_name));
    let request = |c: &PersistentVolumeClaim| {
        c.spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage").cloned())
    };
    state.claim_status = Some((
        claim_name,
        live_claim.as_ref().map_or_else(|| request(&claim), request),
    ));
    if live_claim.is_none() {
        state.claim = Some(claim);
    }
    let (mut h, plan_job) =
        compose::download(object, live_job.as_ref(), fetched.job.as_ref(), &job);
    if let Some(j) = &live_job {
        let classified = matches!(fetched.job, Some(Ok(_)));
        schedule_retry(
            object,
            (compose::DOWNLOAD_JOB, j),
            classified,
            &h,
            fetched.now,
            state,
        );
    }
    if plan_job && live_job.is_none() {
        // The Job only with its pod's identity (applied before it): never a pod without
        // the pull secrets it needs.
        let (reporter, error) = identity(object, children, fetched);
        identity_error = error;
        if let Some(r) = reporter.filter(|_| identity_error.is_none()) {
            state.reporter = Some(r);
            state.download = Some(job);
        }
    }
    match identity_error {
        // Not "creating the Job": it is not created without its pull secrets.
        Some(e) if live_job.is_none() => h = error_health(compose::DOWNLOAD_JOB, e),
        Some(e) => h = h.error(e),
        None => {}
    }
    components.push(h);
}

/// The live ServiceAccount of `a`'s download identity, if it exists (and is readable).
fn live_account(a: &AIMArtifact, children: &Children) -> Option<ServiceAccount> {
    let name = progress_name(&a.name_any(), &a.uid().unwrap_or_default()).ok()?;
    let ns = a.namespace().unwrap_or_default();
    children
        .typed::<ServiceAccount>(Some(&ns), name.as_str())
        .ok()
        .flatten()
}

/// Whether the ServiceAccount of `a`'s download identity exists: then `default` is not read
/// (its pull secrets were copied when it was created; see the module contract).
pub(super) fn identity_exists(a: &AIMArtifact, children: &Children) -> bool {
    live_account(a, children).is_some()
}

/// Whether a permanent failure of the download Job that would be planned now (with the
/// runtime config `rc`) is recorded: that Job is not created again until the spec changes,
/// so its identity is not wanted. False while the size is unknown.
pub(super) fn failure_recorded(
    a: &AIMArtifact,
    rc: &crate::runtime_config::resolve::Fetched,
    jobs: &JobResources,
) -> bool {
    let Some(Ok(bytes)) = compose::known_size(a) else {
        return false;
    };
    let (_, rc) = crate::runtime_config::resolve::resolve(rc);
    let rc = rc.as_ref();
    match input(a, rc, Some(bytes), headroom(rc), jobs).map(|i| artifact_objects(&i)) {
        Ok(Ok(ArtifactJobs::Download { job, .. })) => {
            compose::recorded_failure(a, compose::DOWNLOAD_JOB, &compose::fingerprint(&job))
                .is_some()
        }
        _ => false,
    }
}

/// The download pod's identity ([`kinfer_builders::discovery_job::progress_reporter`]) and an
/// error when its pull secrets are unknown. Those are the live ServiceAccount's once it
/// exists (`default` is not read then), else the namespace's `default` ServiceAccount's;
/// when those could not be read, it is built without any and the error (Infrastructure) is
/// returned: the caller then creates no Job.
fn identity(
    a: &AIMArtifact,
    children: &Children,
    fetched: &Fetched,
) -> (Option<ProgressReporter>, Option<CategorizedError>) {
    let parent = match parent(a) {
        Ok(p) => p,
        Err(e) => return (None, Some(e)),
    };
    let uid = a.uid().unwrap_or_default();
    let live = live_account(a, children).map(|sa| {
        sa.image_pull_secrets
            .into_iter()
            .flatten()
            .map(|r| r.name)
            .collect::<Vec<_>>()
    });
    let (secrets, error) = match (live, &fetched.account_pull_secrets) {
        (Some(s), _) => (s, None),
        (None, Some(Ok(s))) => (s.clone(), None),
        (None, Some(Err(e))) => (Vec::new(), Some(e.clone())),
        (None, None) => (
            Vec::new(),
            Some(CategorizedError::new(
                ErrorCategory::Infrastructure,
                "the default ServiceAccount's pull secrets were not read yet",
            )),
        ),
    };
    match progress_reporter(&parent, &uid, &secrets) {
        Ok(r) => (Some(r), error),
        Err(e) => (None, Some(invalid(&e))),
    }
}

/// Whether the download pod's progress identity is wanted: while the download Job is to be
/// created or runs (neither Complete nor Failed). Once it has ended nobody reports progress:
/// the engine prunes the ServiceAccount, Role and RoleBinding (a retry plans them again with
/// the new Job, applied before it).
pub fn reporter_needed(create: bool, live: Option<&Job>) -> bool {
    create
        || live
            .is_some_and(|j| !compose::job_state(j, "Complete") && !compose::job_state(j, "Failed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(condition: Option<&str>) -> Job {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "a-download"},
            "status": {"conditions": condition
                .map(|t| vec![serde_json::json!({"type": t, "status": "True"})])
                .unwrap_or_default()}}))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_progress_identity_lives_only_while_the_download_runs() {
        assert!(reporter_needed(true, None), "applied with the new Job");
        assert!(reporter_needed(false, Some(&job(None))), "running");
        assert!(!reporter_needed(false, Some(&job(Some("Complete")))));
        assert!(!reporter_needed(false, Some(&job(Some("Failed")))));
        assert!(!reporter_needed(false, None), "finished, its Job gone");
    }
}
