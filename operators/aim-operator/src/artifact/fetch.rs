//! Artifact fetch: the runtime config and what the artifact's Jobs left behind.
//!
//! Contract: reads only, each item's error captured. The Jobs and the PVC are the engine's
//! listed children. For the current Job (check-size while the size is unknown, else download)
//! its pods are listed (`job-name=<job>`, then only those the live Job controls by UID: a
//! retried Job reuses the name while the old one's pods await garbage collection); a Complete check-size Job's pod log is read (its last
//! line carries the size: the last 5 lines, at most 16 KiB); a Failed Job's failed pod gives
//! the last 50 log lines, at most 64 KiB, for the diagnosis (NOTES row 29). A Complete
//! download Job's log is never read ([`log_params`]). While the download pod's identity may
//! be needed ([`identity_wanted`]) and its ServiceAccount does not exist yet, the namespace's
//! `default` ServiceAccount is read by name (after the runtime config, which decides whether a
//! permanent failure of the Job to plan is recorded) for its `imagePullSecrets` (absent:
//! none), which that identity copies once
//! ([`kinfer_builders::discovery_job::progress_reporter`]); any other read error is
//! Infrastructure ([`unreadable`]): the operator's own RBAC, never the artifact owner's to fix.
//! Nothing is read for a Failed Job whose permanent failure is recorded for its fingerprint
//! ([`super::compose::recorded_for_live`]): the diagnosis is done, and its pods may be going
//! with it.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kinfer_api::aim::AIMArtifact;
use kinfer_state::pipeline::Children;
use kinfer_state::{CategorizeIn, CategorizedError, Direction, ErrorCategory, Reason};
use kube::api::{ListParams, LogParams};
use kube::{Api, Client, ResourceExt};

use super::compose;
use crate::context::Context;
use crate::runtime_config::resolve;

/// How many log lines a failure diagnosis reads.
pub const LOG_TAIL_LINES: i64 = 50;
/// At most this many bytes of a failure's log tail.
pub const LOG_TAIL_BYTES: i64 = 64 * 1024;
/// How many lines of a Complete size check are read (the size is on the last one).
pub const SIZE_TAIL_LINES: i64 = 5;
/// At most this many bytes of a size check's output.
pub const SIZE_TAIL_BYTES: i64 = 16 * 1024;
/// The check-size Job's container.
pub const CHECK_SIZE_CONTAINER: &str = "check-size";
/// The download Job's container.
pub const DOWNLOAD_CONTAINER: &str = "download";

/// Which pod (by phase) of Job `job` to read, and how much: bounded always; a Complete
/// download is not read at all; `None` while the Job runs.
pub fn log_params(job: &Job, container: &str) -> Option<(&'static str, LogParams)> {
    let (wanted, lines, bytes) = if compose::job_state(job, "Complete") {
        if container != CHECK_SIZE_CONTAINER {
            return None;
        }
        ("Succeeded", SIZE_TAIL_LINES, SIZE_TAIL_BYTES)
    } else if compose::job_state(job, "Failed") {
        ("Failed", LOG_TAIL_LINES, LOG_TAIL_BYTES)
    } else {
        return None;
    };
    Some((
        wanted,
        LogParams {
            container: Some(container.to_owned()),
            tail_lines: Some(lines),
            limit_bytes: Some(bytes),
            ..LogParams::default()
        },
    ))
}

/// The current Job and what its pods say.
#[derive(Debug, Clone, Default)]
pub struct JobObservation {
    /// The Job's pods.
    pub pods: Vec<Pod>,
    /// The log: the whole output of a Complete check-size Job, the tail of a Failed Job.
    pub log: Option<String>,
}

