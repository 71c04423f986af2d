//! The Endpoint Picker's cluster-scoped metrics-auth RBAC: labelled with its parent, watched
//! (drift repaired), finalized per object and only by label; and the token Secret, owned
//! without any list or watch of Secrets. A role replaced behind the watch cache is refused by
//! name, never taken for an invalid spec.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{Harness, condition, minimal};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kinfer_api::modelservice::ModelService;
use kinfer_testkit::Fault;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use modelservice_operator::reconciler::FINALIZER;
use modelservice_operator::{OperatorConfig, OptionalCrds};
use serde_json::json;

fn has_finalizer(ms: &ModelService) -> bool {
    ms.finalizers().iter().any(|f| f == FINALIZER)
}

#[tokio::test]
async fn cluster_rbac_names_its_parent_and_drift_is_repaired_through_the_watch() {
    let h = Harness::start().await;
    h.create(&minimal("lbl", "team-a")).await;
    h.wait_ready("team-a", "lbl").await;
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    let name = "team-a-lbl-epp";
    let role = common::wait(roles.clone(), name, "ClusterRole", |o: Option<&_>| {
        o.is_some()
    })
    .await
    .unwrap();
    let labels = role.labels();
    assert_eq!(labels["kinfer.dev/parent-namespace"], "team-a");
    assert_eq!(labels["kinfer.dev/parent-name"], "lbl");
    assert_eq!(labels["kinfer.dev/managed-by"], "kinfer-modelservice");
    assert_eq!(role.annotations()["kinfer.dev/parent"], "team-a/lbl");
    let binding = bindings.get(name).await.unwrap();
    assert_eq!(binding.labels()["kinfer.dev/parent-name"], "lbl");

    // A deleted binding is recreated, an edited role is repaired: nothing but the label-scoped
    // watch of cluster RBAC triggers these reconciles.
    bindings
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    common::wait(
        bindings.clone(),
        name,
        "ClusterRoleBinding recreated",
        |o: Option<&ClusterRoleBinding>| o.is_some_and(|b| b.metadata.deletion_timestamp.is_none()),
    )
    .await;
    roles
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"rules": []})),
        )
        .await
        .unwrap();
    common::wait(
        roles,
        name,
        "ClusterRole rules repaired",
        |o: Option<&ClusterRole>| o.is_some_and(|r| r.rules.as_ref().is_some_and(|x| x.len() == 3)),
    )
    .await;
}

