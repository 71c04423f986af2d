//! A child deleted while its watch is down: the watch resumes with 410 Gone and re-lists, the
//! delete event never comes, and the re-list no longer has the child. The re-list reports what
//! it dropped (`kinfer_state::child_watch`), so the owner is reconciled and recreates the
//! child at once, instead of at its next unrelated trigger or periodic recheck (10 minutes by
//! default, far beyond this test's bound). With several watched namespaces the same holds for
//! the cluster RBAC, which every namespace's controller watches cluster-wide: the controller of
//! the parent's namespace learns of the drop whichever watch re-lists first.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, minimal};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kinfer_operator::ControllerOptions;
use kinfer_testkit::Fault;
use kube::api::{Api, DeleteParams};
use modelservice_operator::{OperatorConfig, OptionalCrds};

/// The UID of the ConfigMap `name` in `default`, as stored (read in-process: no request).
fn uid(h: &Harness, name: &str) -> Option<String> {
    h.stored_uid("", "configmaps", "default", name)
}

#[tokio::test]
async fn a_child_deleted_while_its_watch_was_down_is_recreated_after_the_relist() {
    let h = Harness::start().await;
    h.create(&minimal("relist", "default")).await;
    h.wait_ready("default", "relist").await;
    let name = "relist-epp-config";
    let before = uid(&h, name).expect("the EPP ConfigMap");

    // Take the ConfigMap watch down: the open watch is cut and cannot reconnect. Once a
    // reconnection was refused, the old stream is gone and cannot see the deletion.
    let faults = h.cluster.faults();
    faults.inject(Fault::status("watch", "configmaps", 503));
    faults.cut_watches();
    h.eventually("the ConfigMap watch was refused", |h| {
        let refused = ("watch".to_owned(), "configmaps".to_owned(), 503);
        h.cluster.counters().snapshot().get(&refused).copied() >= Some(1)
    })
    .await;
    Api::<ConfigMap>::namespaced(h.client.clone(), "default")
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete");
    h.eventually("the ConfigMap is gone", |h| uid(h, name).is_none())
        .await;

    // The watch comes back to a version it may not resume from: 410 Gone, then a re-list.
    faults.clear();
    faults.inject(Fault::watch_gone("configmaps").times(1));
    h.eventually("the ConfigMap was recreated", |h| {
        uid(h, name).is_some_and(|now| now != before)
    })
    .await;
}

#[tokio::test]
async fn cluster_rbac_deleted_while_every_watch_was_down_is_recreated_with_several_namespaces() {
    let config = OperatorConfig::default();
    let mut h = Harness::without_operator(&config, OptionalCrds::all()).await;
    let options = ControllerOptions {
        namespaces: vec!["ml-serving".to_owned(), "team-a".to_owned()],
        ..ControllerOptions::default()
    };
    h.run_with(config, options).await;
    h.create(&minimal("rbac", "team-a")).await;
    h.wait_ready("team-a", "rbac").await;
    let name = "team-a-rbac-epp";
    // Read in-process, like `uid`: polling it sends no request.
    let binding = |h: &Harness| {
        h.cluster
            .objects("rbac.authorization.k8s.io", "clusterrolebindings")
            .iter()
            .find(|o| o["metadata"]["name"] == name)
            .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_owned))
    };
    let before = binding(&h).expect("the metrics-auth ClusterRoleBinding");

    // Both controllers' ClusterRoleBinding watches down (cut, reconnections refused).
    let faults = h.cluster.faults();
    faults.inject(Fault::status("watch", "clusterrolebindings", 503));
    faults.cut_watches();
    h.eventually("both ClusterRoleBinding watches were refused", |h| {
        let refused = ("watch".to_owned(), "clusterrolebindings".to_owned(), 503);
        h.cluster.counters().snapshot().get(&refused).copied() >= Some(2)
    })
    .await;
    Api::<ClusterRoleBinding>::all(h.client.clone())
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete");
    h.eventually("the binding is gone", |h| binding(h).is_none())
        .await;

    // Both watches come back to a history that is gone: each re-lists, in either order.
    faults.expire_history();
    faults.clear();
    h.eventually("the binding was recreated", |h| {
        binding(h).is_some_and(|now| now != before)
    })
    .await;
}
