//! A plan's `requeue_after` against component errors: by default the errors decide (a
//! user-fixable one waits for a change); with `requeue_despite_errors` the plan's retry time
//! stands and the errors are still reported.

use std::time::Duration;

use kube::runtime::controller::Action;

use crate::common::{ToySpec, env, toy};

fn broken(keep: bool) -> ToySpec {
    ToySpec {
        children: [("a".to_owned(), "1".to_owned())].into(),
        broken: vec!["a".to_owned()],
        requeue_s: Some(30),
        keep_requeue: keep,
        ..ToySpec::default()
    }
}

#[tokio::test]
async fn component_errors_override_the_plans_requeue_by_default() {
    let env = env().await;
    let mut t = toy("plain", crate::common::NS, &[]);
    t.spec = broken(false);
    env.create_toy(t).await;
    let report = env.pass("plain").await;
    assert!(!report.errors.is_empty(), "the component error is reported");
    assert_eq!(report.action, Action::await_change());
}

#[tokio::test]
async fn a_plan_may_keep_its_requeue_while_components_report_errors() {
    let env = env().await;
    let mut t = toy("kept", crate::common::NS, &[]);
    t.spec = broken(true);
    env.create_toy(t).await;
    let report = env.pass("kept").await;
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.reason.to_string() == "ImagePullAuthFailure"),
        "the component error is still reported: {:?}",
        report.errors
    );
    assert_eq!(report.action, Action::requeue(Duration::from_secs(30)));

    // The engine's own infrastructure error still backs off, sooner than the plan's requeue.
    env.cluster
        .faults()
        .inject(kinfer_testkit::Fault::status("patch", "configmaps", 500).times(1));
    env.patch_spec("kept", serde_json::json!({"children": {"a": "2"}}))
        .await;
    let report = env.pass("kept").await;
    assert_eq!(report.action, Action::requeue(Duration::from_secs(1)));
}

#[tokio::test]
async fn the_engines_backoff_grows_past_a_kept_requeue() {
    let env = env().await;
    let mut t = toy("grow", crate::common::NS, &[]);
    t.spec = broken(true);
    env.create_toy(t).await;
    env.pass("grow").await;

    // Every apply fails: the engine's own backoff doubles past the plan's 30 s instead of
    // being capped by it.
    env.cluster
        .faults()
        .inject(kinfer_testkit::Fault::status("patch", "configmaps", 500));
    env.patch_spec("grow", serde_json::json!({"children": {"a": "2"}}))
        .await;
    let mut waits = Vec::new();
    for _ in 0..7 {
        waits.push(env.pass("grow").await.action);
    }
    let expected: Vec<Action> = [1, 2, 4, 8, 16, 32, 64]
        .into_iter()
        .map(|s| Action::requeue(Duration::from_secs(s)))
        .collect();
    assert_eq!(waits, expected);

    // The apply goes through: the plan's requeue again, with its component error reported.
    env.cluster.faults().clear();
    let report = env.pass("grow").await;
    assert_eq!(report.applied, 1, "{report:?}");
    assert_eq!(report.action, Action::requeue(Duration::from_secs(30)));
}
