//! Artifact compose: size, claim and download (NOTES row 22). Pure.
//!
//! Contract:
//! - The size is `spec.size` (a quantity that does not parse is InvalidSpec `InvalidSize`),
//!   else `status.discoveredSizeBytes`, else what the Complete check-size Job printed
//!   ([`super::classify::size`]); while unknown the check-size Job runs (component
//!   `CheckSizeJob`).
//! - With the size known the claim and the download Job are built
//!   ([`kinfer_builders::discovery_job::artifact_objects`]: headroom from the runtime config's
//!   `storage.pvcHeadroomPercent`, 10% by default; storage class spec, else runtime config).
//!   The claim is planned only while absent: a PVC is never resized. The download Job is
//!   planned only while absent, and not when the artifact was Ready and the Job is gone (its
//!   TTL removed it): a finished download is never repeated.
//! - Every compose reports the `DownloadJob` component ([`awaiting_size`] while the size is
//!   unknown, Progressing `WaitingForSize`), so the artifact is Ready only when its download
//!   is: a Ready artifact whose Job is gone is taken as downloaded.
//! - Components `CachePvc` (the live claim) and `DownloadJob`: Complete is Ready; Failed is
//!   classified ([`super::classify::failure`]); a running Job's pod errors surface at once;
//!   otherwise Progressing `Downloading` (the percentage only in `status.progress`).
//! - Failures are recorded: a failure classified from a live Job carries the Job's
//!   [`fingerprint`] in its condition message (`(spec <fp>)`). When the Job is gone (its TTL
//!   removed it) and the recorded failure is permanent ([`permanent`]: auth, not found, storage
//!   full, OOM, an invalid download or size) for the Job that would run now, the failure is
//!   reported again unchanged and no new Job is created: a permanent failure is not retried
//!   every TTL but when the spec changes (a new fingerprint). Other failures (timeouts, a
//!   forbidden or unreachable source, an evicted pod) are retried on the bounded schedule of
//!   [`super::retry`].
//! - The record is the only memory of a permanent failure, so nothing may replace it while
//!   the Job's fingerprint stands ([`recorded_for_live`]): a Failed live Job whose permanent
//!   failure is recorded for its fingerprint is reported from the record unchanged, its pods
//!   and log not read again ([`super::fetch`]). Its pods go with it when it expires
//!   (background deletion), and the reconcile's view of the Job can lag its deletion (the
//!   owner index is fed by the Job watch, while the pod watch or a status write may trigger
//!   the reconcile first; a LIST just before the deletion likewise): a read of those pods
//!   then fails (the log of a pod just deleted is a 404), and reported as the Job's error it
//!   would overwrite the recorded failure, after which the Job, gone, would be created again.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kinfer_api::aim::AIMArtifact;
use kinfer_api::phase::Phase;
use kinfer_state::health::ComponentHealth;
use kinfer_state::{CategorizedError, ComponentState, ErrorCategory, Reason};
use sha2::{Digest, Sha256};

use super::classify;
use super::fetch::JobObservation;

/// The check-size Job component.
pub const CHECK_SIZE_JOB: &str = "CheckSizeJob";
/// The claim component.
pub const CACHE_PVC: &str = "CachePvc";
/// The download Job component.
pub const DOWNLOAD_JOB: &str = "DownloadJob";

fn err(category: ErrorCategory, reason: &str, message: String) -> CategorizedError {
    CategorizedError::new(category, message).with_reason(Reason::custom(reason.to_owned()))
}

fn health(c: &'static str, s: ComponentState, reason: &str, msg: String) -> ComponentHealth {
    ComponentHealth::with_state(c, s, Reason::custom(reason.to_owned()), msg).downstream()
}

/// The size known before any Job runs: `spec.size`, else `status.discoveredSizeBytes`.
pub fn known_size(a: &AIMArtifact) -> Option<Result<u64, CategorizedError>> {
    if let Some(q) = &a.spec.size {
        return Some(
            kinfer_api::quantity::parse_bytes(&q.0)
                .map_err(|e| {
                    err(
                        ErrorCategory::InvalidSpec,
                        "InvalidSize",
                        format!("spec.size: {e}"),
                    )
                })
                .and_then(|b| {
                    if b == 0 {
                        Err(err(
                            ErrorCategory::InvalidSpec,
                            "InvalidSize",
                            "spec.size is zero".into(),
                        ))
                    } else {
                        Ok(b)
                    }
                }),
        );
    }
    a.status
        .as_ref()
        .and_then(|s| s.discovered_size_bytes)
        .and_then(|b| u64::try_from(b).ok())
        .filter(|b| *b > 0)
        .map(Ok)
}

