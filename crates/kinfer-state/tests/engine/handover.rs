//! Releasing a field to another controller (`DesiredObject::release`, `handover`): the
//! object is created with the field, the field is handed over without force, the engine's
//! apply then never sends it, a conflicting hand-over never overwrites, and a plan that sets
//! the field again takes it back.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use kinfer_state::handover::{self, handover_manager};
use kinfer_state::{FieldPath, OwnerIndex, Pipeline};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;

use crate::common::*;

const MANAGER: &str = "toy-controller";
const HPA: &str = "kube-controller-manager";

fn owners(d: &Deployment) -> Vec<String> {
    handover::owners(
        &serde_json::to_value(d).unwrap(),
        &FieldPath::parse("spec.replicas"),
    )
}

/// A toy whose Deployment releases `spec.replicas`, reconciled once (created with it).
async fn released(env: &Env) -> Api<Deployment> {
    let mut t = toy("t", NS, &[]);
    t.spec.deployment = true;
    t.spec.release_replicas = true;
    env.create_toy(t).await;
    env.pass("t").await;
    Api::namespaced(env.client.clone(), NS)
}

async fn scale(api: &Api<Deployment>, name: &str, replicas: i32) {
    let mut s = api.get_scale(name).await.unwrap();
    s.spec.get_or_insert_default().replicas = Some(replicas);
    let pp = PostParams {
        field_manager: Some(HPA.into()),
        ..PostParams::default()
    };
    api.replace_scale(name, &pp, &s).await.unwrap();
}

fn patch_counts(env: &Env, code: u16) -> u64 {
    env.cluster
        .counters()
        .snapshot()
        .iter()
        .filter(|((v, r, c), _)| v == "patch" && r == "deployments" && *c == code)
        .map(|(_, n)| *n)
        .sum()
}

#[tokio::test]
async fn a_released_field_is_handed_over_once_and_never_applied_again() {
    let env = env().await;
    let deployments = released(&env).await;

    // Created with the field, owned by the controller.
    let d = deployments.get("t-web").await.unwrap();
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(owners(&d), vec![MANAGER.to_owned()]);

    // Handed over: the temporary manager holds it, the controller let go; then quiet.
    let report = env.pass("t").await;
    assert_eq!(report.applied, 2, "hand-over and apply: {report:?}");
    let d = deployments.get("t-web").await.unwrap();
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(owners(&d), vec![handover_manager(MANAGER)]);
    assert_eq!(env.pass("t").await.writes(), 0);

    // The other controller scales; the engine writes nothing and resets nothing.
    scale(&deployments, "t-web", 4).await;
    env.cluster.counters().reset();
    assert_eq!(env.pass("t").await.writes(), 0);
    assert_eq!(write_requests(&env.cluster), 0);
    let d = deployments.get("t-web").await.unwrap();
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(4));
    assert_eq!(owners(&d), vec![HPA.to_owned()]);

    // Not released any more: a forced apply takes the field back.
    env.patch_spec("t", json!({"releaseReplicas": false})).await;
    env.pass("t").await;
    let d = deployments.get("t-web").await.unwrap();
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(1));
    assert_eq!(owners(&d), vec![MANAGER.to_owned()]);
}

#[tokio::test]
async fn a_hand_over_that_conflicts_reads_again_and_never_overwrites() {
    let env = env().await;
    let deployments = released(&env).await;

    // The engine's read, frozen now (it owns replicas = 1 in it) ...
    let index = OwnerIndex::new();
    let pipeline = ToyPipeline::default();
    for kind in pipeline.child_kinds() {
        let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), NS, &kind.resource);
        for o in api.list(&ListParams::default()).await.unwrap() {
            index.apply(&kind, &o);
        }
        index.mark_synced(&kind);
    }
    let stale = new_engine(pipeline, &env.client, &env.clock).with_child_store(Arc::new(index));
    // ... another controller scales ...
    scale(&deployments, "t-web", 4).await;
    // ... and the engine applies what it planned from that read.
    env.cluster.counters().reset();
    let report = stale.reconcile(&env.get("t").await).await;
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(
        patch_counts(&env, 409),
        1,
        "the hand-over met the other write"
    );
    let d = deployments.get("t-web").await.unwrap();
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(4));
    assert_eq!(owners(&d), vec![HPA.to_owned()]);
    assert_eq!(env.pass("t").await.writes(), 0);
}
