//! The backoff respects progress: a failed reconcile that still applied a new or
//! changed child retries after the base delay, one that made no progress doubles, a
//! `Retry-After` is honoured either way, and neither a re-apply of the same body (a diff the
//! server never settles) nor an endless run of "progress" keeps an object off the cap.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinfer_state::{ErrorCategory, MAX_PROGRESSING_FAILURES};
use kinfer_testkit::Fault;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use serde_json::json;

use crate::common::*;

fn s(n: u64) -> Action {
    Action::requeue(Duration::from_secs(n))
}

/// Every apply of the toy's child `c` (applied last: children go in name order) answered
/// with `code`.
fn fail_last_child(env: &Env, toy: &str, code: u16) {
    env.cluster
        .faults()
        .inject(Fault::status("patch", "configmaps", code).named(&format!("{toy}-c")));
}

/// The next read by name of the child ConfigMap `name` answered with a 500.
fn fail_read_once(env: &Env, name: &str) {
    env.cluster
        .faults()
        .inject(Fault::status("get", "configmaps", 500).named(name).times(1));
}

fn has(r: &kinfer_state::engine::Report, category: ErrorCategory) -> bool {
    r.errors.iter().any(|e| e.category == category)
}

#[tokio::test]
async fn a_failed_reconcile_that_applied_new_children_retries_after_the_base_delay() {
    let env = env().await;
    fail_last_child(&env, "p1", 500);
    env.create("p1", &[("a", "1"), ("b", "1"), ("c", "1")])
        .await;

    // `a` and `b` are created, `c` fails: progress, so the first delay (as ever).
    let r = env.pass("p1").await;
    assert_eq!((r.applied, r.progressed), (2, true), "{r:?}");
    assert!(has(&r, ErrorCategory::Infrastructure), "{r:?}");
    assert_eq!(r.action, s(1));

    // Nothing new to apply, `c` fails again: no progress, the backoff doubles.
    for want in [2, 4, 8] {
        let r = env.pass("p1").await;
        assert_eq!((r.applied, r.progressed), (0, false), "{r:?}");
        assert_eq!(r.action, s(want));
    }

    // A changed child is applied before `c` fails again: back to the base delay, and the
    // doubling starts over from there.
    env.set_children("p1", &[("a", "2"), ("b", "1"), ("c", "1")])
        .await;
    let r = env.pass("p1").await;
    assert_eq!((r.applied, r.progressed), (1, true), "{r:?}");
    assert_eq!(r.action, s(1));
    let r = env.pass("p1").await;
    assert!(!r.progressed, "{r:?}");
    assert_eq!(r.action, s(2));

    // Once `c` goes through, the object converges and the backoff is reset.
    env.cluster.faults().clear();
    env.converge("p1").await;
    assert_eq!(cond(&env.get("p1").await, "Ready").status, "True");
    env.cluster
        .faults()
        .inject(Fault::status("list", "configmaps", 503).times(1));
    assert_eq!(env.pass("p1").await.action, s(1), "reset by the success");
}

#[tokio::test]
async fn a_failed_status_write_after_new_children_is_progress_but_the_status_write_is_not() {
    let env = env().await;
    env.create("p2", &[("a", "1")]).await;
    env.converge("p2").await;

    // The changed child goes through, the status write fails: progress.
    env.cluster
        .faults()
        .inject(Fault::status("patch", "toys/status", 500));
    env.set_children("p2", &[("a", "2")]).await;
    let r = env.pass("p2").await;
    assert_eq!((r.applied, r.progressed), (1, true), "{r:?}");
    assert_eq!(r.action, s(1));
    // The status write keeps failing and nothing else changes: doubling.
    assert_eq!(env.pass("p2").await.action, s(2));
    assert_eq!(env.pass("p2").await.action, s(4));

    // A status write that succeeds while a child keeps failing is not progress: the status
    // reports the failure, it does not move the object towards its plan.
    env.cluster.faults().clear();
    fail_last_child(&env, "p2", 500);
    env.set_children("p2", &[("a", "2"), ("c", "1")]).await;
    let r = env.pass("p2").await;
    assert!(r.status_written && !r.progressed && r.applied == 0, "{r:?}");
    assert_eq!(r.action, s(8), "the failure run goes on");
}