/// What a Job runs, fingerprinted: image, command, args and env of its first container (fields
/// the API server keeps as given, so the live Job and the one that would be built agree).
pub fn fingerprint(job: &Job) -> String {
    let c = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.containers.first());
    let mut sha = Sha256::new();
    if let Some(c) = c {
        sha.update(c.image.as_deref().unwrap_or_default().as_bytes());
        for part in c.command.iter().flatten().chain(c.args.iter().flatten()) {
            sha.update(b"|");
            sha.update(part.as_bytes());
        }
        for e in c.env.iter().flatten() {
            sha.update(b"|");
            sha.update(e.name.as_bytes());
            sha.update(b"=");
            sha.update(e.value.as_deref().unwrap_or_default().as_bytes());
        }
    }
    hex::encode(&sha.finalize()[..6])
}

/// The category of a recorded failure reason that retrying cannot fix (`None`: retry).
pub fn permanent(reason: &str) -> Option<ErrorCategory> {
    match reason {
        "SourceAuthFailure" | "ImagePullAuthFailure" => Some(ErrorCategory::Auth),
        "SourceNotFound" | "DownloadFailed" | "InvalidModelSize" => {
            Some(ErrorCategory::InvalidSpec)
        }
        "StorageFull" | "OOMKilled" => Some(ErrorCategory::ResourceExhaustion),
        "ImageNotFound" => Some(ErrorCategory::MissingUpstreamDependency),
        _ => None,
    }
}

fn stamp(mut e: CategorizedError, fp: &str) -> CategorizedError {
    e.message = format!("{} (spec {fp})", e.message);
    e
}

/// The permanent failure recorded in condition `<component>Ready` for the Job fingerprinted
/// `fp`, if any: reported again instead of running the Job once more.
pub fn recorded_failure(a: &AIMArtifact, component: &str, fp: &str) -> Option<CategorizedError> {
    let t = format!("{component}Ready");
    let c = a
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == t && c.status == "False")?;
    let category = permanent(&c.reason)?;
    c.message
        .ends_with(&format!("(spec {fp})"))
        .then(|| err(category, &c.reason, c.message.clone()))
}

/// The permanent failure recorded for `job`, the live Job of `component`, once it has
/// Failed: its diagnosis is done and is reported as recorded (see the module contract).
pub fn recorded_for_live(a: &AIMArtifact, component: &str, job: &Job) -> Option<CategorizedError> {
    if !job_state(job, "Failed") {
        return None;
    }
    recorded_failure(a, component, &fingerprint(job))
}

/// Whether condition `t` of the Job is True.
pub(super) fn job_state(job: &Job, t: &str) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == t && c.status == "True"))
}

/// The check-size component and the size it measured, if any.
pub fn check_size(
    a: &AIMArtifact,
    live: Option<&Job>,
    seen: Option<&Result<JobObservation, CategorizedError>>,
) -> (ComponentHealth, Option<u64>) {
    let progressing = |msg: String| {
        health(
            CHECK_SIZE_JOB,
            ComponentState::Progressing,
            "CheckingSize",
            msg,
        )
    };
    let Some(job) = live else {
        return (progressing("creating the size check".into()), None);
    };
    if let Some(e) = recorded_for_live(a, CHECK_SIZE_JOB, job) {
        return (
            ComponentHealth::new(CHECK_SIZE_JOB).downstream().error(e),
            None,
        );
    }
    let fp = fingerprint(job);
    let obs = match seen {
        Some(Ok(o)) => o,
        Some(Err(e)) => {
            return (
                ComponentHealth::new(CHECK_SIZE_JOB)
                    .downstream()
                    .error(e.clone()),
                None,
            );
        }
        None => return (progressing("checking the model size".into()), None),
    };
    if job_state(job, "Complete") {
        return match obs.log.as_deref().map(classify::size) {
            Some(Ok(bytes)) => (
                health(
                    CHECK_SIZE_JOB,
                    ComponentState::Ready,
                    "SizeChecked",
                    format!("{bytes} bytes"),
                ),
                Some(bytes),
            ),
            Some(Err(e)) => (
                ComponentHealth::new(CHECK_SIZE_JOB)
                    .downstream()
                    .error(stamp(e, &fp)),
                None,
            ),
            None => (progressing("waiting for the size check's pod".into()), None),
        };
    }
    if job_state(job, "Failed") {
        let e = classify::failure(job, &obs.pods, obs.log.as_deref().unwrap_or_default());
        return (
            ComponentHealth::new(CHECK_SIZE_JOB)
                .downstream()
                .error(stamp(e, &fp)),
            None,
        );
    }
    match classify::running(&obs.pods) {
        Some(e) => (
            ComponentHealth::new(CHECK_SIZE_JOB).downstream().error(e),
            None,
        ),
        None => (progressing("checking the model size".into()), None),
    }
}

