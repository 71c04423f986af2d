//! The HPA owns the replica count while autoscaling, handed over as Kubernetes documents it
//! (kinfer-state's `handover`): the operator never resets what the HPA chose, also when the
//! HPA's write lands between the operator's read and its apply; turning autoscaling on does
//! not drop the Deployment to one replica, and turning it off deletes the HPA and takes
//! `spec.replicas` back. The HPA is imitated as the real one writes: an update of the
//! Deployment's `/scale` by `kube-controller-manager`.

use std::sync::Arc;

use kinfer_state::handover::handover_manager;
use kinfer_state::metrics::Metrics;
use kinfer_state::{Engine, EngineConfig, OwnerIndex, Pipeline};
use kube::api::{Api, DynamicObject, ListParams};
use zerfoo_operator::reconciler::{MANAGER, label_scheme};
use zerfoo_operator::{OperatorConfig, ZerfooPipeline};

use crate::common::{Env, HPA_MANAGER, NS, env, replicas, replicas_managers, valid_spec};

fn autoscaled() -> kinfer_api::zerfoo::ZerfooInferenceServiceSpec {
    let mut spec = valid_spec();
    spec.min_replicas = Some(2);
    spec.max_replicas = Some(10);
    spec
}

/// The operator's read, frozen now: every child as listed at this moment, served to an engine
/// as its child cache. Reconciling with it later is a reconcile whose read happened now and
/// whose writes happen later, whatever was written in between.
async fn read_now(env: &Env) -> Engine<ZerfooPipeline> {
    let pipeline = ZerfooPipeline::new(OperatorConfig::default());
    let index = OwnerIndex::new();
    for kind in pipeline.child_kinds() {
        let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), NS, &kind.resource);
        for o in api.list(&ListParams::default()).await.unwrap() {
            index.apply(&kind, &o);
        }
        index.mark_synced(&kind);
    }
    Engine::new(
        pipeline,
        env.client.clone(),
        EngineConfig::new(label_scheme()),
        Metrics::new(),
    )
    .with_child_store(Arc::new(index))
}

#[tokio::test]
async fn the_operator_hands_replicas_over_and_never_resets_what_the_hpa_chose() {
    let env = env().await;
    env.create("my-llama", autoscaled()).await.unwrap();
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas(&d), Some(2), "created with spec.replicas");
    // Handed over: only the temporary manager holds the field until the HPA writes it.
    assert_eq!(replicas_managers(&d), vec![handover_manager(MANAGER)]);

    // The HPA scales the primary to 7; its write removes the hand-over manager's entry.
    env.scale_as_hpa("my-llama-primary", 7).await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas_managers(&d), vec![HPA_MANAGER.to_owned()]);
    env.cluster.counters().reset();
    let report = env.reconcile("my-llama").await;
    assert_eq!(report.applied, 0, "{report:?}");
    assert_eq!(env.cluster.counters().mutations(Some("deployments")), 0);
    assert_eq!(replicas(&env.deployment("my-llama-primary").await), Some(7));

    // An unrelated spec change is applied without touching the replica count.
    env.edit("my-llama", |s| s.model_ref = "llama3-8b-q8".into())
        .await;
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas(&d), Some(7));
    assert_eq!(replicas_managers(&d), vec![HPA_MANAGER.to_owned()]);
    assert_eq!(
        crate::common::container(&d).args.as_deref().unwrap()[2],
        "llama3-8b-q8"
    );
    let status = env.get("my-llama").await.status.unwrap();
    assert_eq!(status.replicas, Some(7));
}

#[tokio::test]
async fn an_hpa_write_between_read_and_apply_is_never_undone() {
    let env = env().await;
    env.create("my-llama", autoscaled()).await.unwrap();
    // The first reconcile creates the primary with spec.replicas, owned by the operator.
    let report = env.reconcile("my-llama").await;
    assert!(report.applied > 0, "{report:?}");
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas_managers(&d), vec![MANAGER.to_owned()]);

    // The operator reads (the operator still owns replicas = 2 in what it read) ...
    let stale = read_now(&env).await;
    // ... the HPA writes 5 ...
    env.scale_only("my-llama-primary", 5).await;
    // ... and the operator's reconcile of what it read applies.
    env.cluster.counters().reset();
    let zis = env.get("my-llama").await;
    let report = stale.reconcile(&zis).await;
    assert!(report.errors.is_empty(), "{report:?}");

    // The hand-over was refused (409: the HPA changed the field), nothing was forced.
    let conflicts = env
        .cluster
        .counters()
        .snapshot()
        .iter()
        .filter(|((verb, resource, code), _)| {
            verb == "patch" && resource == "deployments" && *code == 409
        })
        .map(|(_, n)| *n)
        .sum::<u64>();
    assert_eq!(conflicts, 1, "the hand-over met the HPA's write");
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas(&d), Some(5), "the HPA's count stands");
    assert_eq!(replicas_managers(&d), vec![HPA_MANAGER.to_owned()]);

    // Later reconciles, stale or fresh, leave the field alone.
    env.scale_only("my-llama-primary", 6).await;
    let report = stale.reconcile(&zis).await;
    assert!(report.errors.is_empty(), "{report:?}");
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas(&d), Some(6));
    assert_eq!(replicas_managers(&d), vec![HPA_MANAGER.to_owned()]);
}

#[tokio::test]
async fn turning_autoscaling_off_deletes_the_hpa_and_takes_replicas_back() {
    let env = env().await;
    let mut spec = autoscaled();
    spec.replicas = 3;
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;
    env.scale_as_hpa("my-llama-primary", 9).await;

    env.edit("my-llama", |s| {
        s.min_replicas = None;
        s.max_replicas = None;
    })
    .await;
    env.converge("my-llama").await;
    assert!(env.hpas.get_opt("my-llama-hpa").await.unwrap().is_none());
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas(&d), Some(3));
    assert_eq!(replicas_managers(&d), vec![MANAGER.to_owned()]);
}

#[tokio::test]
async fn turning_autoscaling_on_keeps_the_running_replicas() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.replicas = 4;
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;

    env.edit("my-llama", |s| {
        s.min_replicas = Some(2);
        s.max_replicas = Some(10);
    })
    .await;
    env.converge("my-llama").await;
    assert!(env.hpas.get_opt("my-llama-hpa").await.unwrap().is_some());
    // Dropping the field would have defaulted (or removed) it: it is handed over instead.
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas(&d), Some(4));
    assert_eq!(replicas_managers(&d), vec![handover_manager(MANAGER)]);
    env.scale_as_hpa("my-llama-primary", 6).await;
    let report = env.converge("my-llama").await;
    assert_eq!(report.applied, 0);
    assert_eq!(replicas(&env.deployment("my-llama-primary").await), Some(6));
}
