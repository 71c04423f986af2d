use kube::discovery::{Discovery, Scope};

use crate::common::cluster;

#[tokio::test]
async fn discovery_lists_core_groups_and_installed_crds() {
    let (_c, client) = cluster().await;
    let d = Discovery::new(client.clone()).run().await.unwrap();
    let find = |group: &str, kind: &str| {
        d.groups()
            .find(|g| g.name() == group)
            .and_then(|g| g.recommended_kind(kind))
    };
    for (g, k) in [
        ("", "Pod"),
        ("", "Namespace"),
        ("apps", "Deployment"),
        ("batch", "Job"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("coordination.k8s.io", "Lease"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ] {
        assert!(find(g, k).is_some(), "{g}/{k} missing");
    }
    let (ar, caps) = find("test.kinfer.dev", "Widget").expect("widget discovered");
    assert_eq!(ar.plural, "widgets");
    assert_eq!(caps.scope, Scope::Namespaced);
    let (_, ns_caps) = find("", "Namespace").unwrap();
    assert_eq!(ns_caps.scope, Scope::Cluster);
}

#[tokio::test]
async fn version_endpoint_answers() {
    let (_c, client) = cluster().await;
    let v = client.apiserver_version().await.unwrap();
    assert_eq!(v.major, "1");
}
