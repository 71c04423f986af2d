//! The Endpoint Picker's cluster-scoped metrics-auth ClusterRoleBinding: of the shipped
//! ClusterRole, labelled with its parent, watched (drift repaired), finalized per object and
//! only by label, and made anew when an earlier one binds a per-ModelService ClusterRole; and
//! the token Secret, owned without any list or watch of Secrets. A binding replaced behind the
//! watch cache is refused by name, never taken for an invalid spec.

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
    let binding = common::wait(
        bindings.clone(),
        name,
        "ClusterRoleBinding",
        |o: Option<&_>| o.is_some(),
    )
    .await
    .unwrap();
    let labels = binding.labels();
    assert_eq!(labels["kinfer.dev/parent-namespace"], "team-a");
    assert_eq!(labels["kinfer.dev/parent-name"], "lbl");
    assert_eq!(labels["kinfer.dev/managed-by"], "kinfer-modelservice");
    assert_eq!(binding.annotations()["kinfer.dev/parent"], "team-a/lbl");
    // It binds the shipped ClusterRole; none is made per ModelService.
    assert_eq!(binding.role_ref.name, "kinfer-modelservice-epp-metrics");
    assert!(roles.get_opt(name).await.unwrap().is_none());

    // A deleted binding is recreated, an edited one is repaired: nothing but the label-scoped
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
    bindings
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"subjects": []})),
        )
        .await
        .unwrap();
    common::wait(
        bindings,
        name,
        "ClusterRoleBinding subjects repaired",
        |o: Option<&ClusterRoleBinding>| {
            o.is_some_and(|b| b.subjects.as_ref().is_some_and(|x| x.len() == 1))
        },
    )
    .await;
}