#[tokio::test]
async fn a_reapply_of_the_same_body_is_not_progress() {
    let env = env().await;
    fail_last_child(&env, "p3", 500);
    env.create("p3", &[("a", "1"), ("c", "1")]).await;
    let r = env.pass("p3").await;
    assert_eq!((r.applied, r.progressed), (1, true), "{r:?}");
    assert_eq!(r.action, s(1));

    // Another manager takes `a`'s value over before every attempt: the diff never settles,
    // so every reconcile re-applies the same body, and the server accepts it. That is not
    // progress: the backoff doubles although a child is applied each time.
    let theirs = PatchParams::apply("someone-else").force();
    for (i, want) in [2, 4, 8, 16].into_iter().enumerate() {
        let patch = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "p3-a"},
            "data": {"value": format!("theirs-{i}")},
        });
        env.cms
            .patch("p3-a", &theirs, &Patch::Apply(&patch))
            .await
            .expect("their apply");
        let r = env.pass("p3").await;
        assert_eq!((r.applied, r.progressed), (1, false), "{r:?}");
        assert_eq!(r.action, s(want));
    }
    let a: ConfigMap = env.cms.get("p3-a").await.expect("child");
    assert_eq!(
        a.data.unwrap_or_default().get("value").map(String::as_str),
        Some("1"),
        "our value was applied back each time"
    );
}

#[tokio::test]
async fn a_retry_after_is_honoured_after_progress() {
    let env = env().await;
    env.cluster.faults().inject(
        Fault::throttle("patch", "configmaps", 7)
            .named("p4-c")
            .times(1),
    );
    env.create("p4", &[("a", "1"), ("c", "1")]).await;
    let r = env.pass("p4").await;
    assert_eq!((r.applied, r.progressed), (1, true), "{r:?}");
    assert_eq!(
        r.action,
        s(7),
        "the server's Retry-After, not the base delay"
    );

    // And the hold stands for reconciles starting earlier.
    let r = env.pass("p4").await;
    assert!(r.held, "{r:?}");
    assert_eq!(r.action, s(7));
}

#[tokio::test]
async fn a_plan_that_changes_on_every_attempt_still_backs_off_to_the_cap() {
    let env = env().await;
    fail_last_child(&env, "p5", 500);
    env.create("p5", &[("a", "0"), ("c", "1")]).await;

    // Every attempt applies a new body of `a` (progress each time) and fails on `c`: only the
    // first MAX_PROGRESSING_FAILURES attempts are forgiven, then the backoff doubles to the
    // cap although each attempt still "progresses".
    let limit = usize::try_from(MAX_PROGRESSING_FAILURES).expect("small");
    let mut waits = Vec::new();
    for i in 0..limit + 10 {
        if i > 0 {
            env.set_children("p5", &[("a", &i.to_string()), ("c", "1")])
                .await;
        }
        let r = env.pass("p5").await;
        assert_eq!((r.applied, r.progressed), (1, true), "attempt {i}: {r:?}");
        waits.push(r.action);
    }
    assert!(waits[..limit].iter().all(|a| *a == s(1)), "{waits:?}");
    let rest: Vec<Action> = [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]
        .into_iter()
        .map(s)
        .collect();
    assert_eq!(waits[limit..], rest[..]);
}

#[tokio::test]
async fn a_failed_read_by_name_skips_only_its_own_child_and_counts_the_rest_as_progress() {
    let env = env().await;
    // A new toy's children are read by name before their first apply (no cache holds them):
    // the read of `a` fails once.
    fail_read_once(&env, "p6-a");
    env.create("p6", &[("a", "1"), ("b", "1")]).await;
    let r = env.pass("p6").await;
    assert_eq!((r.applied, r.progressed), (1, true), "{r:?}");
    assert!(has(&r, ErrorCategory::Infrastructure), "{r:?}");
    assert_eq!(r.action, s(1));
    assert!(env.cms.get_opt("p6-a").await.expect("read").is_none());
    assert!(env.cms.get_opt("p6-b").await.expect("read").is_some());

    // The next attempt reads and applies `a`.
    let r = env.pass("p6").await;
    assert_eq!(r.applied, 1, "{r:?}");
    env.converge("p6").await;
    assert_eq!(cond(&env.get("p6").await, "Ready").status, "True");
}

#[tokio::test]
async fn a_taken_name_still_refuses_the_whole_plan() {
    let env = env().await;
    // `p7-a` exists and is not ours: nothing of the plan is applied, `b` included.
    env.cms
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "p7-a"}})).expect("cm"),
        )
        .await
        .expect("foreign object");
    env.create("p7", &[("a", "1"), ("b", "1")]).await;
    let r = env.pass("p7").await;
    assert_eq!((r.applied, r.progressed), (0, false), "{r:?}");
    assert!(env.cms.get_opt("p7-b").await.expect("read").is_none());
}

#[tokio::test]
async fn a_renamed_child_is_kept_until_its_replacement_was_read_and_applied() {
    let env = env().await;
    env.create("p8", &[("old", "1")]).await;
    env.converge("p8").await;

    // The plan renames `p8-old` to `p8-new`; the read of the new name fails once. Nothing may
    // be deleted on that pass: the old child is the only one serving until the new one exists.
    fail_read_once(&env, "p8-new");
    env.set_children("p8", &[("new", "1")]).await;
    let r = env.pass("p8").await;
    assert_eq!((r.applied, r.deleted, r.progressed), (0, 0, false), "{r:?}");
    assert!(has(&r, ErrorCategory::Infrastructure), "{r:?}");
    assert!(
        env.cms.get_opt("p8-old").await.expect("read").is_some(),
        "the old child stays while its replacement is unread"
    );
    assert!(env.cms.get_opt("p8-new").await.expect("read").is_none());

    // The next pass reads and applies the new name, then deletes the old one.
    let r = env.pass("p8").await;
    assert_eq!((r.applied, r.deleted), (1, 1), "{r:?}");
    assert!(!has(&r, ErrorCategory::Infrastructure), "{r:?}");
    assert!(env.cms.get_opt("p8-new").await.expect("read").is_some());
    assert!(env.cms.get_opt("p8-old").await.expect("read").is_none());
}

