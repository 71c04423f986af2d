//! When a check-size or download Job that failed for a reason retrying can fix runs again.
//! Pure (the time comes in as an argument).
//!
//! Contract: a failed Job whose classified failure is Infrastructure (timeouts, an
//! unreachable or forbidden source, an evicted pod, ...) is deleted once its retry delay has
//! passed since it failed, so the next reconcile runs it again. The delay is as long again as
//! the artifact has been waiting for that Job (since its `<Component>Ready` condition last
//! turned False, which stays False across attempts), at least [`MIN_DELAY`] and at most
//! [`MAX_DELAY`]: a bounded schedule that roughly doubles per failed attempt (for failures
//! that happen at once: 30 s, 30 s, 1 min, 2 min, 4 min, then every 5 min) without a counter
//! to persist, and starts again from [`MIN_DELAY`] once the Job succeeded. It does not depend
//! on the Job's TTL (600 s, which only cleans up). A Job without a failure time is retried
//! [`MIN_DELAY`] from now.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kinfer_api::aim::AIMArtifact;
use kinfer_state::clock::elapsed;

/// The shortest wait before a failed Job runs again.
pub const MIN_DELAY: Duration = Duration::from_secs(30);
/// The longest wait before a failed Job runs again.
pub const MAX_DELAY: Duration = Duration::from_mins(5);

/// What to do about a failed, retryable Job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Delete it now; the next reconcile runs it again.
    Due,
    /// Wait this long first.
    After(Duration),
}

/// When the Job failed: its `Failed` condition's transition time.
pub fn failed_at(job: &Job) -> Option<Timestamp> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Failed" && c.status == "True")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

/// Since when the artifact has been waiting for `component` (its `<component>Ready` condition
/// turned False).
pub fn waiting_since(a: &AIMArtifact, component: &str) -> Option<Timestamp> {
    let t = format!("{component}Ready");
    a.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == t && c.status == "False")
        .map(|c| c.last_transition_time.0)
}

/// The retry decision; see the module contract.
pub fn retry(failed: Option<Timestamp>, since: Option<Timestamp>, now: Timestamp) -> Retry {
    let Some(failed) = failed else {
        return Retry::After(MIN_DELAY);
    };
    let waited = since.map_or(Duration::ZERO, |s| elapsed(s, failed));
    let delay = waited.clamp(MIN_DELAY, MAX_DELAY);
    let since_failure = elapsed(failed, now);
    if since_failure >= delay {
        Retry::Due
    } else {
        Retry::After(delay.saturating_sub(since_failure))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_767_225_600 + s).unwrap()
    }

    #[test]
    fn the_delay_doubles_with_the_time_already_waited_within_bounds() {
        let s = Duration::from_secs;
        // A first quick failure: the minimum.
        assert_eq!(
            retry(Some(at(10)), Some(at(0)), at(10)),
            Retry::After(s(30))
        );
        assert_eq!(retry(Some(at(10)), Some(at(0)), at(40)), Retry::Due);
        // Waiting 70 s so far: 70 s more.
        assert_eq!(
            retry(Some(at(70)), Some(at(0)), at(100)),
            Retry::After(s(40))
        );
        assert_eq!(retry(Some(at(70)), Some(at(0)), at(140)), Retry::Due);
        // Long waits are capped.
        assert_eq!(
            retry(Some(at(7200)), Some(at(0)), at(7200)),
            Retry::After(MAX_DELAY)
        );
        // Unknown history: the minimum from the failure; unknown failure time: from now.
        assert_eq!(retry(Some(at(10)), None, at(10)), Retry::After(s(30)));
        assert_eq!(retry(None, Some(at(0)), at(999)), Retry::After(MIN_DELAY));
        // A clock behind the failure never retries early.
        assert_eq!(
            retry(Some(at(100)), Some(at(0)), at(50)),
            Retry::After(s(100))
        );
    }
}