/// A binding labelled for this ModelService binds a ClusterRole made for it alone; a binding's
/// roleRef is immutable, so it is deleted and made anew for the shipped ClusterRole, and the
/// old ClusterRole goes with it. Another parent's old ClusterRole is left alone.
#[tokio::test]
async fn a_binding_of_a_per_modelservice_cluster_role_is_replaced_by_one_of_the_shipped_role() {
    let mut h = Harness::without_operator(&OperatorConfig::default(), OptionalCrds::all()).await;
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    let labels = |parent: &str| {
        json!({
            "app.kubernetes.io/name": format!("{parent}-epp"),
            "app.kubernetes.io/component": "epp",
            "app.kubernetes.io/part-of": "otterscale-system",
            "app.kubernetes.io/managed-by": "model-operator",
            "kinfer.dev/managed-by": "kinfer-modelservice",
            "kinfer.dev/parent-namespace": "team-a",
            "kinfer.dev/parent-name": parent,
        })
    };
    let annotations = |parent: &str| json!({"kinfer.dev/parent": format!("team-a/{parent}")});
    let metrics_rules = json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]);
    let old_role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "team-a-old-epp", "labels": labels("old"), "annotations": annotations("old")},
        "rules": metrics_rules,
    }))
    .unwrap();
    let old_binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "team-a-old-epp", "labels": labels("old"), "annotations": annotations("old")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "team-a-old-epp"},
        "subjects": [{"kind": "ServiceAccount", "name": "old-epp", "namespace": "team-a"}],
    }))
    .unwrap();
    // Another ModelService's old ClusterRole, which no binding of `old` references.
    let neighbour: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "team-a-other-epp", "labels": labels("other"), "annotations": annotations("other")},
        "rules": metrics_rules,
    }))
    .unwrap();
    let pp = PostParams::default();
    roles.create(&pp, &old_role).await.unwrap();
    roles.create(&pp, &neighbour).await.unwrap();
    let before = bindings.create(&pp, &old_binding).await.unwrap().uid();

    h.create(&minimal("old", "team-a")).await;
    h.create(&minimal("other", "team-a")).await;
    h.run(OperatorConfig::default()).await;
    let binding = common::wait(
        bindings.clone(),
        "team-a-old-epp",
        "the binding of the shipped ClusterRole",
        |o: Option<&ClusterRoleBinding>| {
            o.is_some_and(|b| b.role_ref.name == "kinfer-modelservice-epp-metrics")
        },
    )
    .await
    .unwrap();
    assert_ne!(binding.uid(), before, "made anew");
    assert_eq!(binding.subjects.unwrap()[0].name, "old-epp");
    common::wait(
        roles.clone(),
        "team-a-old-epp",
        "the old ClusterRole deleted",
        |o: Option<&ClusterRole>| o.is_none(),
    )
    .await;
    h.wait_ready("team-a", "old").await;
    h.wait_ready("team-a", "other").await;
    assert!(roles.get_opt("team-a-other-epp").await.unwrap().is_some());
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
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    let owner = common::wait(
        bindings.clone(),
        "team-a-x-epp",
        "ClusterRoleBinding",
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
    let still = bindings.get("team-a-x-epp").await.unwrap();
    assert_eq!(still.uid(), owner.uid());
    assert_eq!(still.annotations()["kinfer.dev/parent"], "team-a/x");

    // Deleting the second (which holds no cluster RBAC) leaves the first's alone.
    let api: Api<ModelService> = Api::namespaced(h.client.clone(), "team");
    api.delete("a-x", &DeleteParams::default()).await.unwrap();
    common::wait(api, "a-x", "gone", |o: Option<&ModelService>| o.is_none()).await;
    assert_eq!(
        bindings.get("team-a-x-epp").await.unwrap().uid(),
        owner.uid()
    );

    // Deleting the owner removes its RBAC through the finalizer.
    let api: Api<ModelService> = Api::namespaced(h.client.clone(), "team-a");
    api.delete("x", &DeleteParams::default()).await.unwrap();
    common::wait(api, "x", "gone", |o: Option<&ModelService>| o.is_none()).await;
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
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    assert!(bindings.get_opt("default-bad-epp").await.unwrap().is_none());
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

/// How often the server answered `verb` on ClusterRoleBindings with `code` (read in-process).
fn role_answers(h: &Harness, verb: &str, code: u16) -> u64 {
    let key = (verb.to_owned(), "clusterrolebindings".to_owned(), code);
    h.cluster
        .counters()
        .snapshot()
        .get(&key)
        .copied()
        .unwrap_or(0)
}

#[tokio::test]
async fn a_binding_replaced_behind_the_watch_is_refused_by_name_not_as_an_invalid_spec() {
    let h = Harness::start().await;
    h.create(&minimal("swap", "team-a")).await;
    h.wait_ready("team-a", "swap").await;
    let roles: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    let name = "team-a-swap-epp";
    let before = roles.get(name).await.unwrap().metadata.uid;
    let faults = h.cluster.faults();

    // Our binding drifts (an update: the repair is a patch) and the operator's watch cache sees
    // it, but the repair is refused for now: the cache holds the drifted copy.
    faults.inject(Fault::status("patch", "clusterrolebindings", 503));
    let mut drifted = roles.get(name).await.unwrap();
    drifted.subjects = Some(Vec::new());
    roles
        .replace(name, &PostParams::default(), &drifted)
        .await
        .unwrap();
    h.eventually("the repair was attempted", |h| {
        role_answers(h, "patch", 503) >= 1
    })
    .await;

    // The ClusterRoleBinding watch goes down (cut, reconnections refused); meanwhile the
    // binding is deleted and someone else creates one of that name (unlabelled, binding
    // nobody: not upstream's either). The cache still holds ours.
    faults.inject(Fault::status("watch", "clusterrolebindings", 503));
    faults.cut_watches();
    h.eventually("the ClusterRoleBinding watch was refused", |h| {
        role_answers(h, "watch", 503) >= 1
    })
    .await;
    roles.delete(name, &DeleteParams::default()).await.unwrap();
    let foreign: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [],
    }))
    .unwrap();
    roles
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();

    // Repairs may go through again (the watch stays down): the apply pinned to the cached
    // UID is refused, retried as an infrastructure error, and the retry reads the binding by
    // name and refuses it as taken. Never an invalid spec on the way (but NameTaken's).
    let saw_invalid = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&saw_invalid);
    faults.lift("patch", "clusterrolebindings");
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
    assert_eq!(kept.role_ref.name, "view");
}
