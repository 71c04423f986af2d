//! The EPP's ServiceAccount, Role/RoleBinding, metrics-auth ClusterRole/ClusterRoleBinding and
//! token Secret.
//!
//! Contract: the Role lets the EPP watch pods, inference objectives, model rewrites and pools
//! in its namespace, plus leases and events when it elects a leader (replicas > 1); the
//! ClusterRole (cluster-scoped, named `<namespace>-<epp>`) grants token reviews, subject access
//! reviews and `GET /metrics`, which the EPP's authenticated metrics endpoint needs, and it and
//! its binding carry the parent's labels and annotation ([`crate::labels::parent_labels`]),
//! because no owner reference can reach them and their name is ambiguous across namespaces;
//! the token Secret gives Prometheus a bearer token of the EPP's ServiceAccount.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use crate::meta::object_meta;

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..PolicyRule::default()
    }
}

const READ: &[&str] = &["get", "list", "watch"];

/// The EPP ServiceAccount (no automatic token mount beyond the pod's own).
pub fn service_account(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
) -> ServiceAccount {
    ServiceAccount {
        metadata: object_meta(name, Some(namespace), labels, BTreeMap::new()),
        ..ServiceAccount::default()
    }
}

/// The namespaced Role.
pub fn role(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    leader_election: bool,
) -> Role {
    let mut rules = vec![
        rule(&[""], &["pods"], READ),
        rule(
            &["inference.networking.x-k8s.io"],
            &["inferenceobjectives", "inferencemodelrewrites"],
            READ,
        ),
        rule(&["inference.networking.k8s.io"], &["inferencepools"], READ),
    ];
    if leader_election {
        rules.push(rule(
            &["coordination.k8s.io"],
            &["leases"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ));
        rules.push(rule(&[""], &["events"], &["create", "patch"]));
    }
    Role {
        metadata: object_meta(name, Some(namespace), labels, BTreeMap::new()),
        rules: Some(rules),
    }
}

fn subject(name: &str, namespace: &str) -> Subject {
    Subject {
        kind: "ServiceAccount".to_owned(),
        name: name.to_owned(),
        namespace: Some(namespace.to_owned()),
        api_group: None,
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: "rbac.authorization.k8s.io".to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
    }
}

/// The RoleBinding of the Role to the ServiceAccount (all three share `name`).
pub fn role_binding(name: &str, namespace: &str, labels: BTreeMap<String, String>) -> RoleBinding {
    RoleBinding {
        metadata: object_meta(name, Some(namespace), labels, BTreeMap::new()),
        role_ref: role_ref("Role", name),
        subjects: Some(vec![subject(name, namespace)]),
    }
}

/// The metrics-auth ClusterRole; `labels` and `annotations` name its parent (no owner
/// reference reaches a cluster-scoped object).
pub fn cluster_role(
    name: &str,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
) -> ClusterRole {
    ClusterRole {
        metadata: object_meta(name, None, labels, annotations),
        rules: Some(vec![
            rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
            rule(
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
                &["create"],
            ),
            PolicyRule {
                non_resource_urls: Some(vec!["/metrics".to_owned()]),
                verbs: vec!["get".to_owned()],
                ..PolicyRule::default()
            },
        ]),
        aggregation_rule: None,
    }
}

/// The ClusterRoleBinding of `cluster_role` to the EPP ServiceAccount.
pub fn cluster_role_binding(
    cluster_role: &str,
    account: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: object_meta(cluster_role, None, labels, annotations),
        role_ref: role_ref("ClusterRole", cluster_role),
        subjects: Some(vec![subject(account, namespace)]),
    }
}

/// A long-lived token of `account` for Prometheus.
pub fn token_secret(
    name: &str,
    namespace: &str,
    account: &str,
    labels: BTreeMap<String, String>,
) -> Secret {
    Secret {
        metadata: object_meta(
            name,
            Some(namespace),
            labels,
            BTreeMap::from([(
                "kubernetes.io/service-account.name".to_owned(),
                account.to_owned(),
            )]),
        ),
        type_: Some("kubernetes.io/service-account-token".to_owned()),
        ..Secret::default()
    }
}
