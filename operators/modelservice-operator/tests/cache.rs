//! Children from the controller's watch caches (`kinfer_state::child_watch` feeding the
//! engine's `OwnerIndex`, wired in `controller::run`): once the watches have listed, the
//! reconciles that repair a deleted child send no LIST at all, where a reconcile without the
//! cache LISTs each of the eleven owned kinds. The metrics-auth ClusterRoleBinding comes from
//! the controllers' watch of it too (`cluster_rbac`): neither fetch nor the engine reads it by
//! name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, minimal};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams};

/// The EPP plugins ConfigMap of `ms` in `default`, as stored (read in-process: not a request).
fn config_map_uid(h: &Harness, ms: &str) -> Option<String> {
    h.stored_uid("", "configmaps", "default", &format!("{ms}-epp-config"))
}

#[tokio::test]
async fn repairing_a_deleted_child_reads_children_from_the_watch_caches_without_a_list() {
    let h = Harness::start().await;
    h.create(&minimal("cached", "default")).await;
    h.wait_ready("default", "cached").await;
    let before = config_map_uid(&h, "cached").expect("the EPP ConfigMap");

    h.cluster.counters().reset();
    Api::<ConfigMap>::namespaced(h.client.clone(), "default")
        .delete("cached-epp-config", &DeleteParams::default())
        .await
        .expect("delete");
    // Polled in-process, so the wait itself sends no request. The server stores the object
    // before it counts the request, so the wait also covers the count.
    h.eventually("the ConfigMap recreated and its apply counted", |h| {
        config_map_uid(h, "cached").is_some_and(|uid| uid != before)
            && h.cluster.counters().count("patch", Some("configmaps")) >= 1
    })
    .await;
    let requests = h.cluster.counters().snapshot();
    let lists: Vec<_> = requests
        .iter()
        .filter(|((verb, _, _), _)| verb == "list")
        .collect();
    assert!(lists.is_empty(), "reconciles LISTed: {lists:?}");
    let applies = h.cluster.counters().count("patch", Some("configmaps"));
    assert_eq!(applies, 1, "{requests:?}");
    let gets: Vec<_> = requests
        .iter()
        .filter(|((verb, resource, _), _)| verb == "get" && resource.starts_with("clusterrole"))
        .collect();
    assert!(
        gets.is_empty(),
        "the cluster RBAC was read by name: {requests:?}"
    );
}
