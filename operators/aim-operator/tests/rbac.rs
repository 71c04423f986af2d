//! The AIM operator's ClusterRole (deploy/aim-operator/cluster_role.yaml) grants every kind
//! and verb the controllers use.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use k8s_openapi::api::rbac::v1::ClusterRole;

fn role() -> ClusterRole {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/aim-operator/cluster_role.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

fn allows(role: &ClusterRole, group: &str, resource: &str, verb: &str) -> bool {
    role.rules.iter().flatten().any(|r| {
        r.api_groups.iter().flatten().any(|g| g == group)
            && r.resources.iter().flatten().any(|x| x == resource)
            && r.verbs.iter().any(|v| v == verb || v == "*")
    })
}

#[test]
fn the_cluster_role_covers_what_the_serving_controllers_use() {
    let role = role();
    let apply = ["get", "list", "watch", "create", "patch"];
    let mut missing = Vec::new();
    let mut need = |group: &str, resource: &str, verbs: &[&str]| {
        for v in verbs {
            if !allows(&role, group, resource, v) {
                missing.push(format!("{group}/{resource}: {v}"));
            }
        }
    };
    for kind in ["aimservices", "aimtemplatecaches", "aimartifacts"] {
        need("aim.eai.amd.com", kind, &[&apply[..], &["delete"]].concat());
        need(
            "aim.eai.amd.com",
            &format!("{kind}/status"),
            &["get", "patch"],
        );
        need(
            "aim.eai.amd.com",
            &format!("{kind}/finalizers"),
            &["update"],
        );
    }
    need(
        "autoscaling",
        "horizontalpodautoscalers",
        &[&apply[..], &["delete"]].concat(),
    );
    need(
        "serving.kserve.io",
        "inferenceservices",
        &[&apply[..], &["delete"]].concat(),
    );
    need(
        "gateway.networking.k8s.io",
        "httproutes",
        &[&apply[..], &["delete"]].concat(),
    );
    need("batch", "jobs", &[&apply[..], &["delete"]].concat());
    need("", "persistentvolumeclaims", &apply);
    need("", "pods", &["get", "list", "watch"]);
    need("", "pods/log", &["get"]);
    need("", "namespaces", &["get"]);
    assert!(missing.is_empty(), "not granted: {missing:#?}");
}
