//! The cluster-RBAC finalizer: added only with cluster RBAC, released when it goes, run on
//! deletion.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, container, minimal};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kinfer_api::modelservice::ModelService;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use modelservice_operator::OperatorConfig;
use modelservice_operator::OptionalCrds;
use modelservice_operator::reconciler::FINALIZER;

#[tokio::test]
async fn deleting_the_modelservice_removes_cluster_rbac_through_the_finalizer() {
    let h = Harness::start().await;
    h.create(&minimal("fin", "default")).await;
    let ms = h.wait_ready("default", "fin").await;
    assert!(ms.finalizers().contains(&FINALIZER.to_owned()));
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    assert!(roles.get_opt("default-fin-epp").await.unwrap().is_some());
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
    assert!(roles.get_opt("default-fin-epp").await.unwrap().is_none());
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
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    assert!(roles.get_opt("default-nofin-epp").await.unwrap().is_none());
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
    let roles: Api<ClusterRole> = Api::all(h.client.clone());
    assert!(
        roles
            .get_opt("default-release-epp")
            .await
            .unwrap()
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
        roles
            .get_opt("default-release-epp")
            .await
            .unwrap()
            .is_none()
    );
    let bindings: Api<ClusterRoleBinding> = Api::all(h.client.clone());
    assert!(
        bindings
            .get_opt("default-release-epp")
            .await
            .unwrap()
            .is_none()
    );
    h.wait_ready("default", "release").await;
}
