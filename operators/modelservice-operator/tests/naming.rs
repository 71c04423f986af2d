//! Names: dotted and long ModelService names give valid names and labels everywhere.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, assert_valid_names, minimal};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::Api;

#[tokio::test]
async fn dotted_and_60_character_names_give_valid_names_everywhere() {
    let h = Harness::start().await;
    let long = format!("m{}", "x".repeat(59));
    assert_eq!(long.len(), 60);
    for name in ["llama-3.1-8b", long.as_str()] {
        h.create(&minimal(name, "default")).await;
        h.wait_ready("default", name).await;
    }
    let objects = h.owned("default").await;
    assert!(objects.len() >= 2 * 10, "{}", objects.len());
    assert_valid_names(&objects);
    let names: Vec<&str> = objects
        .iter()
        .filter_map(|(_, o)| o["metadata"]["name"].as_str())
        .collect();
    assert!(names.contains(&"llama-3-1-8b-epp"), "{names:?}");
    assert!(names.contains(&"llama-3.1-8b-decode"), "{names:?}");
    let cr: Option<ClusterRoleBinding> = Api::all(h.client.clone())
        .get_opt("default-llama-3-1-8b-epp")
        .await
        .unwrap();
    assert!(cr.is_some());
}
