//! Per-object exponential backoff for infrastructure errors.
//!
//! Contract: the delay for the n-th consecutive failure of one object is `base * 2^(n-1)`
//! capped at `cap` (1 s doubling to 300 s by default), raised to the server's `Retry-After`
//! when that is longer, but never past `cap` ([`BackoffPolicy::honoured`]: a server asking for
//! a day must not park an object, its spec edits and its finalizer that long). A success
//! resets the object. Keys are whatever identifies an object
//! (the engine uses kind/namespace/name). No clock and no randomness: the delay is a pure
//! function of the failure count, so tests and retries are deterministic.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

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

/// Consecutive-failure counters per object.
#[derive(Debug)]
pub struct Backoff<K> {
    policy: BackoffPolicy,
    failures: Mutex<HashMap<K, u32>>,
}

impl<K: Eq + Hash + Clone> Backoff<K> {
    /// A tracker with `policy`.
    pub fn new(policy: BackoffPolicy) -> Self {
        Self {
            policy,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Record a failure of `key` and return how long to wait before the next attempt.
    pub fn failure(&self, key: &K, retry_after: Option<Duration>) -> Duration {
        let mut map = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = map.entry(key.clone()).or_insert(0);
        *n = n.saturating_add(1);
        self.policy.delay(*n, retry_after)
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

    /// Consecutive failures of `key` so far.
    pub fn failures(&self, key: &K) -> u32 {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(key)
            .copied()
            .unwrap_or(0)
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
}