#[tokio::test]
async fn the_finalizer_is_per_object_and_removes_only_its_own_parents_rbac() {
    let h = Harness::start().await;
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
    Api::<Namespace>::all(h.client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    // team-a/x and team/a-x both map to the upstream name `team-a-x-epp`.
    h.create(&minimal("x", "team-a")).await;
    let first = h
        .wait_ms("team-a", "x", "finalizer", |ms| {
            has_finalizer(ms) && ms.status.is_some()
        })
        .await;
    assert!(has_finalizer(&first));
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    let owner = common::wait(
        roles.clone(),
        "team-a-x-epp",
        "ClusterRole",
        |o: Option<&_>| o.is_some(),
    )
    .await
    .unwrap();
    assert_eq!(owner.annotations()["kinfer.dev/parent"], "team-a/x");

    h.create(&minimal("a-x", "team")).await;
    let second = h
        .wait_ms("team", "a-x", "conflict reported, no finalizer", |ms| {
            !has_finalizer(ms)
                && condition(ms, "MetricsAuthReady")
                    .is_some_and(|c| c.status == "False" && c.reason == "ClusterRBACConflict")
        })
        .await;
    assert!(
        condition(&second, "DecodeAvailable").is_some(),
        "the rest is reconciled: {:?}",
        second.status
    );
    // The other parent's RBAC is untouched.
    let still = roles.get("team-a-x-epp").await.unwrap();
    assert_eq!(still.uid(), owner.uid());
    assert_eq!(still.annotations()["kinfer.dev/parent"], "team-a/x");

    // Deleting the second (which holds no cluster RBAC) leaves the first's alone.
    let api: Api<ModelService> = Api::namespaced(h.client.clone(), "team");
    api.delete("a-x", &DeleteParams::default()).await.unwrap();
    common::wait(api, "a-x", "gone", |o: Option<&ModelService>| o.is_none()).await;
    assert_eq!(roles.get("team-a-x-epp").await.unwrap().uid(), owner.uid());
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    assert!(bindings.get_opt("team-a-x-epp").await.unwrap().is_some());

    // Deleting the owner removes its RBAC through the finalizer.
    let api: Api<ModelService> = Api::namespaced(h.client.clone(), "team-a");
    api.delete("x", &DeleteParams::default()).await.unwrap();
    common::wait(api, "x", "gone", |o: Option<&ModelService>| o.is_none()).await;
    assert!(roles.get_opt("team-a-x-epp").await.unwrap().is_none());
    assert!(bindings.get_opt("team-a-x-epp").await.unwrap().is_none());
}

#[tokio::test]
async fn an_invalid_new_modelservice_gets_no_finalizer() {
    let h = Harness::start().await;
    let mut ms = minimal("bad", "default");
    ms["spec"]["prefill"] = json!({"replicas": 1}); // prefill without routingProxy
    h.create(&ms).await;
    let ms = h
        .wait_ms("default", "bad", "Failed", |ms| {
            ms.status
                .as_ref()
                .and_then(|s| s.phase)
                .is_some_and(|p| p.as_str() == "Failed")
        })
        .await;
    assert!(ms.finalizers().is_empty(), "{:?}", ms.finalizers());
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    assert!(roles.get_opt("default-bad-epp").await.unwrap().is_none());
}

#[tokio::test]
async fn the_token_secret_is_owned_without_listing_or_watching_secrets_and_rechecked() {
    let h = Harness::start_with(
        OperatorConfig {
            recheck_interval: Duration::from_secs(1),
            ..OperatorConfig::default()
        },
        OptionalCrds::all(),
    )
    .await;
    h.create(&minimal("tok", "default")).await;
    let ms = h.wait_ready("default", "tok").await;
    let secrets: Api<Secret> = Api::namespaced(h.client.clone(), "default");
    let name = "tok-epp-sa-metrics-reader-secret";
    let secret = secrets.get(name).await.unwrap();
    assert_eq!(
        secret.type_.as_deref(),
        Some("kubernetes.io/service-account-token")
    );
    let owner = secret.owner_references();
    assert!(
        owner
            .iter()
            .any(|o| o.controller == Some(true) && Some(&o.uid) == ms.uid().as_ref()),
        "{owner:?}"
    );
    let counters = h.cluster.counters();
    assert_eq!(
        counters.count("list", Some("secrets")),
        0,
        "{:?}",
        counters.snapshot()
    );
    assert_eq!(
        counters.count("watch", Some("secrets")),
        0,
        "{:?}",
        counters.snapshot()
    );

    // No watch sees a deleted token Secret: the periodic recheck recreates it. (The test's own
    // wait watches Secrets, so the counters are not checked after this point.)
    secrets
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    common::wait(
        secrets,
        name,
        "token Secret recreated",
        |o: Option<&Secret>| o.is_some_and(|s| s.metadata.deletion_timestamp.is_none()),
    )
    .await;
}

/// How often the server answered `verb` on ClusterRoles with `code` (read in-process).
fn role_answers(h: &Harness, verb: &str, code: u16) -> u64 {
    let key = (verb.to_owned(), "clusterroles".to_owned(), code);
    h.cluster
        .counters()
        .snapshot()
        .get(&key)
        .copied()
        .unwrap_or(0)
}

#[tokio::test]
async fn a_cluster_role_replaced_behind_the_watch_is_refused_by_name_not_as_an_invalid_spec() {
    let h = Harness::start().await;
    h.create(&minimal("swap", "team-a")).await;
    h.wait_ready("team-a", "swap").await;
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    let name = "team-a-swap-epp";
    let before = roles.get(name).await.unwrap().metadata.uid;
    let faults = h.cluster.faults();

    // Our role drifts (an update: the repair is a patch) and the operator's watch cache sees
    // it, but the repair is refused for now: the cache holds the drifted copy.
    faults.inject(Fault::status("patch", "clusterroles", 503));
    let mut drifted = roles.get(name).await.unwrap();
    drifted.rules = Some(Vec::new());
    roles
        .replace(name, &PostParams::default(), &drifted)
        .await
        .unwrap();
    h.eventually("the repair was attempted", |h| {
        role_answers(h, "patch", 503) >= 1
    })
    .await;

    // The ClusterRole watch goes down (cut, reconnections refused); meanwhile the role is
    // deleted and someone else creates one of that name. The cache still holds ours.
    faults.inject(Fault::status("watch", "clusterroles", 503));
    faults.cut_watches();
    h.eventually("the ClusterRole watch was refused", |h| {
        role_answers(h, "watch", 503) >= 1
    })
    .await;
    roles.delete(name, &DeleteParams::default()).await.unwrap();
    let foreign: ClusterRole =
        serde_json::from_value(json!({"metadata": {"name": name}, "rules": []})).unwrap();
    roles
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();

    // Repairs may go through again (the watch stays down): the apply pinned to the cached
    // UID is refused, retried as an infrastructure error, and the retry reads the role by
    // name and refuses it as taken. Never an invalid spec on the way (but NameTaken's).
    let saw_invalid = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&saw_invalid);
    faults.lift("patch", "clusterroles");
    let ms = h
        .wait_ms("team-a", "swap", "NameTaken", move |ms| {
            let conditions = ms.status.iter().flat_map(|s| s.conditions.iter());
            // NameTaken is reported under ConfigValid's InvalidSpec too: look for the refusal
            // of the UID dressed as the spec's fault.
            if conditions
                .clone()
                .any(|c| c.reason == "InvalidSpec" && c.message.contains("metadata.uid"))
            {
                seen.store(true, Ordering::SeqCst);
            }
            condition(ms, "Ready").is_some_and(|c| c.reason == "NameTaken")
        })
        .await;
    assert!(
        !saw_invalid.load(Ordering::SeqCst),
        "reported as InvalidSpec"
    );
    assert!(role_answers(&h, "patch", 422) >= 1, "no apply was pinned");
    let ready = condition(&ms, "Ready").unwrap();
    assert!(ready.message.contains(name), "{}", ready.message);
    let kept = roles.get(name).await.unwrap();
    assert_ne!(kept.metadata.uid, before);
    assert!(kept.metadata.labels.is_none(), "taken over: {kept:?}");
    assert_eq!(kept.rules, Some(Vec::new()));
}
