//! The cluster-RBAC finalizer: added only with cluster RBAC, released when it goes, run on
//! deletion.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, container, minimal};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kinfer_api::modelservice::ModelService;
use kinfer_builders::labels::{PARENT_ANNOTATION, parent_labels};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use modelservice_operator::OperatorConfig;
use modelservice_operator::OptionalCrds;
use modelservice_operator::reconciler::FINALIZER;

#[tokio::test]
async fn deleting_the_modelservice_removes_cluster_rbac_through_the_finalizer() {
    let h = Harness::start().await;
    h.create(&minimal("fin", "default")).await;
    let ms = h.wait_ready("default", "fin").await;
    assert!(ms.finalizers().contains(&FINALIZER.to_owned()));
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    assert!(bindings.get_opt("default-fin-epp").await.unwrap().is_some());
    let api: Api<ModelService> = Api::namespaced(h.client.clone(), "default");
    api.delete("fin", &DeleteParams::default()).await.unwrap();
    common::wait(
        api,
        "fin",
        "ModelService gone",
        |o: Option<&ModelService>| o.is_none(),
    )
    .await;
    assert!(bindings.get_opt("default-fin-epp").await.unwrap().is_none());
}

#[tokio::test]
async fn no_finalizer_without_cluster_rbac() {
    let h = Harness::start_with(
        OperatorConfig {
            metrics_endpoint_auth: false,
            ..OperatorConfig::default()
        },
        OptionalCrds::all(),
    )
    .await;
    h.create(&minimal("nofin", "default")).await;
    let ms = h.wait_ready("default", "nofin").await;
    assert!(ms.finalizers().is_empty());
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    assert!(
        bindings
            .get_opt("default-nofin-epp")
            .await
            .unwrap()
            .is_none()
    );
    let epp: Deployment = h.get("default", "nofin-epp").await.unwrap();
    assert!(
        container(&epp, "epp")
            .args
            .unwrap()
            .contains(&"--metrics-endpoint-auth=false".to_owned())
    );
}

#[tokio::test]
async fn turning_metrics_auth_off_releases_the_finalizer_and_the_cluster_rbac() {
    let mut h = Harness::start().await;
    h.create(&minimal("release", "default")).await;
    let ms = h.wait_ready("default", "release").await;
    assert!(ms.finalizers().contains(&FINALIZER.to_owned()));
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    assert!(
        bindings
            .get_opt("default-release-epp")
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        h.get::<k8s_openapi::api::core::v1::Secret>(
            "default",
            "release-epp-sa-metrics-reader-secret"
        )
        .await
        .is_some()
    );
    // An operator restart without metrics auth: the engine runs the cleanup and releases the
    // finalizer; the ModelService stays.
    h.run(OperatorConfig {
        metrics_endpoint_auth: false,
        ..OperatorConfig::default()
    })
    .await;
    h.wait_ms("default", "release", "finalizer released", |ms| {
        ms.finalizers().is_empty()
    })
    .await;
    assert!(
        bindings
            .get_opt("default-release-epp")
            .await
            .unwrap()
            .is_none()
    );
    // The token Secret is not listed by the engine, so the release removes it too: no stale
    // long-lived token stays behind.
    assert!(
        h.get::<k8s_openapi::api::core::v1::Secret>(
            "default",
            "release-epp-sa-metrics-reader-secret"
        )
        .await
        .is_none()
    );
    h.wait_ready("default", "release").await;
}

#[tokio::test]
async fn deleting_the_namespace_removes_cluster_rbac() {
    // Cluster-scoped objects do not go with the namespace: the cleanup must run even though
    // the namespace is terminating (the engine's default skips it there).
    let h = Harness::start().await;
    h.create(&minimal("nsdel", "team-a")).await;
    h.wait_ready("team-a", "nsdel").await;
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    assert!(
        bindings
            .get_opt("team-a-nsdel-epp")
            .await
            .unwrap()
            .is_some()
    );
    let namespaces: Api<Namespace> = Api::all(h.client.clone());
    namespaces
        .delete("team-a", &DeleteParams::default())
        .await
        .unwrap();
    common::wait(
        namespaces,
        "team-a",
        "namespace gone",
        |o: Option<&Namespace>| o.is_none(),
    )
    .await;
    assert!(
        bindings
            .get_opt("team-a-nsdel-epp")
            .await
            .unwrap()
            .is_none()
    );
}

