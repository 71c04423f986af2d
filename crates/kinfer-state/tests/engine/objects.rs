//! Paused, malformed and deleted objects; finalizers.

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::DeserializeGuard;
use kube::runtime::controller::Action;
use serde_json::json;

use kinfer_state::engine::CLEANUP_FORBIDDEN;

use crate::common::*;

/// Sets or removes the paused annotation of a toy.
async fn set_paused(env: &Env, name: &str, paused: bool) {
    let value = if paused { json!("true") } else { json!(null) };
    let patch = json!({"metadata": {"annotations": {"example.com/reconciliation-paused": value}}});
    env.toys
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("pause");
}

#[tokio::test]
async fn paused_objects_are_not_touched() {
    let env = env().await;
    env.create("t7", &[("a", "1")]).await;
    set_paused(&env, "t7", true).await;
    let toy = env.get("t7").await;
    let before: u64 = env.cluster.counters().snapshot().values().sum();
    let r = env.engine.reconcile(&toy).await;
    assert!(r.skipped);
    assert_eq!(
        env.cluster.counters().snapshot().values().sum::<u64>(),
        before,
        "no request at all"
    );
    assert!(env.cms.get_opt("t7-a").await.expect("get").is_none());
}

/// Pausing stops reconciles, not deletion: a paused object being deleted runs its finalizer's
/// cleanup and loses the finalizer, so the API server can remove it.
#[tokio::test]
async fn a_paused_object_can_still_be_deleted() {
    let pipeline = finalizing(false);
    let finalized = pipeline.finalized.clone();
    let env = env_with(pipeline).await;
    env.create("tp", &[("a", "1")]).await;
    env.converge("tp").await;
    set_paused(&env, "tp", true).await;
    env.toys
        .delete("tp", &DeleteParams::default())
        .await
        .expect("delete");
    let deleting = env.get("tp").await;
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let r = env.engine.reconcile(&deleting).await;
    assert!(!r.skipped, "{r:?}");
    assert_eq!(r.applied, 0, "nothing is applied while deleting: {r:?}");
    assert_eq!(finalized.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        env.toys.get_opt("tp").await.expect("get").is_none(),
        "the finalizer was removed and the object went"
    );
}

/// The `_sum` of the queue-wait histogram, in seconds.
fn queue_wait_sum(env: &Env) -> f64 {
    env.engine
        .metrics()
        .encode()
        .lines()
        .filter(|l| l.starts_with("kinfer_reconcile_queue_wait_seconds_sum"))
        .filter_map(|l| l.rsplit(' ').next())
        .filter_map(|n| n.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn a_pause_does_not_count_as_queue_wait() {
    let env = env().await;
    env.create("t8", &[("a", "1")]).await;
    set_paused(&env, "t8", true).await;
    let paused = env.get("t8").await;
    env.engine.triggers().object(&paused.metadata);
    assert!(env.engine.reconcile(&paused).await.skipped);

    // An hour later it is unpaused; the trigger before the pause's skip is not waited on.
    env.clock.advance(std::time::Duration::from_hours(1));
    set_paused(&env, "t8", false).await;
    let toy = env.get("t8").await;
    env.engine.triggers().object(&toy.metadata);
    assert!(!env.engine.reconcile(&toy).await.skipped);
    let waited = queue_wait_sum(&env);
    assert!(waited < 1.0, "queue wait {waited} s spans the pause");
}

#[tokio::test]
async fn a_malformed_object_is_reported_once_and_does_not_stop_the_controller() {
    let env = env().await;
    let raw: Api<kube::core::DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        NS,
        &kube::core::ApiResource::erase::<Toy>(&()),
    );
    let bad: kube::core::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Toy",
        "metadata": {"name": "bad"},
        "spec": {"children": "not-a-map"}
    }))
    .expect("dynamic");
    raw.create(&PostParams::default(), &bad)
        .await
        .expect("create bad");
    env.create("good", &[("a", "1")]).await;

    let guarded: Api<DeserializeGuard<Toy>> = Api::namespaced(env.client.clone(), NS);
    let list = guarded
        .list(&kube::api::ListParams::default())
        .await
        .expect("list");
    assert_eq!(
        list.items.len(),
        2,
        "one bad object does not break the list"
    );
    let mut events = 0;
    for _ in 0..2 {
        for obj in &list.items {
            let r = env.engine.reconcile_guarded(obj).await;
            if obj.0.is_err() {
                assert!(r.skipped);
                events += r.events;
            }
        }
    }
    assert_eq!(events, 1, "the same error is reported once");
    assert!(
        env.cms.get_opt("good-a").await.expect("get").is_some(),
        "the good object was reconciled"
    );
}

