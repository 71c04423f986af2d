//! What the engine may write: shared objects, names taken by others, planned deletions,
//! duplicate plans, and which errors block the plan.

use k8s_openapi::api::core::v1::ConfigMap;
use kinfer_state::ErrorCategory;
use kube::api::PostParams;
use kube::core::ObjectMeta;
use serde_json::json;

use crate::common::*;

fn plain_cm(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

#[tokio::test]
async fn a_shared_object_of_two_parents_does_not_flip_flop() {
    let env = env().await;
    for name in ["s1", "s2"] {
        let mut t = toy(name, NS, &[("a", "1")]);
        t.spec.shared = Some("common".into());
        env.create_toy(t).await;
    }
    env.converge("s1").await;
    env.converge("s2").await;
    let before = write_requests(&env.cluster);
    for name in ["s1", "s2", "s1", "s2"] {
        let r = env.pass(name).await;
        assert_eq!(r.writes(), 0, "{name}: {r:?}");
    }
    assert_eq!(
        write_requests(&env.cluster),
        before,
        "zero writes at steady state"
    );
    let shared = env.cms.get("common").await.expect("shared");
    let labels = shared.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("kinfer.dev/managed-by").map(String::as_str),
        Some("toy-controller")
    );
    assert!(
        !labels.contains_key("example.com/toy.name"),
        "no parent label on a shared object: {labels:?}"
    );
    assert!(
        shared
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn an_object_that_is_not_ours_is_not_taken_over() {
    let env = env().await;
    env.cms
        .create(&PostParams::default(), &plain_cm("t9-a", "theirs"))
        .await
        .expect("foreign");
    env.create("t9", &[("a", "1")]).await;
    let r = env.pass("t9").await;
    assert_eq!(r.applied, 0, "{r:?}");
    let e = r
        .errors
        .iter()
        .find(|e| e.reason.as_str() == "NameTaken")
        .expect("NameTaken");
    assert_eq!(e.category, ErrorCategory::InvalidSpec);
    let live = env.cms.get("t9-a").await.expect("kept");
    assert_eq!(
        live.data
            .unwrap_or_default()
            .get("value")
            .map(String::as_str),
        Some("theirs")
    );
    assert_eq!(cond(&env.get("t9").await, "Ready").reason, "NameTaken");
}

fn retire_cm(name: &str, uid: &str) -> kinfer_state::Retire {
    kinfer_state::Retire {
        kind: kinfer_state::ChildKind::of::<ConfigMap>(),
        key: kinfer_state::ObjectKey {
            kind: "ConfigMap".into(),
            group: String::new(),
            namespace: Some(NS.into()),
            name: name.into(),
        },
        uid: uid.into(),
    }
}

/// A retirement deletes exactly the object the pipeline read (by UID), before anything is
/// applied, and the planned object of that name is created anew, ours; a retirement whose
/// precondition fails (the name holds another object now) deletes nothing, and that object is
/// judged as usual: not ours, so not taken over.
#[tokio::test]
async fn a_retired_object_is_deleted_by_uid_first_and_replaced() {
    let pipeline = ToyPipeline::default();
    let retire = pipeline.retire.clone();
    let env = env_with(pipeline).await;
    let theirs = env
        .cms
        .create(&PostParams::default(), &plain_cm("r1-a", "theirs"))
        .await
        .expect("foreign");
    let old_uid = theirs.metadata.uid.clone().expect("uid");
    *retire.lock().unwrap() = vec![retire_cm("r1-a", &old_uid)];
    env.create("r1", &[("a", "1")]).await;
    let r = env.pass("r1").await;
    assert_eq!((r.deleted, r.applied), (1, 1), "{r:?}");
    assert!(
        r.errors.iter().all(|e| e.reason.as_str() != "NameTaken"),
        "{r:?}"
    );
    let ours = env.cms.get("r1-a").await.expect("created anew");
    assert_ne!(ours.metadata.uid.as_deref(), Some(old_uid.as_str()));
    assert_eq!(
        ours.data
            .unwrap_or_default()
            .get("value")
            .map(String::as_str),
        Some("1")
    );

    // The same retirement again: the UID is stale, nothing is deleted, ours stays.
    let r = env.pass("r1").await;
    assert_eq!(r.deleted, 0, "{r:?}");
    assert!(env.cms.get("r1-a").await.is_ok());

    // A stale retirement of a name someone else holds now: refused as taken, not deleted.
    env.cms
        .create(&PostParams::default(), &plain_cm("r2-a", "someone"))
        .await
        .expect("foreign");
    *retire.lock().unwrap() = vec![retire_cm("r2-a", "not-its-uid")];
    env.create("r2", &[("a", "1")]).await;
    let r = env.pass("r2").await;
    assert_eq!(r.deleted, 0, "{r:?}");
    assert!(
        r.errors.iter().any(|e| e.reason.as_str() == "NameTaken"),
        "{r:?}"
    );
    let kept = env.cms.get("r2-a").await.expect("kept");
    assert_eq!(
        kept.data
            .unwrap_or_default()
            .get("value")
            .map(String::as_str),
        Some("someone")
    );
}

#[tokio::test]
async fn planned_deletions_touch_only_our_existing_children() {
    let env = env().await;
    let mut t = toy("d1", NS, &[("a", "1"), ("b", "2")]);
    t.spec.delete = vec!["never-existed".into(), "unlabelled".into()];
    env.create_toy(t).await;
    env.cms
        .create(&PostParams::default(), &plain_cm("unlabelled", "x"))
        .await
        .expect("unlabelled");
    env.converge("d1").await;
    assert!(
        env.cms.get_opt("unlabelled").await.expect("get").is_some(),
        "an object without our labels is not ours to delete"
    );
    let before = write_requests(&env.cluster);
    let r = env.pass("d1").await;
    assert_eq!(r.writes(), 0, "{r:?}");
    assert_eq!(
        write_requests(&env.cluster),
        before,
        "no DELETE of an absent object at steady state"
    );
    // A planned deletion of our child goes through (once).
    env.patch_spec(
        "d1",
        json!({"delete": ["d1-b"], "children": {"a": "1", "b": null}}),
    )
    .await;
    let r = env.pass("d1").await;
    assert_eq!(r.deleted, 1, "{r:?}");
    assert!(env.cms.get_opt("d1-b").await.expect("get").is_none());
}

#[tokio::test]
async fn a_plan_listing_an_object_twice_is_rejected() {
    let env = env().await;
    let mut t = toy("dup", NS, &[("a", "1")]);
    t.spec.duplicate = true;
    env.create_toy(t).await;
    let r = env.pass("dup").await;
    assert_eq!(r.applied, 0, "{r:?}");
    assert!(
        r.errors
            .iter()
            .any(|e| e.category == ErrorCategory::InvalidSpec
                && e.message.contains("more than once")),
        "{r:?}"
    );
}

#[tokio::test]
async fn downstream_errors_do_not_block_the_fix() {
    let env = env().await;
    let mut t = toy("b1", NS, &[("a", "1")]);
    t.spec.broken = vec!["a".into()];
    env.create_toy(t).await;
    let r = env.pass("b1").await;
    assert_eq!(r.applied, 1, "a failing child is still created: {r:?}");
    // The user fixes the spec while the child still reports an Auth error: the fix is applied.
    env.patch_spec("b1", json!({"children": {"a": "fixed"}}))
        .await;
    let r = env.pass("b1").await;
    assert_eq!(r.applied, 1, "{r:?}");
    let a = env.cms.get("b1-a").await.expect("child");
    assert_eq!(
        a.data.unwrap_or_default().get("value").map(String::as_str),
        Some("fixed")
    );
    assert_eq!(cond(&env.get("b1").await, "Ready").status, "False");
}

#[tokio::test]
async fn upstream_errors_block_the_plan() {
    let env = env().await;
    let mut t = toy("u1", NS, &[("a", "1")]);
    t.spec.upstream_missing = true;
    env.create_toy(t).await;
    let r = env.pass("u1").await;
    assert_eq!(r.applied, 0, "{r:?}");
    assert!(env.cms.get_opt("u1-a").await.expect("get").is_none());
    assert_eq!(
        cond(&env.get("u1").await, "Ready").reason,
        "ReferenceNotFound"
    );
}
