use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::{reflector, watcher};
use serde_json::json;

use crate::common::{TIMEOUT, Widget, WidgetSpec, cluster, local_cluster, wait_until};

#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}

impl std::error::Error for Never {}

async fn reconcile(w: Arc<Widget>, client: Arc<kube::Client>) -> Result<Action, Never> {
    let ns = w.namespace().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced((*client).clone(), &ns);
    let name = format!("{}-child", w.name_any());
    let owner = w.controller_owner_ref(&()).unwrap();
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": name, "ownerReferences": [owner] },
        "data": { "size": w.spec.size.to_string() }
    });
    let applied = cms
        .patch(
            &name,
            &PatchParams::apply("widget-controller"),
            &Patch::Apply(cm),
        )
        .await
        .unwrap();
    let seen = applied
        .data
        .unwrap_or_default()
        .get("external")
        .cloned()
        .unwrap_or_else(|| "none".into());
    let widgets: Api<Widget> = Api::namespaced((*client).clone(), &ns);
    let status = json!({ "apiVersion": "test.kinfer.dev/v1", "kind": "Widget", "metadata": { "name": w.name_any() },
                         "status": { "phase": seen, "observedGeneration": w.metadata.generation } });
    widgets
        .patch_status(
            &w.name_any(),
            &PatchParams::apply("widget-controller").force(),
            &Patch::Apply(status),
        )
        .await
        .unwrap();
    Ok(Action::await_change())
}

fn error_policy(_w: Arc<Widget>, _e: &Never, _c: Arc<kube::Client>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

#[tokio::test]
async fn controller_with_owns_reconciles_and_sees_child_changes_then_stops() {
    let (_c, client) = cluster().await;
    let widgets: Api<Widget> = Api::default_namespaced(client.clone());
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let ctrl = Controller::new(widgets.clone(), watcher::Config::default())
        .owns(cms.clone(), watcher::Config::default())
        .graceful_shutdown_on(async move {
            let _ = stop_rx.await;
        })
        .run(reconcile, error_policy, Arc::new(client.clone()))
        .for_each(|_| async {});
    let handle = tokio::spawn(ctrl);
    let w = Widget::new(
        "w",
        WidgetSpec {
            size: 3,
            color: None,
        },
    );
    widgets.create(&PostParams::default(), &w).await.unwrap();
    let child = wait_until(&cms, "w-child", |c: &ConfigMap| {
        c.data.as_ref().is_some_and(|d| d["size"] == "3")
    })
    .await;
    assert_eq!(child.owner_references()[0].name, "w");
    wait_until(&widgets, "w", |w: &Widget| {
        w.status
            .as_ref()
            .is_some_and(|s| s.phase.as_deref() == Some("none"))
    })
    .await;
    cms.patch("w-child", &PatchParams::apply("someone-else"), &Patch::Apply(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w-child"}, "data": {"external": "touched"}
    }))).await.unwrap();
    wait_until(&widgets, "w", |w: &Widget| {
        w.status
            .as_ref()
            .is_some_and(|s| s.phase.as_deref() == Some("touched"))
    })
    .await;
    stop_tx.send(()).unwrap();
    tokio::time::timeout(TIMEOUT, handle)
        .await
        .expect("controller did not stop")
        .unwrap();
}

#[tokio::test]
async fn reflector_survives_a_forced_410() {
    let Some((c, client)) = local_cluster("injects faults and reads counters").await else {
        return;
    };
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mk = |n: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": n}})).unwrap()
    };
    cms.create(&PostParams::default(), &mk("a")).await.unwrap();
    let (reader, writer) = reflector::store::<ConfigMap>();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<&'static str>();
    let consumer = tokio::spawn(
        reflector(writer, watcher(cms.clone(), watcher::Config::default())).for_each(move |ev| {
            let tag = match ev {
                Ok(watcher::Event::InitDone) => "done",
                Ok(_) => "event",
                Err(_) => "error",
            };
            let _ = tx.send(tag);
            async {}
        }),
    );
    let has = |n: &str| reader.state().iter().any(|o| o.name_any() == n);
    tokio::time::timeout(TIMEOUT, async { while rx.recv().await != Some("done") {} })
        .await
        .expect("initial list");
    assert!(has("a"));
    let lists_before = c.counters().count("list", Some("configmaps"));
    c.faults().expire_history();
    c.faults().cut_watches();
    cms.create(&PostParams::default(), &mk("b")).await.unwrap();
    tokio::time::timeout(TIMEOUT, async {
        let mut relisted = false;
        while !(relisted && has("b")) {
            relisted |= rx.recv().await == Some("done");
        }
    })
    .await
    .expect("reflector recovered");
    consumer.abort();
    assert!(
        c.counters().count("list", Some("configmaps")) > lists_before,
        "a relist happened"
    );
    assert!(has("a"));
}

#[tokio::test]
async fn streaming_list_watcher_gets_initial_events_then_changes() {
    let (_c, client) = cluster().await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mk = |n: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": n, "labels": {"test": "stream"}}}))
            .unwrap()
    };
    cms.create(&PostParams::default(), &mk("a")).await.unwrap();
    // Only the test's own ConfigMaps (a real namespace also holds `common::ROOT_CA`).
    let cfg = watcher::Config::default()
        .labels("test=stream")
        .streaming_lists();
    let mut events = watcher(cms.clone(), cfg).boxed();
    let mut seen_done = false;
    tokio::time::timeout(TIMEOUT, async {
        while let Some(ev) = events.next().await {
            match ev.unwrap() {
                watcher::Event::InitApply(o) => assert_eq!(o.name_any(), "a"),
                watcher::Event::InitDone => {
                    seen_done = true;
                    cms.create(&PostParams::default(), &mk("b")).await.unwrap();
                }
                watcher::Event::Apply(o) if seen_done && o.name_any() == "b" => break,
                _ => {}
            }
        }
    })
    .await
    .expect("streaming list");
}