fn finalizing(fail: bool) -> ToyPipeline {
    ToyPipeline {
        finalizer: Some("example.com/cleanup".into()),
        fail_finalize: fail,
        ..ToyPipeline::default()
    }
}

#[tokio::test]
async fn a_deleted_object_is_finalized_not_reconciled() {
    let pipeline = finalizing(false);
    let finalized = pipeline.finalized.clone();
    let env = env_with(pipeline).await;
    env.create("del", &[("a", "1")]).await;
    let r = env.pass("del").await;
    assert_eq!(
        r.finalizers_written, 1,
        "the finalizer is added first: {r:?}"
    );
    env.converge("del").await;
    assert_eq!(
        env.get("del").await.metadata.finalizers.unwrap_or_default(),
        ["example.com/cleanup"]
    );

    env.toys
        .delete("del", &DeleteParams::default())
        .await
        .expect("delete");
    let deleting = env.get("del").await;
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let r = env.engine.reconcile(&deleting).await;
    assert_eq!(
        (r.applied, r.status_written, r.finalizers_written),
        (0, false, 1),
        "{r:?}"
    );
    assert!(r.progressed, "a released finalizer is progress: {r:?}");
    assert_eq!(finalized.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        env.toys.get_opt("del").await.expect("get").is_none(),
        "gone"
    );
}

#[tokio::test]
async fn a_terminating_namespace_is_never_blocked() {
    let pipeline = finalizing(true);
    let finalized = pipeline.finalized.clone();
    let env = env_with(pipeline).await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client.clone());
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "doomed"}})).expect("ns");
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    env.create_toy(toy("t", "doomed", &[("a", "1")])).await;
    let toys: Api<Toy> = Api::namespaced(env.client.clone(), "doomed");
    let r = env
        .engine
        .reconcile(&toys.get("t").await.expect("toy"))
        .await;
    assert_eq!(r.finalizers_written, 1, "{r:?}");

    // While the namespace lives, a failing cleanup keeps the finalizer (and retries).
    toys.delete("t", &DeleteParams::default())
        .await
        .expect("delete");
    let r = env
        .engine
        .reconcile(&toys.get("t").await.expect("toy"))
        .await;
    assert_eq!(r.finalizers_written, 0, "{r:?}");
    assert!(!r.progressed, "a failed cleanup is not progress: {r:?}");
    assert!(matches!(r.action, Action { .. }));
    assert_eq!(finalized.load(std::sync::atomic::Ordering::SeqCst), 1);

    // The namespace goes away: the finalizer is removed without cleanup.
    namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .expect("delete namespace");
    let r = env
        .engine
        .reconcile(&toys.get("t").await.expect("toy"))
        .await;
    assert_eq!(r.finalizers_written, 1, "{r:?}");
    assert_eq!(
        finalized.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "no cleanup attempted"
    );
    assert!(toys.get_opt("t").await.expect("get").is_none());
}

/// The Warning events about `name` with `reason`.
async fn warnings(env: &Env, name: &str, reason: &str) -> usize {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(env.client.clone(), NS);
    events
        .list(&kube::api::ListParams::default())
        .await
        .expect("events")
        .items
        .iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.reason.as_deref() == Some(reason)
                && e.type_.as_deref() == Some("Warning")
        })
        .count()
}

#[tokio::test]
async fn a_forbidden_cleanup_keeps_the_finalizer_and_says_why() {
    let pipeline = finalizing(false);
    let forbid = pipeline.forbid_finalize.clone();
    let env = env_with(pipeline).await;
    env.create("fc", &[("a", "1")]).await;
    env.converge("fc").await;
    assert_eq!(cond(&env.get("fc").await, "Ready").status, "True");
    forbid.store(true, std::sync::atomic::Ordering::SeqCst);
    env.toys
        .delete("fc", &DeleteParams::default())
        .await
        .expect("delete");

    let r = env.engine.reconcile(&env.get("fc").await).await;
    assert_eq!(r.finalizers_written, 0, "{r:?}");
    let e = r
        .errors
        .iter()
        .find(|e| e.reason.as_str() == CLEANUP_FORBIDDEN)
        .unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(
        e.category,
        kinfer_state::category::ErrorCategory::Infrastructure,
        "the controller's RBAC: retried, not a wait for an edit"
    );
    assert_ne!(r.action, Action::await_change(), "{r:?}");
    let deleting = env.get("fc").await;
    assert_eq!(
        deleting.metadata.finalizers.clone().unwrap_or_default(),
        ["example.com/cleanup"],
        "the finalizer stays"
    );
    let ready = cond(&deleting, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", CLEANUP_FORBIDDEN)
    );
    assert!(ready.message.contains("is forbidden"), "{}", ready.message);
    assert_eq!(
        deleting.status.as_ref().and_then(|s| s.status.as_deref()),
        Some("Ready"),
        "the rest of the status is left as it was"
    );
    assert_eq!(warnings(&env, "fc", CLEANUP_FORBIDDEN).await, 1);

    // Still refused: nothing new is written, no second event.
    let r = env.engine.reconcile(&deleting).await;
    assert_eq!((r.status_written, r.events), (false, 0), "{r:?}");
    assert_eq!(warnings(&env, "fc", CLEANUP_FORBIDDEN).await, 1);

    // The operator is granted what it needs: the cleanup runs and the object goes.
    forbid.store(false, std::sync::atomic::Ordering::SeqCst);
    let r = env.engine.reconcile(&env.get("fc").await).await;
    assert_eq!(r.finalizers_written, 1, "{r:?}");
    assert!(env.toys.get_opt("fc").await.expect("get").is_none());
}

