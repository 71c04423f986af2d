//! Injected API faults, the grace period, the engine's own RBAC and missing kinds.

use std::time::Duration;

use kinfer_state::{ErrorCategory, OverallStatus, Report};
use kinfer_testkit::Fault;
use kube::runtime::controller::Action;

use crate::common::*;

#[tokio::test]
async fn injected_conflict_server_error_and_throttling_converge() {
    let env = env().await;
    env.create("t5", &[("a", "1")]).await;
    let faults = env.cluster.faults();
    let s = Duration::from_secs;

    // 409 on the child apply: infrastructure, backoff 1 s.
    faults.inject(Fault::status("patch", "configmaps", 409).times(1));
    let r = env.pass("t5").await;
    assert!(
        r.errors
            .iter()
            .any(|e| e.category == ErrorCategory::Infrastructure),
        "{r:?}"
    );
    assert_eq!(r.action, Action::requeue(s(1)));
    let toy = env.get("t5").await;
    assert_eq!(cond(&toy, "DependenciesReachable").status, "False");

    // 500 on the next attempt: backoff doubles.
    faults.inject(Fault::status("patch", "configmaps", 500).times(1));
    let r = env.pass("t5").await;
    assert_eq!(r.action, Action::requeue(s(2)));

    // 429 with Retry-After 7 s: honoured.
    faults.inject(
        Fault::status("patch", "configmaps", 429)
            .retry_after(7)
            .times(1),
    );
    let r = env.pass("t5").await;
    assert_eq!(r.action, Action::requeue(s(7)));

    // Held until the 7 s have passed (`a_retry_after_holds_every_reconcile_until_it_has_passed`).
    env.clock.advance(s(7));
    // Faults exhausted: converges, backoff reset, conditions recover.
    env.converge("t5").await;
    let toy = env.get("t5").await;
    assert_eq!(cond(&toy, "DependenciesReachable").status, "True");
    assert_eq!(cond(&toy, "Ready").status, "True");
    faults.inject(Fault::status("list", "configmaps", 503).times(1));
    let r = env.pass("t5").await;
    assert_eq!(
        r.action,
        Action::requeue(s(1)),
        "backoff was reset by the success"
    );
}

/// Every request the server received, of any verb.
fn requests(env: &Env) -> u64 {
    env.cluster.counters().snapshot().values().sum()
}

/// A converged toy `name` whose child `a` changes, its apply answered once with 429 and
/// `Retry-After: retry_after` seconds: the report of that pass.
async fn throttled_change(env: &Env, name: &str, retry_after: u64) -> Report {
    env.create(name, &[("a", "1")]).await;
    env.converge(name).await;
    env.set_children(name, &[("a", "2")]).await;
    env.cluster
        .faults()
        .inject(Fault::throttle("patch", "configmaps", retry_after).times(1));
    env.pass(name).await
}

#[tokio::test]
async fn a_retry_after_holds_every_reconcile_until_it_has_passed() {
    let env = env().await;
    let s = Duration::from_secs;

    // A change to apply, throttled once with Retry-After 5 s.
    let r = throttled_change(&env, "held", 5).await;
    assert_eq!(r.action, Action::requeue(s(5)), "{r:?}");
    assert!(!r.held);

    // A reconcile triggered before the deadline (a watch event) sends nothing at all and
    // requeues for the rest of the hold.
    let toy = env.get("held").await;
    let before = requests(&env);
    let r = env.engine.reconcile(&toy).await;
    assert!(r.held && r.skipped, "{r:?}");
    assert_eq!(r.action, Action::requeue(s(5)));
    env.clock.advance(s(3));
    let r = env.engine.reconcile(&toy).await;
    assert!(r.held, "{r:?}");
    assert_eq!(r.action, Action::requeue(s(2)), "the remainder of the hold");
    assert_eq!(requests(&env), before, "a held reconcile sent a request");

    // Once it has passed, the next reconcile does the work.
    env.clock.advance(s(2));
    let r = env.engine.reconcile(&toy).await;
    assert!(!r.held, "{r:?}");
    assert_eq!(r.applied, 1, "{r:?}");
    let cm = env.cms.get("held-a").await.expect("child");
    assert_eq!(
        cm.data.unwrap_or_default().get("value").map(String::as_str),
        Some("2")
    );
}

#[tokio::test]
async fn a_hold_never_lasts_longer_than_the_backoff_cap() {
    let env = env().await;
    let s = Duration::from_secs;

    // A server asking for more than a day: honoured up to the cap (300 s).
    let r = throttled_change(&env, "long", 100_000).await;
    assert_eq!(r.action, Action::requeue(s(300)), "{r:?}");
    let toy = env.get("long").await;
    env.clock.advance(s(299));
    let r = env.engine.reconcile(&toy).await;
    assert!(r.held, "{r:?}");
    assert_eq!(r.action, Action::requeue(s(1)), "the hold ends at 300 s");
    env.clock.advance(s(1));
    let r = env.engine.reconcile(&toy).await;
    assert!(!r.held && r.applied == 1, "{r:?}");
}

