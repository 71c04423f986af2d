//! Planned objects that are not listed children: a shared object the child store holds by
//! name is not read; one it does not hold is read, and refused when it is not ours; an object
//! of a kind nobody watches is read by name on every reconcile, so its deletion is repaired;
//! a cached object replaced behind the store is not written over, nor taken for a bad spec.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kinfer_state::engine::{Engine, EngineConfig};
use kinfer_state::metrics::Metrics;
use kinfer_state::pipeline::ChildKind;
use kinfer_state::{ErrorCategory, OwnerIndex, Reason};
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

/// An engine of the toy pipeline serving planned objects from `index`.
fn engine_with(env: &Env, index: Arc<OwnerIndex>) -> Engine<ToyPipeline> {
    Engine::new(
        ToyPipeline::default(),
        env.client.clone(),
        EngineConfig::new(scheme()),
        Metrics::new(),
    )
    .with_owner_index(index)
}

/// Creates a ConfigMap `name` that is not ours (none of our labels, no owner).
async fn create_foreign(env: &Env, name: &str) {
    let foreign: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name}, "data": {"owner": "them"}
    }))
    .expect("cm");
    env.cms
        .create(&PostParams::default(), &foreign)
        .await
        .expect("create");
}

/// `report` refused the foreign ConfigMap `name` ([`create_foreign`]), which is unchanged.
async fn assert_refused_and_kept(env: &Env, report: &kinfer_state::Report, name: &str) {
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.reason == Reason::custom("NameTaken")),
        "{:?}",
        report.errors
    );
    let kept = env.cms.get(name).await.expect("get");
    assert_eq!(
        kept.data.and_then(|d| d.get("owner").cloned()).as_deref(),
        Some("them")
    );
}

#[tokio::test]
async fn a_shared_object_the_store_holds_is_not_read_and_a_foreign_one_is_still_refused() {
    let env = env().await;
    let mut t = toy("s", NS, &[("a", "1")]);
    t.spec.shared = Some("s-shared".to_owned());
    env.create_toy(t).await;
    env.converge("s").await;

    let engine = engine_with(&env, listed_index(&env).await);
    env.cluster.counters().reset();
    let report = engine.reconcile(&env.get("s").await).await;
    assert_eq!(report.writes(), 0, "{report:?}");
    assert_eq!(gets(&env, "configmaps"), 0, "the shared ConfigMap was read");
    assert_eq!(env.cluster.counters().count("list", None), 0);

    // A foreign ConfigMap (no labels of ours) is invisible to a label-scoped store: read by
    // name, then refused instead of taken over.
    create_foreign(&env, "someone-elses").await;
    env.patch_spec("s", serde_json::json!({"shared": "someone-elses"}))
        .await;
    let report = engine.reconcile(&env.get("s").await).await;
    assert_eq!(gets(&env, "configmaps"), 1, "a miss is read by name");
    assert_refused_and_kept(&env, &report, "someone-elses").await;
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

#[tokio::test]
async fn a_cached_object_replaced_behind_the_store_is_retried_then_refused_by_name() {
    let env = env().await;
    let mut t = toy("r", NS, &[]);
    t.spec.shared = Some("r-shared".to_owned());
    env.create_toy(t).await;
    env.converge("r").await;

    // The store holds our copy (drifted, so the reconcile applies); on the server it was
    // deleted and recreated by someone else, and the store has not seen either event (its
    // watch is down, or the events are still on their way).
    let cms = ChildKind::of::<ConfigMap>();
    let ours = env.cms.get("r-shared").await.expect("ours");
    let mut drifted: DynamicObject =
        serde_json::from_value(serde_json::to_value(&ours).expect("json")).expect("object");
    drifted.data["data"] = serde_json::json!({"value": "edited"});
    let index = listed_index(&env).await;
    index.observe(&cms, None, &Event::Apply(drifted));
    let engine = engine_with(&env, index);
    env.cms
        .delete("r-shared", &kube::api::DeleteParams::default())
        .await
        .expect("delete");
    create_foreign(&env, "r-shared").await;

    // The apply pinned to the cached UID is refused: a transient infrastructure error (the
    // cache lags), not the user's spec.
    env.cluster.counters().reset();
    let report = engine.reconcile(&env.get("r").await).await;
    assert_eq!(report.applied, 0, "{report:?}");
    assert!(
        report
            .errors
            .iter()
            .all(|e| e.category == ErrorCategory::Infrastructure),
        "{:?}",
        report.errors
    );
    assert!(!report.errors.is_empty(), "the refusal was not reported");
    assert_eq!(gets(&env, "configmaps"), 0, "served from the store");
    let status = env.get("r").await.status.unwrap_or_default();
    assert!(!status.conditions.is_empty(), "no status written");
    assert!(
        !status
            .conditions
            .iter()
            .any(|c| c.reason == Reason::InvalidSpec.as_str()),
        "{:?}",
        status.conditions
    );

    // The retry reads it by name although the store still serves the stale copy, and
    // refuses the foreign object instead of taking it over.
    let report = engine.reconcile(&env.get("r").await).await;
    assert_eq!(
        gets(&env, "configmaps"),
        1,
        "the stale copy was not read past"
    );
    assert_refused_and_kept(&env, &report, "r-shared").await;
}
