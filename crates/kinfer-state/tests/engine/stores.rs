//! Planned objects that are not listed children: a shared object the child store holds by
//! name is not read; one it does not hold is read, and refused when it is not ours; an object
//! of a kind nobody watches is read by name on every reconcile, so its deletion is repaired.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kinfer_state::engine::{Engine, EngineConfig};
use kinfer_state::metrics::Metrics;
use kinfer_state::pipeline::ChildKind;
use kinfer_state::{OwnerIndex, Reason};
use kube::api::{DynamicObject, ListParams, PostParams};
use kube::runtime::watcher::Event;

use crate::common::{Env, NS, ToyPipeline, ToySpec, env, scheme, toy};

/// An index holding every ConfigMap of the namespace and no Deployment, as if its watches had
/// listed (a real one is label-scoped: what it holds is the test's choice here).
async fn listed_index(env: &Env) -> Arc<OwnerIndex> {
    let index = Arc::new(OwnerIndex::new());
    let cms = ChildKind::of::<ConfigMap>();
    index.observe(&cms, None, &Event::Init);
    for cm in env
        .cms
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
    {
        let obj: DynamicObject =
            serde_json::from_value(serde_json::to_value(cm).expect("json")).expect("object");
        index.observe(&cms, None, &Event::InitApply(obj));
    }
    index.observe(&cms, None, &Event::InitDone);
    let deployments = ChildKind::of::<Deployment>();
    index.observe(&deployments, None, &Event::Init);
    index.observe(&deployments, None, &Event::InitDone);
    index
}

fn gets(env: &Env, resource: &str) -> u64 {
    env.cluster.counters().count("get", Some(resource))
}

#[tokio::test]
async fn a_shared_object_the_store_holds_is_not_read_and_a_foreign_one_is_still_refused() {
    let env = env().await;
    let mut t = toy("s", NS, &[("a", "1")]);
    t.spec.shared = Some("s-shared".to_owned());
    env.create_toy(t).await;
    env.converge("s").await;

    let engine = Engine::new(
        ToyPipeline::default(),
        env.client.clone(),
        EngineConfig::new(scheme()),
        Metrics::new(),
    )
    .with_owner_index(listed_index(&env).await);
    env.cluster.counters().reset();
    let report = engine.reconcile(&env.get("s").await).await;
    assert_eq!(report.writes(), 0, "{report:?}");
    assert_eq!(gets(&env, "configmaps"), 0, "the shared ConfigMap was read");
    assert_eq!(env.cluster.counters().count("list", None), 0);

    // A foreign ConfigMap (no labels of ours) is invisible to a label-scoped store: read by
    // name, then refused instead of taken over.
    let foreign: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "someone-elses"}, "data": {"owner": "them"}
    }))
    .expect("cm");
    env.cms
        .create(&PostParams::default(), &foreign)
        .await
        .expect("create");
    env.patch_spec("s", serde_json::json!({"shared": "someone-elses"}))
        .await;
    let report = engine.reconcile(&env.get("s").await).await;
    assert_eq!(gets(&env, "configmaps"), 1, "a miss is read by name");
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.reason == Reason::custom("NameTaken")),
        "{:?}",
        report.errors
    );
    let kept = env.cms.get("someone-elses").await.expect("get");
    assert_eq!(
        kept.data.and_then(|d| d.get("owner").cloned()).as_deref(),
        Some("them")
    );
}

#[tokio::test]
async fn an_object_of_an_unwatched_kind_is_read_on_every_reconcile_and_repaired() {
    let env = env().await;
    let mut t = toy("u", NS, &[]);
    t.spec = ToySpec {
        unwatched: Some("u-token".to_owned()),
        requeue_s: Some(60),
        ..ToySpec::default()
    };
    env.create_toy(t).await;
    env.converge("u").await;
    env.cluster.counters().reset();

    // Nothing reports on it but a read: one GET per reconcile, and nothing written.
    let report = env.pass("u").await;
    assert_eq!(report.writes(), 0, "{report:?}");
    assert_eq!(gets(&env, "secrets"), 1);
    env.pass("u").await;
    assert_eq!(gets(&env, "secrets"), 2);

    // Deleted behind the operator's back: the next reconcile's read finds it gone and applies it.
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(env.client.clone(), NS);
    secrets
        .delete("u-token", &kube::api::DeleteParams::default())
        .await
        .expect("delete");
    let report = env.pass("u").await;
    assert_eq!(report.applied, 1, "{report:?}");
    assert!(secrets.get_opt("u-token").await.expect("get").is_some());
}
