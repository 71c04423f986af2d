//! Status: only the fields we write are compared, others' fields and conditions are kept, a
//! stale cache neither re-patches nor re-emits; children diffed against server state.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn fields_and_conditions_written_by_others_cause_no_writes_and_are_kept() {
    let env = env().await;
    env.create("f1", &[("a", "1")]).await;
    env.converge("f1").await;
    let ours = env.get("f1").await.status.unwrap_or_default().conditions;
    let mut conditions = serde_json::to_value(&ours).expect("conditions");
    conditions.as_array_mut().expect("list").push(json!({
        "type": "PolicyAccepted", "status": "True", "reason": "Accepted", "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z"
    }));
    let body = json!({
        "apiVersion": "example.com/v1", "kind": "Toy", "metadata": {"name": "f1"},
        "status": {"foreign": "theirs", "conditions": conditions}
    });
    env.toys
        .patch_status(
            "f1",
            &PatchParams::apply("policy-controller").force(),
            &Patch::Apply(&body),
        )
        .await
        .expect("foreign status");
    let before = write_requests(&env.cluster);
    let r = env.pass("f1").await;
    assert_eq!(r.writes(), 0, "{r:?}");
    assert_eq!(write_requests(&env.cluster), before);
    let status = env.get("f1").await.status.expect("status");
    assert_eq!(status.foreign.as_deref(), Some("theirs"));
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.type_ == "PolicyAccepted")
    );

    // A change of ours keeps their condition.
    env.patch_spec("f1", json!({"children": {"a": "1", "b": "2"}}))
        .await;
    env.converge("f1").await;
    let status = env.get("f1").await.status.expect("status");
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.type_ == "PolicyAccepted"),
        "{:?}",
        status.conditions
    );
    assert!(status.conditions.iter().any(|c| c.type_ == "ChildbReady"));
}

/// A reconcile of the copy our own status write replaced (the watch cache has not caught up)
/// neither patches nor emits again: exercised with a recovery, which emits events.
#[tokio::test]
async fn a_stale_cached_object_is_not_patched_again() {
    let env = env().await;
    env.create("c1", &[("a", "1")]).await;
    env.converge("c1").await;
    // A child fails (Warning), then is fixed.
    env.patch_spec("c1", json!({"broken": ["a"]})).await;
    let failed = env.pass("c1").await;
    assert!(failed.status_written && failed.events > 0, "{failed:?}");
    env.patch_spec("c1", json!({"broken": []})).await;
    let stale = env.get("c1").await; // the error status, the fixed spec
    let first = env.engine.reconcile(&stale).await;
    // The recovery of the conditions that were errors: their Normal events.
    assert!(first.status_written && first.events > 0, "{first:?}");
    // The watch cache has not caught up: the same version comes again.
    let again = env.engine.reconcile(&stale).await;
    assert_eq!(again.writes(), 0, "{again:?}");
    assert_eq!(again.events, 0, "{again:?}");
}

#[tokio::test]
async fn a_deployment_with_quantities_omitempty_fields_and_a_sidecar_converges() {
    let env = env().await;
    let mut t = toy("w1", NS, &[]);
    t.spec.deployment = true;
    env.create_toy(t).await;
    env.converge("w1").await;
    // Another manager (a mesh injector) adds a sidecar container.
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), NS);
    let sidecar = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w1-web"},
        "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "proxy:1"}]}}}
    });
    deployments
        .patch(
            "w1-web",
            &PatchParams::apply("injector"),
            &Patch::Apply(&sidecar),
        )
        .await
        .expect("sidecar");
    let live = deployments.get("w1-web").await.expect("deployment");
    let containers = live
        .spec
        .and_then(|s| s.template.spec)
        .map(|s| s.containers.len());
    assert_eq!(containers, Some(2));
    let before = write_requests(&env.cluster);
    let r = env.pass("w1").await;
    assert_eq!(r.writes(), 0, "{r:?}");
    assert_eq!(write_requests(&env.cluster), before);
}