#[tokio::test]
async fn a_forbidden_release_keeps_the_finalizer() {
    let pipeline = ToyPipeline {
        finalizer_label: Some("needs-cleanup".into()),
        ..finalizing(false)
    };
    let forbid = pipeline.forbid_finalize.clone();
    let env = env_with(pipeline).await;
    let mut t = toy("fr", NS, &[("a", "1")]);
    t.metadata.labels = Some([("needs-cleanup".to_owned(), "yes".to_owned())].into());
    env.create_toy(t).await;
    env.converge("fr").await;
    forbid.store(true, std::sync::atomic::Ordering::SeqCst);
    let unlabel = json!({"metadata": {"labels": {"needs-cleanup": null}}});
    env.toys
        .patch("fr", &PatchParams::default(), &Patch::Merge(&unlabel))
        .await
        .expect("unlabel");
    let r = env.pass("fr").await;
    assert_eq!(r.finalizers_written, 0, "{r:?}");
    assert!(
        r.errors
            .iter()
            .any(|e| e.reason.as_str() == CLEANUP_FORBIDDEN),
        "{r:?}"
    );
    assert_eq!(
        env.get("fr").await.metadata.finalizers.unwrap_or_default(),
        ["example.com/cleanup"]
    );
}

#[tokio::test]
async fn a_per_object_finalizer_is_added_while_needed_and_released_after() {
    let pipeline = ToyPipeline {
        finalizer_label: Some("needs-cleanup".into()),
        ..finalizing(true)
    };
    let finalized = pipeline.finalized.clone();
    let env = env_with(pipeline).await;
    env.create("pof", &[("a", "1")]).await;
    let r = env.pass("pof").await;
    assert_eq!(r.finalizers_written, 0, "not needed: {r:?}");
    assert!(env.get("pof").await.metadata.finalizers.is_none());

    let label = |on: bool| json!({"metadata": {"labels": {"needs-cleanup": if on { Some("yes") } else { None }}}});
    env.toys
        .patch("pof", &PatchParams::default(), &Patch::Merge(&label(true)))
        .await
        .expect("label");
    let r = env.pass("pof").await;
    assert_eq!(r.finalizers_written, 1, "{r:?}");
    assert_eq!(
        env.get("pof").await.metadata.finalizers.unwrap_or_default(),
        ["example.com/cleanup"]
    );

    // No longer needed: cleanup runs; while it fails the finalizer stays and the engine backs
    // off (its backoff, not a fixed retry).
    env.toys
        .patch("pof", &PatchParams::default(), &Patch::Merge(&label(false)))
        .await
        .expect("unlabel");
    let r = env.pass("pof").await;
    assert_eq!(r.finalizers_written, 0, "{r:?}");
    assert_eq!(finalized.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(r.errors.iter().any(|e| e.message == "cleanup backend down"));
    assert_ne!(r.action, Action::await_change());
    assert_eq!(
        env.get("pof").await.metadata.finalizers.unwrap_or_default(),
        ["example.com/cleanup"]
    );
}

#[tokio::test]
async fn a_finalizer_no_longer_needed_is_released_after_cleanup() {
    let pipeline = ToyPipeline {
        finalizer_label: Some("needs-cleanup".into()),
        ..finalizing(false)
    };
    let finalized = pipeline.finalized.clone();
    let env = env_with(pipeline).await;
    let mut t = toy("rel", NS, &[("a", "1")]);
    t.metadata.labels = Some([("needs-cleanup".to_owned(), "yes".to_owned())].into());
    env.create_toy(t).await;
    assert_eq!(env.pass("rel").await.finalizers_written, 1);
    env.toys
        .patch(
            "rel",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"needs-cleanup": null}}})),
        )
        .await
        .expect("unlabel");
    let r = env.pass("rel").await;
    assert_eq!(r.finalizers_written, 1, "{r:?}");
    assert_eq!(finalized.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        env.get("rel")
            .await
            .metadata
            .finalizers
            .unwrap_or_default()
            .is_empty()
    );
}