/// What the artifact's fetch step read.
#[derive(Debug)]
pub struct Fetched {
    /// The runtime config.
    pub runtime_config: resolve::Fetched,
    /// The current Job's pods and log (`None` when the Job does not exist; empty when its
    /// permanent failure is recorded: nothing is read).
    pub job: Option<Result<JobObservation, CategorizedError>>,
    /// The `imagePullSecrets` of the namespace's `default` ServiceAccount (empty when it is
    /// absent), read only while the download identity may be needed ([`identity_wanted`]) and
    /// its ServiceAccount does not exist yet.
    pub account_pull_secrets: Option<Result<Vec<String>, CategorizedError>>,
    /// The operator's clock when fetching (for the retry schedule; compose reads no clock).
    pub now: k8s_openapi::jiff::Timestamp,
    /// CPU and memory of the Jobs (the operator's settings).
    pub jobs: kinfer_builders::discovery_job::JobResources,
}

/// Whether the download pod's identity may be planned this reconcile (a superset of what
/// compose decides with [`super::reporter_needed`]): the current Job is the download and it
/// runs, or is absent while the artifact is not Ready (about to be created); or it is the
/// check-size Job and Complete (its measurement may plan the download at once).
pub fn identity_wanted(artifact: &AIMArtifact, current: &str, live: Option<&Job>) -> bool {
    match (current, live) {
        (DOWNLOAD_CONTAINER, Some(j)) => super::reporter_needed(false, Some(j)),
        (DOWNLOAD_CONTAINER, None) => artifact
            .status
            .as_ref()
            .is_none_or(|s| s.status != kinfer_api::phase::Phase::Ready),
        (_, Some(j)) => compose::job_state(j, "Complete"),
        (_, None) => false,
    }
}

/// The `imagePullSecrets` of `ns`'s `default` ServiceAccount; empty when it does not exist.
async fn default_pull_secrets(client: &Client, ns: &str) -> Result<Vec<String>, CategorizedError> {
    let sa = Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .get_opt("default")
        .await
        .map_err(|e| unreadable(&e))?;
    Ok(sa
        .and_then(|s| s.image_pull_secrets)
        .into_iter()
        .flatten()
        .map(|r| r.name)
        .collect())
}

/// A failed read of the `default` ServiceAccount (NotFound is no error): Infrastructure,
/// retried with backoff, whatever the code. A 401/403 is the operator's RBAC (a rollout
/// without the `serviceaccounts` `get` grant), `ControllerForbidden` as the engine says for
/// its own requests: nothing the artifact's owner could change, and nothing else would
/// trigger a retry of a user-fixable wait.
pub fn unreadable(e: &kube::Error) -> CategorizedError {
    // The API's own message (who may not do what), not the client's debug rendering.
    let cause = match e {
        kube::Error::Api(s) => format!("{} ({})", s.message, s.code),
        other => other.to_string(),
    };
    let error = CategorizedError::new(
        ErrorCategory::Infrastructure,
        format!("reading the namespace's default ServiceAccount for its pull secrets: {cause}"),
    );
    match e {
        kube::Error::Api(s) if s.code == 401 || s.code == 403 => {
            error.with_reason(Reason::custom("ControllerForbidden"))
        }
        _ => error,
    }
}

/// The component of the Job whose container is `container`.
fn component(container: &str) -> &'static str {
    if container == CHECK_SIZE_CONTAINER {
        compose::CHECK_SIZE_JOB
    } else {
        compose::DOWNLOAD_JOB
    }
}

/// Whether `pod` has a controller reference to `job` (by UID).
fn controlled_by(pod: &Pod, job: &Job) -> bool {
    job.metadata.uid.is_some()
        && crate::scheme::controller_uid(&pod.metadata) == job.metadata.uid.as_deref()
}

async fn observe(
    client: &Client,
    ns: &str,
    job: &Job,
    container: &str,
) -> Result<JobObservation, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    // A retried Job has the old one's name, and the old Job's pods live on until garbage
    // collection: only pods the live Job controls describe this attempt.
    let list: Vec<Pod> = pods
        .list(&ListParams::default().labels(&format!("job-name={}", job.name_any())))
        .await?
        .items
        .into_iter()
        .filter(|p| controlled_by(p, job))
        .collect();
    let phase = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.clone());
    let Some((wanted, params)) = log_params(job, container) else {
        return Ok(JobObservation {
            pods: list,
            log: None,
        });
    };
    let pod = list
        .iter()
        .filter(|p| phase(p).as_deref() == Some(wanted))
        .max_by_key(|p| p.metadata.creation_timestamp.clone());
    let log = match pod {
        Some(p) => Some(pods.logs(&p.name_any(), &params).await?),
        None => None,
    };
    Ok(JobObservation { pods: list, log })
}

