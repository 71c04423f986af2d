//! Time as an injected dependency.
//!
//! Contract: every place of the engine that needs "now" (condition transition times, the
//! infrastructure grace period, queue-wait metrics) asks a [`Clock`]. Production uses
//! [`SystemClock`]; tests use [`ManualClock`] and move time explicitly. No code path reads the
//! system time behind the clock's back, and there is no `cfg(test)` branch.

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// A source of the current time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that only moves when told to; for tests and simulations.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    /// A clock standing at 2026-01-01T00:00:00Z.
    pub fn at_epoch_2026() -> Self {
        Self::new(Timestamp::from_second(1_767_225_600).unwrap_or(Timestamp::UNIX_EPOCH))
    }

    /// Move the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let step = SignedDuration::try_from(by).unwrap_or(SignedDuration::MAX);
        *now = now.saturating_add(step).unwrap_or(*now);
    }

    /// Set the clock to `to`.
    pub fn set(&self, to: Timestamp) {
        *self
            .now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self
            .now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `now` truncated to whole seconds, the precision `metav1.Time` keeps on the wire. Using it
/// for transition times means a value read back from the API server equals the value written.
pub fn now_seconds(clock: &dyn Clock) -> Timestamp {
    let now = clock.now();
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// The non-negative time from `earlier` to `later` (zero if `later` is before `earlier`).
pub fn elapsed(earlier: Timestamp, later: Timestamp) -> Duration {
    Duration::try_from(later.duration_since(earlier)).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::at_epoch_2026();
        let t0 = clock.now();
        assert_eq!(clock.now(), t0);
        clock.advance(Duration::from_millis(1500));
        assert_eq!(elapsed(t0, clock.now()), Duration::from_millis(1500));
        assert_eq!(elapsed(clock.now(), t0), Duration::ZERO);
        assert_eq!(now_seconds(&clock).as_second(), t0.as_second() + 1);
        assert_eq!(now_seconds(&clock).subsec_nanosecond(), 0);
    }
}
