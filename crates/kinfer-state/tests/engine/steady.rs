//! Creation, steady state, spec changes, recreation and orphans.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kinfer_state::OverallStatus;
use kinfer_state::metrics::WriteVerb;
use kube::api::{DeleteParams, PostParams};
use kube::core::ObjectMeta;
use kube::runtime::controller::Action;

use crate::common::*;

#[tokio::test]
async fn creates_children_then_a_steady_state_writes_nothing() {
    let env = env().await;
    env.create("t1", &[("a", "1"), ("b", "2")]).await;

    let first = env.pass("t1").await;
    assert_eq!(first.applied, 2, "{first:?}");
    assert!(first.status_written);
    assert_eq!(
        first.status,
        Some(OverallStatus::Progressing),
        "children did not exist when fetched"
    );
    let cm = env.cms.get("t1-a").await.expect("child a");
    let labels = cm.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("kinfer.dev/managed-by").map(String::as_str),
        Some("toy-controller")
    );
    assert!(
        !labels.contains_key("app.kubernetes.io/managed-by"),
        "app.kubernetes.io/* is the builders'"
    );
    assert_eq!(
        labels.get("example.com/toy.name").map(String::as_str),
        Some("t1")
    );
    let owner = &cm.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("Toy", Some(true)));

    let second = env.pass("t1").await;
    assert_eq!(
        (second.applied, second.deleted),
        (0, 0),
        "children are unchanged: {second:?}"
    );
    assert_eq!(second.status, Some(OverallStatus::Ready));
    assert!(second.status_written, "the children are now observed ready");

    // Steady state: count every write request the server receives.
    let before = write_requests(&env.cluster);
    let third = env.pass("t1").await;
    assert_eq!(third.writes(), 0, "{third:?}");
    assert_eq!(
        write_requests(&env.cluster),
        before,
        "a steady-state reconcile sends no write"
    );
    assert_eq!(third.action, Action::await_change());
    assert_eq!(
        env.engine
            .metrics()
            .writes("toy-controller", WriteVerb::Apply),
        2
    );
}

#[tokio::test]
async fn lasttransitiontime_does_not_move_on_a_no_op() {
    let env = env().await;
    env.create("t2", &[("a", "1")]).await;
    env.converge("t2").await;
    let before = env.get("t2").await;
    env.clock.advance(Duration::from_hours(1));
    let report = env.pass("t2").await;
    assert_eq!(report.writes(), 0);
    let after = env.get("t2").await;
    assert_eq!(
        before.metadata.resource_version,
        after.metadata.resource_version
    );
    assert_eq!(before.status, after.status);
    assert_eq!(cond(&after, "Ready").status, "True");
    assert_eq!(
        cond(&after, "Ready").observed_generation,
        after.metadata.generation
    );
}

#[tokio::test]
async fn a_changed_spec_writes_only_what_changed() {
    let env = env().await;
    env.create("t3", &[("a", "1"), ("b", "2")]).await;
    env.converge("t3").await;
    env.set_children("t3", &[("a", "1"), ("b", "changed")])
        .await;
    env.cluster.counters().reset();
    let report = env.pass("t3").await;
    assert_eq!(report.applied, 1, "{report:?}");
    assert_eq!(env.cluster.counters().count("patch", Some("configmaps")), 1);
    assert!(report.status_written, "observedGeneration moved");
    let b = env.cms.get("t3-b").await.expect("b");
    assert_eq!(
        b.data.unwrap_or_default().get("value").map(String::as_str),
        Some("changed")
    );
    assert_eq!(env.converge("t3").await, 1);
}

#[tokio::test]
async fn a_deleted_child_is_recreated_and_an_orphan_deleted() {
    let env = env().await;
    env.create("t4", &[("a", "1"), ("b", "2")]).await;
    env.converge("t4").await;

    env.cms
        .delete("t4-a", &DeleteParams::default())
        .await
        .expect("delete a");
    let report = env.pass("t4").await;
    assert_eq!(report.applied, 1, "{report:?}");
    assert!(env.cms.get_opt("t4-a").await.expect("get").is_some());
    env.converge("t4").await;

    // A labelled ConfigMap we do not control is never deleted.
    let foreign = ConfigMap {
        metadata: ObjectMeta {
            name: Some("foreign".into()),
            labels: Some(
                [
                    ("kinfer.dev/managed-by", "toy-controller"),
                    ("example.com/toy.name", "t4"),
                ]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into(),
            ),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    env.cms
        .create(&PostParams::default(), &foreign)
        .await
        .expect("foreign");

    env.set_children("t4", &[("a", "1")]).await;
    let report = env.pass("t4").await;
    assert_eq!((report.applied, report.deleted), (0, 1), "{report:?}");
    assert!(
        env.cms.get_opt("t4-b").await.expect("get").is_none(),
        "orphan deleted"
    );
    assert!(
        env.cms.get_opt("foreign").await.expect("get").is_some(),
        "not ours: kept"
    );
    env.converge("t4").await;
    let toy = env.get("t4").await;
    assert!(
        toy.status
            .unwrap()
            .conditions
            .iter()
            .all(|c| c.type_ != "ChildbReady"),
        "stale component condition pruned"
    );
}

#[tokio::test]
async fn a_new_object_costs_its_children_and_two_status_writes() {
    let env = env().await;
    env.create("n1", &[("a", "1"), ("b", "2")]).await;
    let mut reports = Vec::new();
    for _ in 0..4 {
        reports.push(env.pass("n1").await);
    }
    let applied: usize = reports.iter().map(|r| r.applied).sum();
    let statuses = reports.iter().filter(|r| r.status_written).count();
    let events: usize = reports.iter().map(|r| r.events).sum();
    assert_eq!(
        (applied, statuses, events),
        (2, 2, 0),
        "children, Progressing then Ready (a real transition), no event: {reports:?}"
    );
    assert_eq!(reports[3].writes(), 0);
}

#[tokio::test]
async fn a_restarted_engine_writes_nothing_at_steady_state() {
    let env = env().await;
    env.create("r1", &[("a", "1")]).await;
    env.converge("r1").await;
    let fresh = new_engine(ToyPipeline::default(), &env.client, &env.clock);
    let before = write_requests(&env.cluster);
    let report = fresh.reconcile(&env.get("r1").await).await;
    assert_eq!(report.writes(), 0, "{report:?}");
    assert_eq!(write_requests(&env.cluster), before);
}

#[tokio::test]
async fn forget_and_sweep_drop_per_object_memory() {
    let env = env().await;
    env.create("m1", &[("a", "1")]).await;
    env.create("m2", &[("a", "1")]).await;
    env.converge("m1").await;
    env.converge("m2").await;
    assert_eq!(env.engine.remembered(), 2);
    env.engine
        .forget(&kinfer_state::Engine::<ToyPipeline>::key_of(
            &env.get("m1").await,
        ));
    assert_eq!(env.engine.remembered(), 1);
    env.clock.advance(Duration::from_hours(2));
    assert_eq!(env.engine.sweep(Duration::from_hours(1)), 1);
    assert_eq!(env.engine.remembered(), 0);
}
