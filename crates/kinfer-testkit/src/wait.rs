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
pub async fn until(what: &str, bound: Duration, check: impl FnMut() -> Result<(), String>) {
    until_explained(what, bound, check, String::new).await;
}

/// [`until`], whose panic also carries `explain()`: context too costly to build on every check
/// (a summary of the whole cluster), built once, when the bound has passed.
pub async fn until_explained(
    what: &str,
    bound: Duration,
    mut check: impl FnMut() -> Result<(), String>,
    explain: impl FnOnce() -> String,
) {
    let deadline = Instant::now() + bound;
    loop {
        match check() {
            Ok(()) => return,
            Err(e) if Instant::now() >= deadline => {
                let context = explain();
                let sep = if context.is_empty() { "" } else { "\n" };
                panic!("{what}: not within {bound:?}: {e}{sep}{context}")
            }
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
    async fn panics_with_the_explanation_built_once_after_the_bound() {
        let explained = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = std::sync::Arc::clone(&explained);
        let waited = tokio::spawn(until_explained(
            "never",
            Duration::from_millis(50),
            || Err("still no".into()),
            move || {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                "the context".to_owned()
            },
        ))
        .await;
        let payload = waited.expect_err("it panics").into_panic();
        assert_eq!(
            payload.downcast_ref::<String>().map(String::as_str),
            Some("never: not within 50ms: still no\nthe context")
        );
        assert_eq!(explained.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn explains_only_when_the_bound_passed() {
        let mut n = 0;
        until_explained(
            "twice",
            Duration::from_secs(5),
            || {
                n += 1;
                if n == 2 { Ok(()) } else { Err("once".into()) }
            },
            || panic!("explained although the condition held"),
        )
        .await;
        assert_eq!(n, 2);
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
