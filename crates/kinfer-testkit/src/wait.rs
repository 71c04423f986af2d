//! Bounded polling for tests, in one place: a test waits for a condition on what the test
//! cluster holds (read in-process, so fault injection and request counters see nothing of it),
//! never for a fixed time. Polling, not a watch, because the conditions span many objects and
//! kinds; the interval is short enough not to slow a test and the bound makes a missed
//! condition a failure that names what was awaited and why it did not hold.

use std::time::Duration;

use tokio::time::Instant;

/// How often [`until`] and [`holds`] check.
pub const INTERVAL: Duration = Duration::from_millis(20);

/// Checks `check` every [`INTERVAL`] until it is `Ok`; panics after `bound` with `what` and the
/// last reason it was not.
pub async fn until(what: &str, bound: Duration, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + bound;
    loop {
        match check() {
            Ok(()) => return,
            Err(e) if Instant::now() >= deadline => panic!("{what}: not within {bound:?}: {e}"),
            Err(_) => tokio::time::sleep(INTERVAL).await,
        }
    }
}

/// [`until`] for a plain condition.
pub async fn holds(what: &str, bound: Duration, mut cond: impl FnMut() -> bool) {
    until(what, bound, || {
        if cond() {
            Ok(())
        } else {
            Err("the condition does not hold".to_owned())
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_once_the_condition_holds() {
        let mut n = 0;
        holds("three checks", Duration::from_secs(5), || {
            n += 1;
            n == 3
        })
        .await;
        assert_eq!(n, 3);
    }

    #[tokio::test]
    #[should_panic(expected = "never: not within")]
    async fn panics_with_the_last_reason_after_the_bound() {
        until(
            "never",
            Duration::from_millis(50),
            || Err("still no".into()),
        )
        .await;
    }
}