/// The download component while the size is unknown: nothing of the download is planned
/// yet, and the artifact is not Ready. Every compose reports this component, so a Ready
/// artifact has seen its download Ready (the size check's condition may stay True through an
/// unreadable log within the infrastructure grace period; without this one that alone could
/// make the artifact Ready, and a Ready artifact never starts its download).
pub fn awaiting_size() -> ComponentHealth {
    health(
        DOWNLOAD_JOB,
        ComponentState::Progressing,
        "WaitingForSize",
        "the download starts once the model size is known".into(),
    )
}

/// The claim component (`None`: absent, to create).
pub fn claim(live: Option<&PersistentVolumeClaim>, name: &str) -> ComponentHealth {
    match live {
        Some(p) => {
            let mut h = kinfer_state::inspect::pvc(p).downstream();
            h.component = CACHE_PVC.into();
            h
        }
        None => health(
            CACHE_PVC,
            ComponentState::Progressing,
            "CreatingPvc",
            format!("creating PVC {name}"),
        ),
    }
}

/// The download component, and whether the Job is to be planned; `planned` is the Job that
/// would run now.
pub fn download(
    a: &AIMArtifact,
    live: Option<&Job>,
    seen: Option<&Result<JobObservation, CategorizedError>>,
    planned: &Job,
) -> (ComponentHealth, bool) {
    let name = planned.metadata.name.as_deref().unwrap_or_default();
    let was_ready = a.status.as_ref().is_some_and(|s| s.status == Phase::Ready);
    let Some(job) = live else {
        if let Some(e) = recorded_failure(a, DOWNLOAD_JOB, &fingerprint(planned)) {
            return (
                ComponentHealth::new(DOWNLOAD_JOB).downstream().error(e),
                false,
            );
        }
        if was_ready {
            return (
                health(
                    DOWNLOAD_JOB,
                    ComponentState::Ready,
                    "Downloaded",
                    "the model is downloaded".into(),
                ),
                false,
            );
        }
        return (
            health(
                DOWNLOAD_JOB,
                ComponentState::Progressing,
                "CreatingDownloadJob",
                format!("creating job {name}"),
            ),
            true,
        );
    };
    if job_state(job, "Complete") {
        return (
            health(
                DOWNLOAD_JOB,
                ComponentState::Ready,
                "DownloadComplete",
                format!("job {name} completed"),
            ),
            true,
        );
    }
    if let Some(e) = recorded_for_live(a, DOWNLOAD_JOB, job) {
        return (
            ComponentHealth::new(DOWNLOAD_JOB).downstream().error(e),
            true,
        );
    }
    let obs = match seen {
        Some(Ok(o)) => o.clone(),
        Some(Err(e)) => {
            return (
                ComponentHealth::new(DOWNLOAD_JOB)
                    .downstream()
                    .error(e.clone()),
                true,
            );
        }
        None => JobObservation::default(),
    };
    if job_state(job, "Failed") {
        let e = classify::failure(job, &obs.pods, obs.log.as_deref().unwrap_or_default());
        return (
            ComponentHealth::new(DOWNLOAD_JOB)
                .downstream()
                .error(stamp(e, &fingerprint(job))),
            true,
        );
    }
    if let Some(e) = classify::running(&obs.pods) {
        return (
            ComponentHealth::new(DOWNLOAD_JOB).downstream().error(e),
            true,
        );
    }
    // The percentage is the downloader's `status.progress`, not part of the condition.
    (
        health(
            DOWNLOAD_JOB,
            ComponentState::Progressing,
            "Downloading",
            format!("job {name} is downloading"),
        ),
        true,
    )
}