/// Reads everything; `current` is the current Job's name and container.
pub async fn fetch(
    ctx: &Context,
    client: &Client,
    artifact: &AIMArtifact,
    children: &Children,
    current: Option<(&str, &str)>,
) -> Fetched {
    let now = ctx.now();
    let ns = artifact.namespace().unwrap_or_default();
    let job = async {
        let (name, container) = current?;
        let live = match children.typed::<Job>(Some(&ns), name) {
            Ok(Some(j)) => j,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        if compose::recorded_for_live(artifact, component(container), &live).is_some() {
            return Some(Ok(JobObservation::default()));
        }
        Some(
            observe(client, &ns, &live, container)
                .await
                .map_err(|e| e.categorize_in(Direction::Downstream)),
        )
    };
    let live = current.and_then(|(name, _)| children.typed::<Job>(Some(&ns), name).ok().flatten());
    let wanted = current
        .is_some_and(|(_, container)| identity_wanted(artifact, container, live.as_ref()))
        && !super::download::identity_exists(artifact, children);
    let (runtime_config, job) = futures::join!(
        resolve::read(
            ctx,
            client,
            Some(&ns),
            artifact.spec.runtime_config_name.as_deref()
        ),
        job,
    );
    // Not for a Job that is not created again: its permanent failure is recorded.
    let account_pull_secrets = if wanted
        && (live.is_some()
            || !super::download::failure_recorded(artifact, &runtime_config, &ctx.settings.jobs))
    {
        Some(default_pull_secrets(client, &ns).await)
    } else {
        None
    };
    Fetched {
        runtime_config,
        job,
        account_pull_secrets,
        now,
        jobs: ctx.settings.jobs.clone(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::{JobCondition, JobStatus};

    use super::*;

    fn job(state: &str) -> Job {
        Job {
            status: Some(JobStatus {
                conditions: Some(vec![JobCondition {
                    type_: state.into(),
                    status: "True".into(),
                    ..JobCondition::default()
                }]),
                ..JobStatus::default()
            }),
            ..Job::default()
        }
    }

    #[test]
    fn only_pods_of_the_live_job_describe_the_attempt() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let pod = |uid: &str, controller: bool| Pod {
            metadata: kube::api::ObjectMeta {
                owner_references: Some(vec![OwnerReference {
                    uid: uid.into(),
                    controller: Some(controller),
                    ..OwnerReference::default()
                }]),
                ..Default::default()
            },
            ..Pod::default()
        };
        let mut live = job("Failed");
        live.metadata.uid = Some("new".into());
        assert!(controlled_by(&pod("new", true), &live));
        assert!(
            !controlled_by(&pod("old", true), &live),
            "the previous Job's pod"
        );
        assert!(!controlled_by(&pod("new", false), &live));
        assert!(!controlled_by(&Pod::default(), &live));
        assert!(!controlled_by(&pod("new", true), &job("Failed")), "no UID");
    }

    #[test]
    fn log_reads_are_bounded_and_only_when_needed() {
        assert!(log_params(&job("Complete"), "download").is_none());
        assert!(log_params(&job("Running"), CHECK_SIZE_CONTAINER).is_none());
        let (phase, p) = log_params(&job("Complete"), CHECK_SIZE_CONTAINER).unwrap();
        assert_eq!(phase, "Succeeded");
        assert_eq!(
            (p.tail_lines, p.limit_bytes),
            (Some(SIZE_TAIL_LINES), Some(SIZE_TAIL_BYTES))
        );
        for c in ["download", CHECK_SIZE_CONTAINER] {
            let (phase, p) = log_params(&job("Failed"), c).unwrap();
            assert_eq!(phase, "Failed");
            assert_eq!(
                (p.tail_lines, p.limit_bytes),
                (Some(LOG_TAIL_LINES), Some(LOG_TAIL_BYTES))
            );
        }
    }
}
