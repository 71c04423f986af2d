//! The real controller's watches: after every watch gets 410 Gone (an API server restart
//! after compaction), a change is still reconciled promptly; the time from a trigger (the
//! object's or a child's) to its reconcile is recorded; the engine forgets deleted objects,
//! also when the delete event was missed while the watch was down.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kinfer_testkit::Fault;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::wait::await_condition;

use crate::common::{Env, WAIT, env, replicas, valid_spec, wait_for};

/// Shorter than one stall of kube-runtime's default trigger backoff after a 410 on each of
/// the controller's watches (35-45 s measured), and generous: the re-lists, the edit's
/// reconcile and the simulator's rollout take well under a second on an idle machine, and a
/// loaded 2-core machine running two other test suites has been seen to need several seconds.
/// A bound below the stall is what makes the test fail when the stall comes back.
const PROMPTLY: Duration = Duration::from_secs(25);

/// Waits (bounded by [`WAIT`], [`kinfer_testkit::wait::holds`]) until `cond` holds: for
/// state with no change notification (the engine's memory, its metrics).
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    kinfer_testkit::wait::holds(what, WAIT, cond).await;
}

/// Deletes a service (as a user does).
async fn delete(env: &Env, name: &str) {
    env.services
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete");
}

/// Waits until the engine remembers `n` objects.
async fn remembered(env: &Env, n: usize, what: &str) {
    eventually(what, || env.engine.remembered() == n).await;
}

/// The sum of the engine's metric samples whose line starts with `name`.
fn metric(env: &Env, name: &str) -> u64 {
    env.engine.metrics().sum(name)
}

/// Samples of the queue-wait histogram so far.
fn queue_waits(env: &Env) -> u64 {
    metric(env, "kinfer_reconcile_queue_wait_seconds_count")
}

/// Reconciles run so far.
fn reconciles(env: &Env) -> u64 {
    metric(env, "kinfer_reconciles_total")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_410_gone_on_every_watch_a_change_is_reconciled_promptly() {
    let mut env = env().await;
    env.start_controller();
    env.create("gone", valid_spec()).await.unwrap();
    env.wait_ready("gone").await;

    // Every watch resumes from a version the server no longer has: 410 Gone, then a re-list.
    env.cluster.faults().expire_history();
    env.cluster.faults().cut_watches();
    env.edit("gone", |s| s.replicas = 3).await;

    let reconciled = tokio::time::timeout(
        PROMPTLY,
        await_condition(
            env.deployments.clone(),
            "gone-primary",
            |d: Option<&Deployment>| d.and_then(replicas) == Some(3),
        ),
    )
    .await;
    assert!(
        matches!(reconciled, Ok(Ok(_))),
        "the edit was not reconciled within {PROMPTLY:?} of the 410s: {reconciled:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wait_from_trigger_to_reconcile_is_recorded() {
    let mut env = env().await;
    env.start_controller();
    env.create("waited", valid_spec()).await.unwrap();
    env.wait_ready("waited").await;
    assert!(queue_waits(&env) > 0, "no queue-wait sample");
}

/// A change of a child alone (another manager annotating a Deployment: nothing to repair,
/// no status change, so no event of the service itself) is a trigger of its owner: its
/// reconcile observes a queue wait. Three such changes, each awaited by a reconcile, must add
/// at least two samples; without child triggers they add none (at most one can come from a
/// late reconcile of the service's own last status write).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_of_a_child_alone_records_a_queue_wait() {
    let mut env = env().await;
    env.start_controller();
    env.create("child", valid_spec()).await.unwrap();
    env.wait_ready("child").await;
    env.settle().await;
    let before = queue_waits(&env);

    for i in 0..3 {
        let reconciled = reconciles(&env);
        let note =
            serde_json::json!({"metadata": {"annotations": {"example.com/note": i.to_string()}}});
        env.deployments
            .patch(
                "child-primary",
                &PatchParams::default(),
                &Patch::Merge(&note),
            )
            .await
            .expect("annotate");
        eventually("the child change is reconciled", || {
            reconciles(&env) > reconciled
        })
        .await;
    }
    eventually("the child changes' queue waits are recorded", || {
        queue_waits(&env) >= before + 2
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_service_is_forgotten() {
    let mut env = env().await;
    env.start_controller();
    env.create("bye", valid_spec()).await.unwrap();
    env.wait_ready("bye").await;
    assert_eq!(env.engine.remembered(), 1);
    delete(&env, "bye").await;
    remembered(&env, 0, "the engine forgot the deleted service").await;
}

/// A service deleted while its reconcile is in flight (its Deployment apply slowed down):
/// the delete event forgets it first, the reconcile then records what it applied; that must
/// be forgotten too once the reconcile ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_deleted_during_its_reconcile_is_forgotten() {
    let mut env = env().await;
    let faults = env.cluster.faults();
    faults.inject(Fault::latency("patch", "deployments", Duration::from_secs(2)).times(1));
    env.start_controller();
    env.create("brief", valid_spec()).await.unwrap();
    eventually("the reconcile is applying the Deployment", || {
        faults.fired() > 0
    })
    .await;
    delete(&env, "brief").await;
    eventually("the in-flight reconcile ended", || reconciles(&env) > 0).await;
    remembered(&env, 0, "the engine forgot the deleted service").await;
}

/// A service deleted while the controller's watch is down: the re-list after the 410 no
/// longer has it and its delete event never comes; the engine forgets it all the same and
/// keeps what it knows of the service still there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_deleted_while_the_watch_is_down_is_forgotten() {
    let mut env = env().await;
    env.start_controller();
    env.create("kept", valid_spec()).await.unwrap();
    env.create("gone", valid_spec()).await.unwrap();
    env.wait_ready("kept").await;
    env.wait_ready("gone").await;
    remembered(&env, 2, "both services are remembered").await;

    // The service watch cannot reconnect while `gone` is deleted, then must re-list.
    let faults = env.cluster.faults();
    faults.inject(Fault::status("watch", "zerfooinferenceservices", 503));
    faults.cut_watches();
    delete(&env, "gone").await;
    wait_for(&env.services, "gone", |z| z.is_none()).await;
    faults.expire_history();
    faults.clear();

    remembered(&env, 1, "the engine forgot only the deleted service").await;
    // And the remaining one is still served: an edit is reconciled.
    env.edit("kept", |s| s.replicas = 3).await;
    wait_for(
        &env.deployments,
        "kept-primary",
        |d: Option<&Deployment>| d.and_then(replicas) == Some(3),
    )
    .await;
}