/// A ClusterRole or ClusterRoleBinding (by `kind`) as this operator labels it for the
/// ModelService `ns/name`.
fn labelled_rbac(kind: &str, object: &str, ns: &str, name: &str) -> serde_json::Value {
    let mut labels = parent_labels(ns, name);
    labels.insert(
        kinfer_state::labels::MANAGED_BY.to_owned(),
        modelservice_operator::reconciler::MANAGER.to_owned(),
    );
    let mut v = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": object,
            "labels": labels,
            "annotations": {PARENT_ANNOTATION: format!("{ns}/{name}")},
        },
    });
    if kind == "ClusterRoleBinding" {
        v["roleRef"] = serde_json::json!({
            "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": object
        });
    }
    v
}

#[tokio::test]
async fn start_up_sweep_removes_cluster_rbac_of_modelservices_that_are_gone() {
    let config = OperatorConfig::default();
    let mut h = Harness::without_operator(&config, OptionalCrds::all()).await;
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    let pp = PostParams::default();
    // Left behind by a ModelService that went while the operator was not running.
    let orphan: ClusterRole = serde_json::from_value(labelled_rbac(
        "ClusterRole",
        "team-a-gone-epp",
        "team-a",
        "gone",
    ))
    .unwrap();
    roles.create(&pp, &orphan).await.unwrap();
    let orphan_binding: ClusterRoleBinding = serde_json::from_value(labelled_rbac(
        "ClusterRoleBinding",
        "team-a-gone-epp",
        "team-a",
        "gone",
    ))
    .unwrap();
    bindings.create(&pp, &orphan_binding).await.unwrap();
    // Not ours (no marker): never touched.
    let foreign: ClusterRole = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": "someone-elses",
            "labels": parent_labels("team-a", "gone"),
            "annotations": {PARENT_ANNOTATION: "team-a/gone"},
        },
    }))
    .unwrap();
    roles.create(&pp, &foreign).await.unwrap();
    h.run(config).await;
    common::wait(
        roles.clone(),
        "team-a-gone-epp",
        "orphaned ClusterRole swept",
        |o: Option<&ClusterRole>| o.is_none(),
    )
    .await;
    common::wait(
        bindings,
        "team-a-gone-epp",
        "orphaned ClusterRoleBinding swept",
        |o: Option<&ClusterRoleBinding>| o.is_none(),
    )
    .await;
    assert!(roles.get_opt("someone-elses").await.unwrap().is_some());
}

#[tokio::test]
async fn deletion_removes_upstream_cluster_rbac_kinfer_never_labelled() {
    // Upstream finalized the ModelService and created its cluster RBAC; it is deleted before
    // kinfer's first reconcile, so nothing carries kinfer's labels.
    let config = OperatorConfig::default();
    let mut h = Harness::without_operator(&config, OptionalCrds::all()).await;
    let upstream = serde_json::json!({
        "app.kubernetes.io/name": "up-epp",
        "app.kubernetes.io/component": "epp",
        "app.kubernetes.io/part-of": "otterscale-system",
        "app.kubernetes.io/managed-by": "model-operator",
        "app.kubernetes.io/version": "v1.0.1",
    });
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    let pp = PostParams::default();
    let role: ClusterRole = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "team-a-up-epp", "labels": upstream},
        "rules": [{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}],
    }))
    .unwrap();
    roles.create(&pp, &role).await.unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "team-a-up-epp", "labels": upstream},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "team-a-up-epp"},
        "subjects": [{"kind": "ServiceAccount", "name": "up-epp", "namespace": "team-a"}],
    }))
    .unwrap();
    bindings.create(&pp, &binding).await.unwrap();
    let mut ms = minimal("up", "team-a");
    ms["metadata"]["finalizers"] = serde_json::json!([FINALIZER]);
    h.create(&ms).await;
    let api: Api<ModelService> = Api::namespaced(h.client.clone(), "team-a");
    api.delete("up", &DeleteParams::default()).await.unwrap();
    h.run(config).await;
    common::wait(
        api,
        "up",
        "ModelService gone",
        |o: Option<&ModelService>| o.is_none(),
    )
    .await;
    assert!(bindings.get_opt("team-a-up-epp").await.unwrap().is_none());
    assert!(roles.get_opt("team-a-up-epp").await.unwrap().is_none());
}
