//! The discovery decision (NOTES rows 6-7, section c). Pure.
//!
//! Contract: [`decide`] takes what fetch observed and returns what to do with the discovery Job
//! and the new `status.discovery` bookkeeping:
//! - nothing when the template has inline `modelSources` (`InlineModelSources`); nothing when
//!   a profile is on record for the current spec hash (`Done`), also when the hash cannot be
//!   computed because the model is unreadable for now or the GPU is gone: a transient error
//!   or a drained node never discards a discovered profile;
//! - nothing while the model or another upstream dependency is unresolved or the GPU is
//!   unavailable;
//! - a running Job is kept; a succeeded Job's log is parsed (success: profile; a parse failure
//!   counts as a failed attempt, never as success);
//! - a failed attempt keeps its Job until the backoff (base·2^(attempts−1), capped) has passed,
//!   then drops it so the next reconcile creates a fresh one; a Job whose pod cannot start
//!   (image pull, container config) fails the attempt at once and is dropped, freeing its slot;
//! - otherwise a Job is wanted, and the caller may still throttle it;
//! - `attempts` counts Jobs that actually exist: an attempt is counted (and `lastAttemptTime`
//!   set) when a Job of the current name with a UID not yet recorded is observed, never when
//!   one is merely wanted. So a template whose plan is blocked, or whose new Job is not visible
//!   yet, neither counts attempts nor changes its status. The counter resets when the spec hash
//!   changes ([`spec_hash`]).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kinfer_api::aim::template::AIMDiscoveryState;
use kinfer_builders::discovery_job::DiscoveryInput;
use kinfer_state::clock::elapsed;
use sha2::{Digest, Sha256};

use super::parse::{Discovered, ParseError};
use crate::context::DiscoverySettings;

/// The discovery spec hash: SHA-256 (first 8 bytes, hex) over everything the discovery Job
/// runs with (model, image, service account, env, pull secrets, metric, precision, GPU model
/// and count, profile id), so any change that could change the profile resets the bookkeeping
/// and discovers again. The fields are hashed as one JSON array: unambiguous, no separators.
pub fn spec_hash(input: &DiscoveryInput) -> String {
    let fields = serde_json::json!([
        input.model,
        input.image,
        input.service_account_name,
        input.env,
        input.image_pull_secrets,
        input.metric,
        input.precision,
        input.gpu_model,
        input.gpu_count,
        input.profile_id,
    ]);
    let digest = Sha256::digest(fields.to_string().as_bytes());
    hex::encode(&digest[..8])
}

/// The delay before attempt `attempts + 1`.
pub fn backoff(settings: &DiscoverySettings, attempts: i32) -> Duration {
    let exp = u32::try_from(attempts.saturating_sub(1).max(0))
        .unwrap_or(0)
        .min(20);
    settings
        .backoff_base
        .saturating_mul(2u32.saturating_pow(exp))
        .min(settings.backoff_max)
}

/// What the discovery Job did, as fetch saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum JobSeen {
    /// No Job of the current name.
    Absent,
    /// Running.
    Running,
    /// Not known: the Job could not be read (the LIST of the template's Jobs failed). A
    /// template discovered for this spec hash stays discovered (an infrastructure error says
    /// nothing about it, and services choose by its recorded profile: dropping it for one
    /// reconcile would make them choose another template for good); otherwise it is kept
    /// like a running Job (nothing created, nothing counted, no slot released).
    Unreadable,
    /// Succeeded; the parsed log.
    Succeeded(Result<Discovered, ParseError>),
    /// Failed, with why.
    Failed(String),
    /// Still active, but its pod cannot start (`ImagePullBackOff`, `ErrImagePull`,
    /// `CreateContainerConfigError`, ...), with why.
    Stuck(String),
}

/// Why no Job is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The model (or its image) is not resolved.
    NoModel,
    /// Another upstream dependency (the runtime config) is not resolved: the plan would be
    /// blocked, so no Job is wanted and no slot reserved.
    Upstream,
    /// The GPU is not in the cluster.
    GpuUnavailable,
    /// `spec.modelSources` is set.
    Inline,
    /// Discovered earlier for this spec hash.
    Done,
}

/// The decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// No Job.
    Skip(Skip),
    /// Keep the running Job.
    Running,
    /// Discovery succeeded now.
    Succeeded(Discovered),
    /// The latest attempt failed; keep its Job until `retry_in` has passed (`None`: the
    /// backoff is over, drop the Job now).
    Failed {
        /// Why.
        reason: String,
        /// Time left.
        retry_in: Option<Duration>,
    },
    /// No Job (a failed one is dropped) and the backoff after a failure has not passed.
    Backoff {
        /// Why the last attempt failed.
        reason: String,
        /// Time left.
        retry_in: Duration,
    },
    /// Create the Job (subject to a free slot).
    Create,
    /// A Job is wanted but every slot is taken.
    Throttled,
}

