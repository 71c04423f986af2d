//! Children from the controller's watches (kinfer-state's `OwnerIndex` fed by
//! `child_watch`): a reconcile that changes nothing sends no request for its children and no
//! write; the cache keeps only this operator's apply entries of `managedFields`; and the real
//! controller, reading that cache, still repairs drift of a child and recreates a deleted one.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kinfer_api::zerfoo::ZerfooInferenceService;
use kinfer_state::child_watch::child_watch;
use kinfer_state::labels::MANAGED_BY;
use kinfer_state::{ChildKind, ChildStore, OwnerIndex, Pipeline};
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::watcher;
use zerfoo_operator::reconciler::MANAGER;

use crate::common::{Env, NS, WAIT, container, env, full_spec, wait_for};

const CHILD_RESOURCES: [&str; 4] = [
    "deployments",
    "services",
    "horizontalpodautoscalers",
    "httproutes",
];

/// Runs the watches the controller runs for each child kind, feeding the engine's index, and
/// waits (bounded) until every kind has been listed.
async fn watch_children(env: &Env, owner: &ZerfooInferenceService) -> Arc<OwnerIndex> {
    let index = Arc::clone(env.engine.owner_index().expect("the engine has an index"));
    let kinds: Vec<ChildKind> = env.engine.pipeline().child_kinds();
    for kind in &kinds {
        let config = watcher::Config::default().labels(&format!("{MANAGED_BY}={MANAGER}"));
        let events = child_watch(
            &env.client,
            kind,
            Some(NS),
            config,
            Arc::clone(&index),
            MANAGER,
        );
        tokio::spawn(events.for_each(|_| async {}));
    }
    let uid = owner.uid().unwrap();
    kinfer_testkit::wait::holds("every child kind listed", WAIT, || {
        kinds
            .iter()
            .all(|k| index.owned_by(k, Some(NS), &uid).is_some())
    })
    .await;
    index
}

#[tokio::test]
async fn a_no_op_reconcile_sends_no_request_for_children_and_no_write() {
    let env = env().await;
    env.create("my-llama", full_spec()).await.unwrap();
    env.converge("my-llama").await;
    let zis = env.get("my-llama").await;
    let index = watch_children(&env, &zis).await;

    env.cluster.counters().reset();
    let report = env.engine.reconcile(&zis).await;
    assert_eq!(report.writes(), 0, "{report:?}");
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(env.cluster.counters().writes(), 0);
    let requests = env.cluster.counters().snapshot();
    let child_requests: Vec<_> = requests
        .iter()
        .filter(|((verb, resource, _), _)| {
            verb != "watch" && CHILD_RESOURCES.contains(&resource.as_str())
        })
        .collect();
    assert!(child_requests.is_empty(), "{child_requests:?}");

    // The cached children hold only this operator's apply entries of managedFields.
    let deployments = index
        .owned_by(
            &ChildKind::of::<Deployment>(),
            Some(NS),
            &zis.uid().unwrap(),
        )
        .unwrap();
    assert_eq!(deployments.len(), 2);
    for d in &deployments {
        for e in d.metadata.managed_fields.iter().flatten() {
            assert_eq!(e.manager.as_deref(), Some(MANAGER), "{e:?}");
            assert_eq!(e.operation.as_deref(), Some("Apply"), "{e:?}");
        }
    }
    let live = env.deployment("my-llama-primary").await;
    assert!(
        live.metadata.managed_fields.iter().flatten().count() > 1,
        "the live object has others' entries (simulator status, hand-over)"
    );
}

#[tokio::test]
async fn the_controller_reading_its_cache_repairs_drift_and_recreates_children() {
    let mut env = env().await;
    env.start_controller();
    env.create("my-llama", full_spec()).await.unwrap();
    env.wait_ready("my-llama").await;

    // Someone edits the primary's model: the watch event reconciles the owner, which reads
    // the edit from the cache and puts the model back.
    let pp = PatchParams {
        field_manager: Some("someone".into()),
        ..PatchParams::default()
    };
    let d = env.deployment("my-llama-primary").await;
    let mut args = container(&d).args.clone().unwrap();
    args[2] = "other-model".into();
    env.deployments
        .patch(
            "my-llama-primary",
            &pp,
            &Patch::Strategic(serde_json::json!({
                "spec": {"template": {"spec": {"containers": [{"name": "zerfoo", "args": args}]}}}
            })),
        )
        .await
        .unwrap();
    wait_for(
        &env.deployments,
        "my-llama-primary",
        |d: Option<&Deployment>| {
            d.is_some_and(|d| container(d).args.as_deref().unwrap()[2] == "llama3-8b-q4")
        },
    )
    .await;

    // A deleted child comes back.
    let old = env.svcs.get("my-llama-svc").await.unwrap().uid();
    env.svcs
        .delete("my-llama-svc", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&env.svcs, "my-llama-svc", move |s: Option<&Service>| {
        s.is_some_and(|s| s.uid() != old)
    })
    .await;
}
