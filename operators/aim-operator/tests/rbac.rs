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

/// A leaked operator token must not expose every Secret: pull secrets are read by name.
#[test]
fn the_cluster_role_cannot_list_or_watch_secrets() {
    let role = role();
    assert!(allows(&role, "", "secrets", "get"));
    for verb in ["list", "watch"] {
        assert!(!allows(&role, "", "secrets", verb), "{verb} secrets");
    }
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
    // The start-up check, and the serving CRDs followed while running.
    need(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &["get", "list", "watch"],
    );
    // The download pod's identity, listed and watched like every child so drift is repaired.
    need("", "serviceaccounts", &[&apply[..], &["delete"]].concat());
    for kind in ["roles", "rolebindings"] {
        need(
            "rbac.authorization.k8s.io",
            kind,
            &[&apply[..], &["delete"]].concat(),
        );
    }
    assert!(missing.is_empty(), "not granted: {missing:#?}");
}

/// Kubernetes lets a client create a Role (or bind one) only with every permission it grants,
/// unless it holds `escalate` (or `bind`), which the operator must not: every rule of the
/// Role the operator builds for a download pod must be covered by the operator's own
/// ClusterRole, resource names included (a rule without names covers them all).
#[test]
fn the_operator_holds_every_permission_it_grants_a_download_pod() {
    use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};

    let role = role();
    let parent = kinfer_builders::Parent {
        name: Dns1123Subdomain::new("model").unwrap(),
        namespace: Dns1123Label::new("ns").unwrap(),
        managed_by: "aim-artifact-controller".into(),
    };
    let reporter =
        kinfer_builders::discovery_job::progress_reporter(&parent, "uid", &["mirror".into()])
            .unwrap();
    let granted = reporter.role.rules.unwrap();
    assert!(!granted.is_empty());
    let mut missing = Vec::new();
    for rule in &granted {
        assert!(rule.non_resource_urls.is_none(), "{rule:?}");
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    let covered = role.rules.iter().flatten().any(|r| {
                        r.api_groups.iter().flatten().any(|g| g == group)
                            && r.resources.iter().flatten().any(|x| x == resource)
                            && r.verbs.iter().any(|v| v == verb)
                            && r.resource_names.as_ref().is_none_or(|names| {
                                rule.resource_names
                                    .iter()
                                    .flatten()
                                    .all(|n| names.contains(n))
                            })
                    });
                    if !covered {
                        missing.push(format!("{group}/{resource}: {verb}"));
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "granted but not held: {missing:#?}");
    for r in role.rules.iter().flatten() {
        for v in &r.verbs {
            assert!(
                !matches!(v.as_str(), "escalate" | "bind" | "impersonate" | "*"),
                "the operator holds {v}: {r:?}"
            );
        }
    }
}
