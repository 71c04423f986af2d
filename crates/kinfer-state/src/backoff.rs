//! Per-object exponential backoff for infrastructure errors.
//!
//! Contract: the delay for the n-th consecutive failure of one object is `base * 2^(n-1)`
//! capped at `cap` (1 s doubling to 300 s by default), raised to the server's `Retry-After`
//! when that is longer, but never past `cap` ([`BackoffPolicy::honoured`]: a server asking for
//! a day must not park an object, its spec edits and its finalizer that long). A success
//! resets the object. Keys are whatever identifies an object
//! (the engine uses kind/namespace/name). No clock and no randomness: the delay is a pure
//! function of the failure count, so tests and retries are deterministic.
//!
//! Progress: a failure after which the object still **progressed** (the caller decides what
//! counts; the engine: [`crate::engine`], step 6) does not escalate: the failure count is set
//! back to 1, so the next attempt comes after `base` (or the `Retry-After`), and failures
//! without progress that follow double from there, not from a count the failures before the
//! progress had grown: an object whose attempts alternate between progress and none (many
//! children, a few percent of requests failing) never waits minutes for its last retries
//! while it still advances. The forgiveness is
//! bounded: only the first [`MAX_PROGRESSING_FAILURES`] consecutive failures of an object may
//! count as progressing; from then until a success every failure doubles, so an object that
//! "progresses" forever without ever succeeding (a plan whose body changes on every attempt)
//! still backs off to the cap.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

/// How many consecutive failures of one object may count as progressing
/// ([`Backoff::failure_after`]); later ones double whatever they did. At the default 1 s
/// base, 16 attempts that each made progress take about 16 s: far more than an object with a
/// few dozen children needs at 10% failed requests, while an object that keeps "progressing"
/// without ever succeeding is back on the doubling schedule within seconds.
pub const MAX_PROGRESSING_FAILURES: u32 = 16;

/// The backoff policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// The first delay.
    pub base: Duration,
    /// The longest delay computed by doubling.
    pub cap: Duration,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        Self {
            base: Duration::from_secs(1),
            cap: Duration::from_mins(5),
        }
    }
}

impl BackoffPolicy {
    /// The delay after `failures` consecutive failures (1 for the first), honouring
    /// `retry_after` when it is longer (up to `cap`).
    pub fn delay(&self, failures: u32, retry_after: Option<Duration>) -> Duration {
        let exp = failures.saturating_sub(1).min(31);
        let computed = self.base.saturating_mul(1u32 << exp).min(self.cap);
        match retry_after.map(|ra| self.honoured(ra)) {
            Some(ra) if ra > computed => ra,
            _ => computed,
        }
    }

    /// How much of a server's `Retry-After` is honoured: all of it up to `cap`.
    pub fn honoured(&self, retry_after: Duration) -> Duration {
        retry_after.min(self.cap)
    }
}

/// What is remembered of one object's current run of failures.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    /// The failure count the delay is computed from (reset to 1 by a progressing failure).
    failures: u32,
    /// Consecutive failures since the last success, progressing or not (bounds forgiveness).
    streak: u32,
}

/// Consecutive-failure counters per object.
#[derive(Debug)]
pub struct Backoff<K> {
    policy: BackoffPolicy,
    failures: Mutex<HashMap<K, Run>>,
}

