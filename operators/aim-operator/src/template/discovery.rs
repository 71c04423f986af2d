//! The discovery decision (NOTES rows 6-7, section c). Pure.
//!
//! Contract: [`decide`] takes what fetch observed and returns what to do with the discovery Job
//! and the new `status.discovery` bookkeeping:
//! - nothing while the model is unresolved or the GPU is unavailable; nothing when the template
//!   has inline `modelSources` (`InlineModelSources`) or was already discovered for the current
//!   spec hash;
//! - a running Job is kept; a succeeded Job's log is parsed (success: profile; a parse failure
//!   counts as a failed attempt, never as success);
//! - a failed attempt keeps its Job until the backoff (base·2^(attempts−1), capped) has passed,
//!   then drops it so the next reconcile creates a fresh one;
//! - otherwise a Job is wanted, and the caller may still throttle it;
//! - `attempts` counts Jobs created; it resets when the spec hash changes (sha256 of model,
//!   image, metric, precision, GPU model and count, profile id; first 8 bytes).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kinfer_api::aim::template::AIMDiscoveryState;
use kinfer_state::clock::elapsed;
use sha2::{Digest, Sha256};

use super::parse::{Discovered, ParseError};
use crate::context::DiscoverySettings;

/// The inputs of the spec hash.
#[derive(Debug, Clone, Copy, Default)]
pub struct HashInput<'a> {
    /// Model name.
    pub model: &'a str,
    /// Image.
    pub image: &'a str,
    /// Metric.
    pub metric: &'a str,
    /// Precision.
    pub precision: &'a str,
    /// GPU model.
    pub gpu_model: &'a str,
    /// GPU count.
    pub gpu_count: i64,
    /// Profile id.
    pub profile_id: &'a str,
}

/// The discovery spec hash.
pub fn spec_hash(h: HashInput<'_>) -> String {
    let mut sha = Sha256::new();
    for part in [h.model, h.image, h.metric, h.precision, h.gpu_model] {
        sha.update(part.as_bytes());
        sha.update(b"|");
    }
    sha.update(h.gpu_count.to_string().as_bytes());
    sha.update(b"|");
    sha.update(h.profile_id.as_bytes());
    hex::encode(&sha.finalize()[..8])
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
    /// Succeeded; the parsed log.
    Succeeded(Result<Discovered, ParseError>),
    /// Failed, with why.
    Failed(String),
}

/// Why no Job is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The model (or its image) is not resolved.
    NoModel,
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
    /// No Job and the backoff after a failure has not passed.
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
    /// The model and image are resolved.
    pub model_ok: bool,
    /// The GPU is available.
    pub gpu_available: bool,
    /// Inline model sources.
    pub inline: bool,
    /// A profile is in status.
    pub has_profile: bool,
    /// The bookkeeping in status.
    pub previous: Option<&'a AIMDiscoveryState>,
    /// The current spec hash.
    pub hash: &'a str,
    /// The Job.
    pub job: JobSeen,
    /// Now.
    pub now: Timestamp,
    /// Backoff settings.
    pub settings: &'a DiscoverySettings,
}

/// The decision and the bookkeeping to write.
pub fn decide(i: Inputs<'_>) -> (Decision, Option<AIMDiscoveryState>) {
    if !i.model_ok {
        return (Decision::Skip(Skip::NoModel), i.previous.cloned());
    }
    if !i.gpu_available {
        return (Decision::Skip(Skip::GpuUnavailable), i.previous.cloned());
    }
    if i.inline {
        return (Decision::Skip(Skip::Inline), None);
    }
    let same_hash = i.previous.and_then(|p| p.spec_hash.as_deref()) == Some(i.hash);
    let mut state = match i.previous {
        Some(p) if same_hash => p.clone(),
        _ => AIMDiscoveryState {
            spec_hash: Some(i.hash.to_owned()),
            ..AIMDiscoveryState::default()
        },
    };
    if i.has_profile && same_hash && !matches!(i.job, JobSeen::Running) {
        state.last_failure_reason = None;
        return (Decision::Skip(Skip::Done), Some(state));
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
        JobSeen::Running => (Decision::Running, Some(state)),
        JobSeen::Succeeded(Ok(d)) => {
            state.last_failure_reason = None;
            (Decision::Succeeded(d), Some(state))
        }
        JobSeen::Succeeded(Err(e)) => failed(&mut state, format!("DiscoveryOutputInvalid: {e}")),
        JobSeen::Failed(reason) => failed(&mut state, reason),
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
            state.attempts = Some(attempts.saturating_add(1));
            state.last_attempt_time = Some(Time(i.now));
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
            gpu_available: true,
            inline: false,
            has_profile: false,
            previous: prev,
            hash: "h1",
            job,
            now,
            settings: s,
        }
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
    fn failure_waits_then_retries_and_hash_change_resets() {
        let s = DiscoverySettings::default();
        let t0 = Timestamp::UNIX_EPOCH;
        let (d, st) = decide(inputs(None, JobSeen::Absent, t0, &s));
        assert_eq!(d, Decision::Create);
        let st = st.unwrap();
        assert_eq!(st.attempts, Some(1));
        let (d, st) = decide(inputs(
            Some(&st),
            JobSeen::Failed("BackoffLimitExceeded".into()),
            t0 + Duration::from_secs(10),
            &s,
        ));
        assert_eq!(
            d,
            Decision::Failed {
                reason: "BackoffLimitExceeded".into(),
                retry_in: Some(Duration::from_secs(50))
            }
        );
        let st = st.unwrap();
        let (d, _) = decide(inputs(
            Some(&st),
            JobSeen::Failed("BackoffLimitExceeded".into()),
            t0 + Duration::from_mins(2),
            &s,
        ));
        assert!(matches!(d, Decision::Failed { retry_in: None, .. }));
        let (d, st2) = decide(inputs(
            Some(&st),
            JobSeen::Absent,
            t0 + Duration::from_mins(2),
            &s,
        ));
        assert_eq!(d, Decision::Create);
        assert_eq!(st2.unwrap().attempts, Some(2));
        let mut other = inputs(Some(&st), JobSeen::Absent, t0 + Duration::from_secs(5), &s);
        other.hash = "h2";
        let (d, st3) = decide(other);
        assert_eq!(d, Decision::Create);
        assert_eq!(st3.unwrap().attempts, Some(1), "reset on hash change");
    }
}