/// A size for people: `1.5 GiB`.
pub fn display_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    #[allow(clippy::cast_precision_loss)] // display only
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_for_people() {
        assert_eq!(display_size(512), "512 B");
        assert_eq!(display_size(3 << 29), "1.5 GiB");
        assert_eq!(display_size(1 << 50), "1.0 PiB");
    }
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    #[test]
    fn the_download_condition_carries_no_percentage() {
        let a: AIMArtifact = serde_json::from_value(serde_json::json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"sourceUri": "hf://org/m"},
            "status": {"status": "Progressing",
                       "progress": {"percentage": 42, "displayPercentage": "42%"}}}))
        .unwrap_or_else(|e| panic!("{e}"));
        let job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "a-download"}, "status": {"active": 1}}))
        .unwrap_or_else(|e| panic!("{e}"));
        let (h, _) = download(&a, Some(&job), None, &job);
        let m = h.message.unwrap_or_default();
        assert!(!m.contains('%'), "{m}");
    }
}

#[cfg(test)]
mod record_tests {
    use super::*;

    fn from<K: serde::de::DeserializeOwned>(v: serde_json::Value) -> K {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn failed_job(image: &str) -> Job {
        from(serde_json::json!({
            "metadata": {"name": "a-download", "uid": "j1"},
            "spec": {"template": {"spec": {"containers": [{"name": "download", "image": image}]}}},
            "status": {"conditions": [{"type": "Failed", "status": "True"}]}}))
    }

    /// An artifact whose condition `<component>Ready` records `reason` for fingerprint `fp`.
    fn recorded(component: &str, reason: &str, fp: &str) -> AIMArtifact {
        from(serde_json::json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"sourceUri": "hf://org/m"},
            "status": {"status": "Failed", "conditions": [{
                "type": format!("{component}Ready"), "status": "False", "reason": reason,
                "message": format!("job a-download failed: 401 (spec {fp})"),
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
    }

    /// The pods of an expiring Job are deleted with it: reading them fails.
    fn pod_gone() -> Result<JobObservation, CategorizedError> {
        Err(CategorizedError::new(
            ErrorCategory::MissingDownstreamDependency,
            "pods \"a-download-sim\" not found",
        ))
    }

    #[test]
    fn a_recorded_permanent_failure_outlives_a_failed_read_of_its_pods() {
        let job = failed_job("img:1");
        let fp = fingerprint(&job);
        for component in [DOWNLOAD_JOB, CHECK_SIZE_JOB] {
            let a = recorded(component, "SourceAuthFailure", &fp);
            let h = if component == DOWNLOAD_JOB {
                download(&a, Some(&job), Some(&pod_gone()), &job).0
            } else {
                check_size(&a, Some(&job), Some(&pod_gone())).0
            };
            let e = &h.errors[0];
            assert_eq!(
                (e.category, e.reason.to_string()),
                (ErrorCategory::Auth, "SourceAuthFailure".to_owned()),
                "{component}: {h:?}"
            );
            assert!(e.message.ends_with(&format!("(spec {fp})")), "{e:?}");
        }
    }

    #[test]
    fn only_a_permanent_failure_of_this_failed_job_is_kept() {
        let job = failed_job("img:1");
        let fp = fingerprint(&job);
        // Recorded for another spec: this Job's failure is diagnosed (here: its read error).
        let other = recorded(
            DOWNLOAD_JOB,
            "SourceAuthFailure",
            &fingerprint(&failed_job("img:2")),
        );
        assert!(recorded_for_live(&other, DOWNLOAD_JOB, &job).is_none());
        // Retryable: diagnosed again each time.
        let retryable = recorded(DOWNLOAD_JOB, "DownloadTimeout", &fp);
        assert!(recorded_for_live(&retryable, DOWNLOAD_JOB, &job).is_none());
        // A Job that has not failed (a new attempt) is observed.
        let mut running = job.clone();
        running.status = None;
        let permanent = recorded(DOWNLOAD_JOB, "SourceAuthFailure", &fp);
        assert!(recorded_for_live(&permanent, DOWNLOAD_JOB, &running).is_none());
        assert!(recorded_for_live(&permanent, DOWNLOAD_JOB, &job).is_some());
        // Another component's record is not this one's.
        assert!(recorded_for_live(&permanent, CHECK_SIZE_JOB, &job).is_none());
    }
}
