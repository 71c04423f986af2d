//! Copies a finalizer patch outdated (no 409s in a clean run): the cache still
//! serves the copy our own finalizer patch replaced, or one such a patch found outdated.

use std::time::Duration;

use futures::StreamExt;
use kinfer_state::engine::STALE_COPY_WAIT;
use kinfer_testkit::TestCluster;
use kube::api::{DeleteParams, Patch, PatchParams, WatchEvent, WatchParams};
use kube::runtime::controller::Action;
use serde_json::json;

use crate::common::*;

const FINALIZER: &str = "example.com/cleanup";

fn finalizing() -> ToyPipeline {
    ToyPipeline {
        finalizer: Some(FINALIZER.into()),
        ..ToyPipeline::default()
    }
}

/// 409 answers the server gave so far.
fn conflicts(cluster: &TestCluster) -> u64 {
    cluster.counters().answered(409)
}

fn finalizers(toy: &Toy) -> Vec<String> {
    toy.metadata.finalizers.clone().unwrap_or_default()
}

#[tokio::test]
async fn the_copy_our_finalizer_patch_replaced_is_not_patched_again() {
    let env = env_with(finalizing()).await;
    env.create("race", &[("a", "1")]).await;
    let before_patch = env.get("race").await;
    let r = env.engine.reconcile(&before_patch).await;
    assert_eq!((r.finalizers_written, r.applied), (1, 1), "{r:?}");
    assert!(r.status_written, "{r:?}");

    // A child's watch event reconciles before the object's own watch delivered the patch.
    let (writes, gets) = (
        write_requests(&env.cluster),
        env.cluster.counters().count("get", None),
    );
    let r = env.engine.reconcile(&before_patch).await;
    assert!(r.stale && r.skipped, "{r:?}");
    assert_eq!(r.writes(), 0, "{r:?}");
    assert!(r.errors.is_empty(), "not a failure: {r:?}");
    assert_eq!(
        r.action,
        Action::requeue(STALE_COPY_WAIT),
        "requeued for the watch"
    );
    assert_eq!(write_requests(&env.cluster), writes, "no request written");
    assert_eq!(
        env.cluster.counters().count("get", None),
        gets,
        "nothing read"
    );
    assert_eq!(conflicts(&env.cluster), 0);

    // The fresh copy arrives: reconciled as usual (the status goes on from Progressing to
    // Ready now that the child is observed), without a finalizer patch; then nothing more.
    let fresh = env.get("race").await;
    assert_eq!(finalizers(&fresh), [FINALIZER]);
    let r = env.engine.reconcile(&fresh).await;
    assert!(!r.stale, "{r:?}");
    assert_eq!((r.finalizers_written, r.applied), (0, 0), "{r:?}");
    assert_eq!(env.converge("race").await, 1);
    assert_eq!(conflicts(&env.cluster), 0);
    assert_eq!(finalizers(&env.get("race").await), [FINALIZER]);
}

#[tokio::test]
async fn the_copy_our_finalizer_patch_produced_does_not_rewrite_the_status() {
    let env = env_with(ToyPipeline {
        finalizer_label: Some("needs-cleanup".into()),
        ..finalizing()
    })
    .await;
    env.create("mid", &[("a", "1")]).await;
    env.converge("mid").await;
    // One edit asks for the finalizer and changes the spec: the reconcile adds the finalizer,
    // applies the child and writes the new observedGeneration.
    env.toys
        .patch(
            "mid",
            &PatchParams::default(),
            &Patch::Merge(&json!({
                "metadata": {"labels": {"needs-cleanup": "yes"}},
                "spec": {"children": {"a": "2"}}
            })),
        )
        .await
        .expect("edit");
    let before_patch = env.get("mid").await;
    let version = before_patch
        .metadata
        .resource_version
        .clone()
        .expect("version");
    let mut watch = env
        .toys
        .watch(
            &WatchParams::default().fields("metadata.name=mid"),
            &version,
        )
        .await
        .expect("watch")
        .boxed();
    let r = env.engine.reconcile(&before_patch).await;
    assert_eq!((r.finalizers_written, r.applied), (1, 1), "{r:?}");
    assert!(r.status_written, "{r:?}");

    // What the watch delivers first: the patched copy, with our finalizer and the status from
    // before the edit (the status write came after the patch).
    let patched = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match watch.next().await {
                Some(Ok(WatchEvent::Modified(toy))) => break toy,
                Some(_) => {}
                None => panic!("watch ended"),
            }
        }
    })
    .await
    .expect("the patch's watch event");
    assert_eq!(finalizers(&patched), [FINALIZER]);
    let observed = patched.status.as_ref().and_then(|s| s.observed_generation);
    assert_ne!(observed, patched.metadata.generation, "{patched:?}");

    let writes = write_requests(&env.cluster);
    let r = env.engine.reconcile(&patched).await;
    assert!(!r.stale, "{r:?}");
    assert_eq!(r.writes(), 0, "the status written already covers it: {r:?}");
    assert_eq!(write_requests(&env.cluster), writes);
}