/// What [`decide`] needs.
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    /// The model and image are resolved and the Job can be built.
    pub model_ok: bool,
    /// Every other upstream dependency (the runtime config) is resolved.
    pub upstream_ok: bool,
    /// The GPU is available.
    pub gpu_available: bool,
    /// Inline model sources.
    pub inline: bool,
    /// A profile is in status.
    pub has_profile: bool,
    /// The bookkeeping in status.
    pub previous: Option<&'a AIMDiscoveryState>,
    /// The current spec hash; `None` when it cannot be computed (model unresolved).
    pub hash: Option<&'a str>,
    /// The Job.
    pub job: JobSeen,
    /// The UID of the Job of the current name, when it exists.
    pub job_uid: Option<&'a str>,
    /// The UID of the Job whose attempt was counted last (`status.discoveryJob.uid`).
    pub counted_uid: Option<&'a str>,
    /// Now.
    pub now: Timestamp,
    /// Backoff settings.
    pub settings: &'a DiscoverySettings,
}

/// The decision and the bookkeeping to write.
pub fn decide(i: Inputs<'_>) -> (Decision, Option<AIMDiscoveryState>) {
    if i.inline {
        return (Decision::Skip(Skip::Inline), None);
    }
    let recorded = i.previous.and_then(|p| p.spec_hash.as_deref());
    let same_hash = i.hash.is_none_or(|h| recorded == Some(h));
    if i.has_profile && same_hash && !matches!(i.job, JobSeen::Running) {
        let mut state = i.previous.cloned().unwrap_or_default();
        state.last_failure_reason = None;
        return (Decision::Skip(Skip::Done), Some(state));
    }
    let Some(hash) = i.hash.filter(|_| i.model_ok) else {
        return (Decision::Skip(Skip::NoModel), i.previous.cloned());
    };
    if !i.upstream_ok {
        return (Decision::Skip(Skip::Upstream), i.previous.cloned());
    }
    if !i.gpu_available {
        return (Decision::Skip(Skip::GpuUnavailable), i.previous.cloned());
    }
    let mut state = match i.previous {
        Some(p) if same_hash => p.clone(),
        _ => AIMDiscoveryState {
            spec_hash: Some(hash.to_owned()),
            ..AIMDiscoveryState::default()
        },
    };
    if let Some(uid) = i.job_uid
        && i.counted_uid != Some(uid)
    {
        state.attempts = Some(state.attempts.unwrap_or(0).saturating_add(1));
        state.last_attempt_time = Some(Time(i.now));
    }
    let attempts = state.attempts.unwrap_or(0);
    let retry_in = |state: &AIMDiscoveryState| {
        let last = state.last_attempt_time.as_ref().map_or(i.now, |t| t.0);
        let wait = backoff(i.settings, attempts);
        let passed = elapsed(last, i.now);
        (passed < wait).then(|| wait.saturating_sub(passed))
    };
    let failed = |state: &mut AIMDiscoveryState, reason: String| {
        state.last_failure_reason = Some(reason.clone());
        let retry = retry_in(state);
        (
            Decision::Failed {
                reason,
                retry_in: retry,
            },
            Some(state.clone()),
        )
    };
    match i.job {
        JobSeen::Running | JobSeen::Unreadable => (Decision::Running, Some(state)),
        JobSeen::Succeeded(Ok(d)) => {
            state.last_failure_reason = None;
            (Decision::Succeeded(d), Some(state))
        }
        JobSeen::Succeeded(Err(e)) => failed(&mut state, format!("DiscoveryOutputInvalid: {e}")),
        JobSeen::Failed(reason) => failed(&mut state, reason),
        JobSeen::Stuck(reason) => {
            state.last_failure_reason = Some(reason.clone());
            let decision = match retry_in(&state) {
                Some(wait) => Decision::Backoff {
                    reason,
                    retry_in: wait,
                },
                None => Decision::Failed {
                    reason,
                    retry_in: None,
                },
            };
            (decision, Some(state))
        }
        JobSeen::Absent => {
            if let Some(reason) = state.last_failure_reason.clone()
                && attempts > 0
                && let Some(wait) = retry_in(&state)
            {
                return (
                    Decision::Backoff {
                        reason,
                        retry_in: wait,
                    },
                    Some(state),
                );
            }
            (Decision::Create, Some(state))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>(
        prev: Option<&'a AIMDiscoveryState>,
        job: JobSeen,
        now: Timestamp,
        s: &'a DiscoverySettings,
    ) -> Inputs<'a> {
        Inputs {
            model_ok: true,
            upstream_ok: true,
            gpu_available: true,
            inline: false,
            has_profile: false,
            previous: prev,
            hash: Some("h1"),
            job,
            job_uid: None,
            counted_uid: None,
            now,
            settings: s,
        }
    }

    /// `inputs` with the Job `uid` observed and `counted` recorded.
    fn seen<'a>(mut i: Inputs<'a>, uid: &'a str, counted: Option<&'a str>) -> Inputs<'a> {
        i.job_uid = Some(uid);
        i.counted_uid = counted;
        i
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let s = DiscoverySettings::default();
        assert_eq!(backoff(&s, 1), Duration::from_mins(1));
        assert_eq!(backoff(&s, 2), Duration::from_mins(2));
        assert_eq!(backoff(&s, 3), Duration::from_mins(4));
        assert_eq!(backoff(&s, 30), Duration::from_hours(1));
    }

    #[test]
    fn a_wanted_job_counts_nothing_until_it_exists() {
        let s = DiscoverySettings::default();
        let t0 = Timestamp::UNIX_EPOCH;
        let (d, st) = decide(inputs(None, JobSeen::Absent, t0, &s));
        assert_eq!(d, Decision::Create);
        let st = st.unwrap();
        assert_eq!(st.attempts, None, "wanting a Job is not an attempt");
        // The new Job is not visible yet (the race): still not an attempt, still wanted.
        let (d, again) = decide(inputs(Some(&st), JobSeen::Absent, t0, &s));
        assert_eq!((d, again.as_ref()), (Decision::Create, Some(&st)));
        // Observed: counted once, however often it is seen.
        let later = t0 + Duration::from_secs(3);
        let (d, st) = decide(seen(
            inputs(Some(&st), JobSeen::Running, later, &s),
            "u1",
            None,
        ));
        assert_eq!(d, Decision::Running);
        let st = st.unwrap();
        assert_eq!(st.attempts, Some(1));
        assert_eq!(st.last_attempt_time, Some(Time(later)));
        let (_, same) = decide(seen(
            inputs(
                Some(&st),
                JobSeen::Running,
                later + Duration::from_secs(9),
                &s,
            ),
            "u1",
            Some("u1"),
        ));
        assert_eq!(same.as_ref(), Some(&st));
    }

    #[test]
    fn an_unreadable_job_leaves_a_discovered_template_discovered() {
        let s = DiscoverySettings::default();
        let t0 = Timestamp::UNIX_EPOCH;
        let st = AIMDiscoveryState {
            spec_hash: Some("h1".into()),
            attempts: Some(1),
            ..AIMDiscoveryState::default()
        };
        let discovered = |job: JobSeen| {
            let mut i = inputs(Some(&st), job, t0, &s);
            i.has_profile = true;
            decide(i).0
        };
        assert_eq!(
            discovered(JobSeen::Unreadable),
            Decision::Skip(Skip::Done),
            "the profile stands"
        );
        // A Job seen running for the discovered hash is still kept.
        assert_eq!(discovered(JobSeen::Running), Decision::Running);
        // Not discovered yet: kept as if running (no second Job, no new attempt).
        let (d, again) = decide(inputs(Some(&st), JobSeen::Unreadable, t0, &s));
        assert_eq!((d, again.as_ref()), (Decision::Running, Some(&st)));
        // Discovered for another spec: not Done.
        let mut i = inputs(Some(&st), JobSeen::Unreadable, t0, &s);
        i.has_profile = true;
        i.hash = Some("h2");
        assert_eq!(decide(i).0, Decision::Running);
    }

    #[test]
    fn a_blocked_upstream_wants_no_job() {
        let s = DiscoverySettings::default();
        let mut i = inputs(None, JobSeen::Absent, Timestamp::UNIX_EPOCH, &s);
        i.upstream_ok = false;
        assert_eq!(decide(i), (Decision::Skip(Skip::Upstream), None));
    }

    #[test]
    fn failure_waits_then_retries_and_hash_change_resets() {
        let s = DiscoverySettings::default();
        let t0 = Timestamp::UNIX_EPOCH;
        let (_, st) = decide(seen(inputs(None, JobSeen::Running, t0, &s), "u1", None));
        let st = st.unwrap();
        assert_eq!(st.attempts, Some(1));
        let (d, st) = decide(seen(
            inputs(
                Some(&st),
                JobSeen::Failed("BackoffLimitExceeded".into()),
                t0 + Duration::from_secs(10),
                &s,
            ),
            "u1",
            Some("u1"),
        ));
        assert_eq!(
            d,
            Decision::Failed {
                reason: "BackoffLimitExceeded".into(),
                retry_in: Some(Duration::from_secs(50))
            }
        );
        let st = st.unwrap();
        let (d, _) = decide(seen(
            inputs(
                Some(&st),
                JobSeen::Failed("BackoffLimitExceeded".into()),
                t0 + Duration::from_mins(2),
                &s,
            ),
            "u1",
            Some("u1"),
        ));
        assert!(matches!(d, Decision::Failed { retry_in: None, .. }));
        let (d, st2) = decide(inputs(
            Some(&st),
            JobSeen::Absent,
            t0 + Duration::from_mins(2),
            &s,
        ));
        assert_eq!(d, Decision::Create);
        assert_eq!(st2.unwrap().attempts, Some(1), "counted once it exists");
        let (_, st2) = decide(seen(
            inputs(Some(&st), JobSeen::Running, t0 + Duration::from_mins(2), &s),
            "u2",
            Some("u1"),
        ));
        assert_eq!(st2.unwrap().attempts, Some(2));
        let mut other = inputs(Some(&st), JobSeen::Absent, t0 + Duration::from_secs(5), &s);
        other.hash = Some("h2");
        let (d, st3) = decide(other);
        assert_eq!(d, Decision::Create);
        assert_eq!(st3.unwrap().attempts, None, "reset on hash change");
    }

    #[test]
    fn a_stuck_pod_fails_the_attempt_and_drops_the_job() {
        let s = DiscoverySettings::default();
        let t0 = Timestamp::UNIX_EPOCH;
        let (d, st) = decide(seen(
            inputs(
                None,
                JobSeen::Stuck("ImagePullBackOff: no such image".into()),
                t0,
                &s,
            ),
            "u1",
            None,
        ));
        assert_eq!(
            d,
            Decision::Backoff {
                reason: "ImagePullBackOff: no such image".into(),
                retry_in: Duration::from_mins(1)
            }
        );
        let st = st.unwrap();
        assert_eq!(st.attempts, Some(1));
        assert_eq!(
            st.last_failure_reason.as_deref(),
            Some("ImagePullBackOff: no such image")
        );
    }

    #[test]
    fn a_profile_survives_an_unknown_hash_and_a_missing_gpu() {
        let s = DiscoverySettings::default();
        let done = AIMDiscoveryState {
            attempts: Some(1),
            spec_hash: Some("h1".into()),
            ..AIMDiscoveryState::default()
        };
        let t0 = Timestamp::UNIX_EPOCH;
        let mut model_unreadable = inputs(Some(&done), JobSeen::Absent, t0, &s);
        model_unreadable.has_profile = true;
        model_unreadable.model_ok = false;
        model_unreadable.hash = None;
        assert_eq!(
            decide(model_unreadable),
            (Decision::Skip(Skip::Done), Some(done.clone()))
        );
        let mut drained = inputs(Some(&done), JobSeen::Absent, t0, &s);
        drained.has_profile = true;
        drained.gpu_available = false;
        assert_eq!(decide(drained).0, Decision::Skip(Skip::Done));
        let mut changed = inputs(Some(&done), JobSeen::Absent, t0, &s);
        changed.has_profile = true;
        changed.gpu_available = false;
        changed.hash = Some("h2");
        assert_eq!(decide(changed).0, Decision::Skip(Skip::GpuUnavailable));
    }

    #[test]
    fn spec_hash_covers_env_service_account_and_pull_secrets() {
        let base: DiscoveryInput = serde_json::from_value(serde_json::json!({
            "template": "t", "namespace": "ns", "managedBy": "m", "model": "model",
            "image": "img:1", "metric": "latency"
        }))
        .unwrap();
        let h = spec_hash(&base);
        let mut env = base.clone();
        env.env = vec![kinfer_builders::env::var("A", "1")];
        let mut sa = base.clone();
        sa.service_account_name = Some("runner".into());
        let mut secrets = base.clone();
        secrets.image_pull_secrets = vec!["regcred".into()];
        for other in [&env, &sa, &secrets] {
            assert_ne!(spec_hash(other), h);
        }
        let mut moved = base.clone();
        moved.managed_by = "other".into();
        assert_eq!(spec_hash(&moved), h, "only what the Job runs with");
        assert_eq!(h.len(), 16);
    }
}