#[tokio::test]
async fn after_a_retry_after_the_reconcile_sends_nothing_more() {
    let env = env().await;
    env.create("stop", &[("a", "1"), ("b", "1"), ("c", "1")])
        .await;
    env.converge("stop").await;
    let s = Duration::from_secs;
    let counters = env.cluster.counters();

    // Two orphans to delete; the first deletion is throttled.
    env.set_children("stop", &[("a", "1")]).await;
    env.cluster
        .faults()
        .inject(Fault::throttle("delete", "configmaps", 5).times(1));
    let writes = write_requests(&env.cluster);
    let deletes = counters.count("delete", Some("configmaps"));
    let r = env.pass("stop").await;
    assert_eq!(r.action, Action::requeue(s(5)), "{r:?}");
    assert_eq!(
        counters.count("delete", Some("configmaps")) - deletes,
        1,
        "the second deletion was sent after the Retry-After"
    );
    assert!(r.deleted == 0 && !r.status_written, "{r:?}");
    assert_eq!(
        write_requests(&env.cluster),
        writes + 1,
        "a write other than the throttled deletion (status, event)"
    );
    assert_eq!(
        cond(&env.get("stop").await, "DependenciesReachable").status,
        "True",
        "status waits for the reconcile after the hold"
    );

    // A throttled apply: no status patch either.
    env.clock.advance(s(5));
    env.converge("stop").await;
    env.set_children("stop", &[("a", "2")]).await;
    env.cluster
        .faults()
        .inject(Fault::throttle("patch", "configmaps", 5).times(1));
    let writes = write_requests(&env.cluster);
    let r = env.pass("stop").await;
    assert!(r.applied == 0 && !r.status_written, "{r:?}");
    assert_eq!(
        write_requests(&env.cluster),
        writes + 1,
        "only the throttled apply"
    );

    // After the hold everything is done, status included.
    env.clock.advance(s(5));
    env.converge("stop").await;
    assert!(env.cms.get_opt("stop-b").await.expect("get").is_none());
    assert!(env.cms.get_opt("stop-c").await.expect("get").is_none());
    assert_eq!(cond(&env.get("stop").await, "Ready").status, "True");
}

#[tokio::test]
async fn infrastructure_errors_respect_the_grace_period() {
    let env = env().await;
    env.create("t6", &[("a", "1")]).await;
    env.converge("t6").await;
    let faults = env.cluster.faults();

    faults.inject(Fault::status("list", "configmaps", 503));
    let r = env.pass("t6").await;
    assert_eq!(r.status, Some(OverallStatus::Ready), "within grace: {r:?}");
    let toy = env.get("t6").await;
    assert_eq!(cond(&toy, "DependenciesReachable").status, "False");
    assert_eq!(cond(&toy, "Ready").status, "True");

    env.clock.advance(Duration::from_secs(11));
    let r = env.pass("t6").await;
    assert_eq!(r.status, Some(OverallStatus::Degraded), "{r:?}");
    let toy = env.get("t6").await;
    assert_eq!(
        (
            cond(&toy, "Ready").status.as_str(),
            cond(&toy, "Ready").reason.as_str()
        ),
        ("False", "InfrastructureError")
    );

    faults.clear();
    env.converge("t6").await;
    assert_eq!(cond(&env.get("t6").await, "Ready").status, "True");
}

#[tokio::test]
async fn the_engines_own_forbidden_is_infrastructure_not_a_user_wait() {
    let env = env().await;
    env.create("rb", &[("a", "1")]).await;
    env.cluster
        .faults()
        .inject(Fault::status("list", "configmaps", 403).times(1));
    let r = env.pass("rb").await;
    let e = r
        .errors
        .iter()
        .find(|e| e.reason.as_str() == "ControllerForbidden")
        .unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(e.category, ErrorCategory::Infrastructure);
    assert_eq!(
        r.action,
        Action::requeue(Duration::from_secs(1)),
        "retried, not awaited"
    );
    assert_eq!(
        r.errors
            .iter()
            .filter(|e| e.reason.as_str() == "ControllerForbidden")
            .count(),
        1,
        "a listing error is counted once"
    );
    env.converge("rb").await;
    assert_eq!(cond(&env.get("rb").await, "Ready").status, "True");
}

#[tokio::test]
async fn a_child_kind_that_is_not_installed_degrades_only_its_component() {
    let env = env_with(ToyPipeline {
        widgets: true,
        ..ToyPipeline::default()
    })
    .await;
    env.create("k1", &[("a", "1")]).await;
    let r = env.pass("k1").await;
    assert_eq!(r.applied, 1, "the other children are still applied: {r:?}");
    assert!(
        r.errors
            .iter()
            .all(|e| e.category != ErrorCategory::MissingUpstreamDependency),
        "{r:?}"
    );
    let e = r
        .errors
        .iter()
        .find(|e| e.reason.as_str() == "KindNotInstalled")
        .unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(e.category, ErrorCategory::Infrastructure);
    assert_eq!(
        r.action,
        Action::requeue(Duration::from_mins(5)),
        "slow recheck"
    );
    let toy = env.get("k1").await;
    assert_eq!(cond(&toy, "WidgetsReady").status, "False");
    assert_eq!(
        cond(&toy, "ChildaReady").status,
        "False",
        "not observed yet"
    );
    let r = env.pass("k1").await;
    assert_eq!(
        cond(&env.get("k1").await, "ChildaReady").status,
        "True",
        "{r:?}"
    );
}