#[tokio::test]
async fn an_outdated_copy_the_watch_never_replaces_is_read_after_the_wait() {
    let env = env_with(finalizing()).await;
    env.create("slow", &[("a", "1")]).await;
    let before_patch = env.get("slow").await;
    env.engine.reconcile(&before_patch).await;
    assert!(env.engine.reconcile(&before_patch).await.stale);

    env.clock.advance(STALE_COPY_WAIT);
    let (writes, gets) = (
        write_requests(&env.cluster),
        env.cluster.counters().count("get", None),
    );
    let r = env.engine.reconcile(&before_patch).await;
    assert!(
        !r.stale && !r.skipped,
        "reconciled the server's copy: {r:?}"
    );
    assert_eq!((r.finalizers_written, r.applied), (0, 0), "{r:?}");
    assert_eq!(
        r.status,
        Some(kinfer_state::OverallStatus::Ready),
        "the server's copy"
    );
    assert_eq!(
        env.cluster.counters().count("get", None),
        gets + 1,
        "one read"
    );
    assert_eq!(
        write_requests(&env.cluster),
        writes + u64::from(r.status_written),
        "no finalizer patch"
    );
    assert_eq!(conflicts(&env.cluster), 0);
    assert_eq!(env.converge("slow").await, 1);
}

/// Creates toy `name` and returns its copy from before someone else's edit (a label): what a
/// cache that has not seen the edit yet serves.
async fn edited_behind_the_cache(env: &Env, name: &str) -> Toy {
    env.create(name, &[("a", "1")]).await;
    let cached = env.get(name).await;
    env.toys
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"team": "x"}}})),
        )
        .await
        .expect("label");
    cached
}

#[tokio::test]
async fn a_finalizer_patch_refused_with_409_is_an_outdated_copy_not_a_failure() {
    let env = env_with(finalizing()).await;
    let cached = edited_behind_the_cache(&env, "edited").await;

    let r = env.engine.reconcile(&cached).await;
    assert_eq!(
        conflicts(&env.cluster),
        1,
        "the patch from the cached copy is refused"
    );
    assert!(r.stale, "{r:?}");
    assert!(r.errors.is_empty(), "no failure counted: {r:?}");
    assert_eq!(r.action, Action::requeue(STALE_COPY_WAIT));
    assert_eq!(
        (r.applied, r.status_written),
        (0, false),
        "nothing planned: {r:?}"
    );
    assert!(env.cms.get_opt("edited-a").await.expect("get").is_none());

    // The same copy again sends nothing; the fresh one converges.
    let writes = write_requests(&env.cluster);
    assert!(env.engine.reconcile(&cached).await.stale);
    assert_eq!(write_requests(&env.cluster), writes);
    env.converge("edited").await;
    assert_eq!(finalizers(&env.get("edited").await), [FINALIZER]);
    assert!(env.cms.get_opt("edited-a").await.expect("get").is_some());
    assert_eq!(conflicts(&env.cluster), 1);
}

#[tokio::test]
async fn a_409_on_a_copy_just_read_is_a_failure_with_backoff() {
    let env = env_with(finalizing()).await;
    let cached = edited_behind_the_cache(&env, "contended").await;
    assert!(env.engine.reconcile(&cached).await.stale);
    // The watch never delivers; after the wait the engine reads the object, and its patch from
    // that copy is refused too (a writer that keeps changing the object).
    env.cluster.faults().inject(
        kinfer_testkit::Fault::status("patch", "toys", 409)
            .named("contended")
            .times(1),
    );
    env.clock.advance(STALE_COPY_WAIT);
    let r = env.engine.reconcile(&cached).await;
    assert!(!r.stale, "{r:?}");
    assert!(
        r.errors
            .iter()
            .any(|e| e.category == kinfer_state::ErrorCategory::Infrastructure),
        "{r:?}"
    );
    assert_ne!(
        r.action,
        Action::requeue(STALE_COPY_WAIT),
        "backoff decides"
    );
    assert_eq!(r.applied, 0, "nothing applied without the finalizer: {r:?}");
}

#[tokio::test]
async fn a_deleted_objects_copy_our_finalizer_removal_replaced_is_not_finalized_again() {
    let pipeline = finalizing();
    let finalized = pipeline.finalized.clone();
    let env = env_with(pipeline).await;
    env.create("gone", &[("a", "1")]).await;
    // Another finalizer keeps the object after ours is removed.
    env.toys
        .patch(
            "gone",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"finalizers": ["example.com/other"]}})),
        )
        .await
        .expect("other finalizer");
    env.converge("gone").await;
    env.toys
        .delete("gone", &DeleteParams::default())
        .await
        .expect("delete");
    let deleting = env.get("gone").await;
    let r = env.engine.reconcile(&deleting).await;
    assert_eq!(r.finalizers_written, 1, "{r:?}");
    let writes = write_requests(&env.cluster);
    let r = env.engine.reconcile(&deleting).await;
    assert!(r.stale, "{r:?}");
    assert_eq!(write_requests(&env.cluster), writes);
    assert_eq!(conflicts(&env.cluster), 0);
    assert_eq!(finalized.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(finalizers(&env.get("gone").await), ["example.com/other"]);
}