#[tokio::test]
async fn a_deletion_is_progress() {
    let env = env().await;
    env.create("p9", &[("a", "1"), ("b", "1"), ("c", "1")])
        .await;
    env.converge("p9").await;

    // `b` and `c` are dropped; `c`'s deletion keeps failing, `b`'s fails twice.
    env.cluster
        .faults()
        .inject(Fault::status("delete", "configmaps", 500).named("p9-c"));
    env.cluster.faults().inject(
        Fault::status("delete", "configmaps", 500)
            .named("p9-b")
            .times(2),
    );
    env.set_children("p9", &[("a", "1")]).await;
    for want in [1, 2] {
        let r = env.pass("p9").await;
        assert_eq!((r.deleted, r.progressed), (0, false), "{r:?}");
        assert_eq!(r.action, s(want));
    }
    // `b` is deleted, `c` fails again: progress, back to the base delay.
    let r = env.pass("p9").await;
    assert_eq!((r.applied, r.deleted, r.progressed), (0, 1, true), "{r:?}");
    assert!(has(&r, ErrorCategory::Infrastructure), "{r:?}");
    assert_eq!(r.action, s(1));
    assert!(env.cms.get_opt("p9-b").await.expect("read").is_none());
    // Only `c` is left to fail: no progress, doubling again.
    let r = env.pass("p9").await;
    assert_eq!((r.deleted, r.progressed), (0, false), "{r:?}");
    assert_eq!(r.action, s(2));
}

#[tokio::test]
async fn a_failed_read_and_a_taken_name_refuse_the_whole_plan() {
    let env = env().await;
    env.create("p10", &[("old", "1")]).await;
    env.converge("p10").await;

    // The read of `p10-a` fails, `p10-b` exists and is not ours: the refusal wins, so `p10-c`
    // is not applied and the dropped `p10-old` is not deleted.
    env.cms
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "p10-b"}})).expect("cm"),
        )
        .await
        .expect("foreign object");
    fail_read_once(&env, "p10-a");
    env.set_children("p10", &[("a", "1"), ("b", "1"), ("c", "1")])
        .await;
    let r = env.pass("p10").await;
    assert_eq!((r.applied, r.deleted, r.progressed), (0, 0, false), "{r:?}");
    assert!(has(&r, ErrorCategory::Infrastructure), "{r:?}");
    assert!(has(&r, ErrorCategory::InvalidSpec), "NameTaken: {r:?}");
    assert!(env.cms.get_opt("p10-c").await.expect("read").is_none());
    assert!(env.cms.get_opt("p10-old").await.expect("read").is_some());
}

#[tokio::test]
async fn throttling_alone_does_not_grow_the_backoff_within_the_bound() {
    let env = env().await;
    env.cluster
        .faults()
        .inject(Fault::throttle("patch", "configmaps", 1).named("p11-c"));
    env.create("p11", &[("a", "1"), ("c", "1")]).await;

    // Every attempt is throttled (429, Retry-After: 1) on `c` and applies nothing new after
    // the first: the server's load, not the object's fault. The retry stays at the server's
    // Retry-After for MAX_PROGRESSING_FAILURES attempts in a row, then doubles to the cap.
    let limit = usize::try_from(MAX_PROGRESSING_FAILURES).expect("small");
    let mut waits = Vec::new();
    while waits.len() < limit + 4 {
        let r = env.pass("p11").await;
        if r.held {
            env.clock.advance(Duration::from_secs(1));
            continue;
        }
        assert!(has(&r, ErrorCategory::Infrastructure), "{r:?}");
        waits.push(r.action);
    }
    assert!(waits[..limit].iter().all(|a| *a == s(1)), "{waits:?}");
    assert_eq!(waits[limit..], [s(2), s(4), s(8), s(16)]);

    // A 500 is evidence against the object: without progress it doubles as before.
    env.cluster.faults().clear();
    env.clock.advance(Duration::from_secs(1));
    env.converge("p11").await;
    fail_last_child(&env, "p11", 500);
    env.set_children("p11", &[("a", "1"), ("c", "2")]).await;
    let first = env.pass("p11").await;
    assert_eq!(first.action, s(1), "{first:?}");
    let second = env.pass("p11").await;
    assert_eq!(second.action, s(2), "{first:?} then {second:?}");
}
