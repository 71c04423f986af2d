use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kinfer_testkit::{Options, TestCluster};
use kube::api::{Patch, PatchParams, WatchEvent, WatchParams};
use kube::core::DynamicObject;
use serde_json::json;

use crate::common::{TIMEOUT, cluster, create_widget, local_cluster, rv, widget_crd, widgets};

async fn next(
    s: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<DynamicObject>>> + Unpin),
) -> WatchEvent<DynamicObject> {
    tokio::time::timeout(TIMEOUT, s.try_next())
        .await
        .expect("timed out")
        .expect("watch error")
        .expect("stream ended")
}

fn name(o: &DynamicObject) -> &str {
    o.metadata.name.as_deref().unwrap()
}

#[tokio::test]
async fn watch_from_resource_version_replays_later_events() {
    let (_c, client) = cluster().await;
    let a = create_widget(&client, "a", json!({"size": 1})).await;
    let api = widgets(&client);
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 2}})),
    )
    .await
    .unwrap();
    create_widget(&client, "b", json!({"size": 1})).await;
    let mut s = api
        .watch(&WatchParams::default(), &rv(&a).to_string())
        .await
        .unwrap()
        .boxed();
    match next(&mut s).await {
        WatchEvent::Modified(o) => {
            assert_eq!((name(&o), o.data["spec"]["size"].as_i64()), ("a", Some(2)));
        }
        e => panic!("{e:?}"),
    }
    match next(&mut s).await {
        WatchEvent::Added(o) => assert_eq!(name(&o), "b"),
        e => panic!("{e:?}"),
    }
    api.delete("a", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    match next(&mut s).await {
        WatchEvent::Deleted(o) => assert_eq!(name(&o), "a"),
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn watch_from_zero_starts_with_current_objects() {
    let (_c, client) = cluster().await;
    create_widget(&client, "a", json!({"size": 1})).await;
    let mut s = widgets(&client)
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(next(&mut s).await, WatchEvent::Added(o) if name(&o) == "a"));
}

#[tokio::test]
async fn watch_sends_bookmarks_when_allowed() {
    if crate::common::skip_external("starts a cluster with its own options") {
        return;
    }
    let c = TestCluster::start_with(Options {
        bookmark_interval: Duration::from_millis(50),
        ..Options::default()
    })
    .await
    .unwrap();
    c.install_crd_value(widget_crd()).unwrap();
    let client = c.client().unwrap();
    let a = create_widget(&client, "a", json!({"size": 1})).await;
    let mut s = widgets(&client)
        .watch(&WatchParams::default(), &rv(&a).to_string())
        .await
        .unwrap()
        .boxed();
    match next(&mut s).await {
        WatchEvent::Bookmark(b) => {
            assert!(b.metadata.resource_version.parse::<u64>().unwrap() >= rv(&a));
        }
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn watch_older_than_history_is_410_gone() {
    let Some((c, client)) = local_cluster("injects faults or reads the in-process version").await
    else {
        return;
    };
    let a = create_widget(&client, "a", json!({"size": 1})).await;
    create_widget(&client, "b", json!({"size": 1})).await;
    c.faults().expire_history();
    let mut s = widgets(&client)
        .watch(&WatchParams::default(), &rv(&a).to_string())
        .await
        .unwrap()
        .boxed();
    match next(&mut s).await {
        WatchEvent::Error(e) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        e => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn watch_ends_at_timeout_seconds() {
    let (_c, client) = cluster().await;
    let mut s = widgets(&client)
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    // The real server may send a bookmark just before it closes the stream; nothing else comes.
    tokio::time::timeout(TIMEOUT, async {
        while let Some(event) = s.next().await {
            assert!(
                matches!(event, Ok(WatchEvent::Bookmark(_))),
                "only a bookmark may come: {event:?}"
            );
        }
    })
    .await
    .expect("stream did not end");
}

#[tokio::test]
async fn watch_with_label_selector_sees_objects_leave_and_enter() {
    let (_c, client) = cluster().await;
    let a = create_widget(&client, "a", json!({"size": 1})).await;
    let api = widgets(&client);
    let mut s = api
        .watch(
            &WatchParams::default().labels("pick=yes"),
            &rv(&a).to_string(),
        )
        .await
        .unwrap()
        .boxed();
    let label = |v: Option<&str>| Patch::Merge(json!({"metadata": {"labels": {"pick": v}}}));
    api.patch("a", &PatchParams::default(), &label(Some("yes")))
        .await
        .unwrap();
    assert!(matches!(next(&mut s).await, WatchEvent::Added(_)));
    api.patch("a", &PatchParams::default(), &label(None))
        .await
        .unwrap();
    assert!(matches!(next(&mut s).await, WatchEvent::Deleted(_)));
}

#[tokio::test]
async fn cut_watches_end_open_streams() {
    let Some((c, client)) = local_cluster("injects faults or reads the in-process version").await
    else {
        return;
    };
    let mut s = widgets(&client)
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    c.faults().cut_watches();
    let end = tokio::time::timeout(TIMEOUT, s.next())
        .await
        .expect("stream did not end");
    assert!(end.is_none());
}

#[tokio::test]
async fn zero_bookmark_interval_does_not_kill_watches() {
    if crate::common::skip_external("starts a cluster with its own options") {
        return;
    }
    let c = TestCluster::start_with(Options {
        bookmark_interval: Duration::ZERO,
        ..Options::default()
    })
    .await
    .unwrap();
    c.install_crd_value(widget_crd()).unwrap();
    let client = c.client().unwrap();
    let api = widgets(&client);
    let mut s = api
        .watch(&WatchParams::default(), &c.resource_version().to_string())
        .await
        .unwrap()
        .boxed();
    create_widget(&client, "a", json!({"size": 1})).await;
    loop {
        match next(&mut s).await {
            WatchEvent::Added(o) => {
                assert_eq!(name(&o), "a");
                break;
            }
            WatchEvent::Bookmark(_) => {}
            e => panic!("{e:?}"),
        }
    }
}
