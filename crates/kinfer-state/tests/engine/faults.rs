//! Injected API faults, the grace period, the engine's own RBAC and missing kinds.

use std::time::Duration;

use kinfer_state::{ErrorCategory, OverallStatus};
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