impl<K: Eq + Hash + Clone> Backoff<K> {
    /// A tracker with `policy`.
    pub fn new(policy: BackoffPolicy) -> Self {
        Self {
            policy,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Record a failure of `key` (without progress) and return how long to wait before the
    /// next attempt.
    pub fn failure(&self, key: &K, retry_after: Option<Duration>) -> Duration {
        self.failure_after(key, retry_after, false)
    }

    /// Record a failure of `key` and return how long to wait before the next attempt. When
    /// the failed attempt still `progressed`, and it is among the first
    /// [`MAX_PROGRESSING_FAILURES`] consecutive failures, the failure count goes back to 1
    /// (the delay is `base`, or the `Retry-After`); otherwise it grows by one.
    pub fn failure_after(
        &self,
        key: &K,
        retry_after: Option<Duration>,
        progressed: bool,
    ) -> Duration {
        let mut map = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let run = map.entry(key.clone()).or_default();
        run.streak = run.streak.saturating_add(1);
        run.failures = if progressed && run.streak <= MAX_PROGRESSING_FAILURES {
            1
        } else {
            run.failures.saturating_add(1)
        };
        self.policy.delay(run.failures, retry_after)
    }

    /// Record a success: the next failure starts from `base` again.
    pub fn success(&self, key: &K) {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }

    /// Forget `key` (its object was deleted).
    pub fn forget(&self, key: &K) {
        self.success(key);
    }

    /// Keep only the keys `keep` accepts (a sweep of objects no longer known).
    pub fn retain(&self, mut keep: impl FnMut(&K) -> bool) {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|k, _| keep(k));
    }

    /// Number of keys with failures recorded.
    pub fn len(&self) -> usize {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// True when no failures are recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The failure count of `key` the next delay grows from: its consecutive failures so far,
    /// less those a progressing failure forgave ([`Self::failure_after`]).
    pub fn failures(&self, key: &K) -> u32 {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .map_or(0, |r| r.failures)
    }
}

impl<K: Eq + Hash + Clone> Default for Backoff<K> {
    fn default() -> Self {
        Self::new(BackoffPolicy::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn grows_doubling_to_the_cap() {
        let p = BackoffPolicy::default();
        let got: Vec<u64> = (1..=12).map(|n| p.delay(n, None).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(p.delay(u32::MAX, None), s(300));
        assert_eq!(p.delay(0, None), s(1));
    }

    #[test]
    fn retry_after_wins_when_longer_up_to_the_cap() {
        let p = BackoffPolicy::default();
        let cases = [
            (1, Some(s(5)), s(5)),
            (4, Some(s(5)), s(8)),
            (10, Some(s(600)), s(300)),
            (1, Some(s(100_000)), s(300)),
            (3, None, s(4)),
        ];
        for (n, ra, want) in cases {
            assert_eq!(p.delay(n, ra), want, "{n} {ra:?}");
        }
    }

    #[test]
    fn per_object_and_reset_on_success() {
        let b: Backoff<&str> = Backoff::default();
        assert_eq!(b.failure(&"a", None), s(1));
        assert_eq!(b.failure(&"a", None), s(2));
        assert_eq!(b.failure(&"a", None), s(4));
        assert_eq!(b.failure(&"b", None), s(1), "independent per object");
        assert_eq!(b.failures(&"a"), 3);
        b.success(&"a");
        assert_eq!(b.failures(&"a"), 0);
        assert_eq!(b.failure(&"a", None), s(1), "reset after success");
    }

    #[test]
    fn progress_keeps_the_delay_at_base_and_no_progress_doubles() {
        let b: Backoff<&str> = Backoff::default();
        // A first failure that progressed is an ordinary first failure.
        assert_eq!(b.failure_after(&"a", None, true), s(1));
        assert_eq!(b.failure_after(&"a", None, false), s(2));
        assert_eq!(b.failure_after(&"a", None, false), s(4));
        assert_eq!(b.failures(&"a"), 3);
        // Progress after a run of failures goes back to base; no progress doubles from there.
        assert_eq!(b.failure_after(&"a", None, true), s(1));
        assert_eq!(b.failures(&"a"), 1);
        assert_eq!(b.failure_after(&"a", None, false), s(2));
        assert_eq!(b.failure_after(&"a", None, true), s(1));
        assert_eq!(b.failure_after(&"a", None, true), s(1));
    }

    #[test]
    fn retry_after_is_honoured_after_a_progressing_failure() {
        let b: Backoff<&str> = Backoff::default();
        assert_eq!(b.failure_after(&"a", Some(s(7)), true), s(7));
        assert_eq!(b.failure_after(&"a", Some(s(100_000)), true), s(300));
        assert_eq!(b.failure_after(&"a", None, true), s(1));
    }

    #[test]
    fn progress_is_forgiven_a_bounded_number_of_times_then_doubles_to_the_cap() {
        let b: Backoff<&str> = Backoff::default();
        let limit = usize::try_from(MAX_PROGRESSING_FAILURES).unwrap_or(usize::MAX);
        let got: Vec<u64> = (0..limit + 12)
            .map(|_| b.failure_after(&"a", None, true).as_secs())
            .collect();
        assert!(got[..limit].iter().all(|d| *d == 1), "{got:?}");
        assert_eq!(
            got[limit..],
            [2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300, 300],
            "progress no longer counts past the limit: the object backs off to the cap"
        );
        // A success ends the run: progress counts again.
        b.success(&"a");
        assert_eq!(b.failure_after(&"a", None, false), s(1));
        assert_eq!(b.failure_after(&"a", None, true), s(1));
        assert_eq!(b.failure_after(&"a", None, false), s(2));
    }

    #[test]
    fn without_progress_a_permanently_failing_object_reaches_the_cap() {
        let b: Backoff<&str> = Backoff::default();
        let got: Vec<u64> = (0..12).map(|_| b.failure(&"a", None).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
    }
}
