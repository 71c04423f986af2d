//! The EPP's ServiceAccount, Role/RoleBinding, leader-election RoleBinding, metrics-auth
//! ClusterRoleBinding and token Secret, and the rules of the two ClusterRoles the install ships
//! for every Endpoint Picker.
//!
//! Contract: the Role lets the EPP watch pods, inference objectives, model rewrites and pools
//! in its namespace. Two grants come from ClusterRoles shipped once in the install
//! (`deploy/modelservice-operator/epp_roles.yaml`, whose rules are [`metrics_auth_rules`] and
//! [`leader_election_rules`]), never created per ModelService: the leases and events of leader
//! election (replicas > 1), bound in the EPP's namespace by a RoleBinding
//! `<epp>-leader-election`; and the token reviews, subject access reviews and `GET /metrics`
//! the EPP's authenticated metrics endpoint needs, bound cluster-wide by a ClusterRoleBinding
//! `<namespace>-<epp>` (upstream's name). The operator binds them with the `bind` verb on those
//! two names, so it holds none of their permissions for the Endpoint Picker, and the
//! install's admission policy lets it bind nothing else. The ClusterRoleBinding carries the
//! parent's labels and annotation ([`crate::labels::parent_labels`]), because no owner
//! reference can reach it and its name is ambiguous across namespaces; the token Secret gives
//! Prometheus a bearer token of the EPP's ServiceAccount.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{
    ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
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

/// The shipped ClusterRole every Endpoint Picker's metrics endpoint is bound to.
pub const METRICS_AUTH_CLUSTER_ROLE: &str = "kinfer-modelservice-epp-metrics";
/// The shipped ClusterRole an Endpoint Picker that elects a leader is bound to in its namespace.
pub const LEADER_ELECTION_CLUSTER_ROLE: &str = "kinfer-modelservice-epp-leader-election";

/// The rules of [`METRICS_AUTH_CLUSTER_ROLE`]: what an authenticated metrics endpoint needs.
pub fn metrics_auth_rules() -> Vec<PolicyRule> {
    vec![
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
    ]
}

/// The rules of [`LEADER_ELECTION_CLUSTER_ROLE`]: its Lease and its events.
pub fn leader_election_rules() -> Vec<PolicyRule> {
    vec![
        rule(
            &["coordination.k8s.io"],
            &["leases"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ),
        rule(&[""], &["events"], &["create", "patch"]),
    ]
}

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
pub fn role(name: &str, namespace: &str, labels: BTreeMap<String, String>) -> Role {
    let rules = vec![
        rule(&[""], &["pods"], READ),
        rule(
            &["inference.networking.x-k8s.io"],
            &["inferenceobjectives", "inferencemodelrewrites"],
            READ,
        ),
        rule(&["inference.networking.k8s.io"], &["inferencepools"], READ),
    ];
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

/// The RoleBinding `binding` of [`LEADER_ELECTION_CLUSTER_ROLE`] to the ServiceAccount
/// `account`, in its namespace.
pub fn leader_election_binding(
    binding: &str,
    account: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
) -> RoleBinding {
    RoleBinding {
        metadata: object_meta(binding, Some(namespace), labels, BTreeMap::new()),
        role_ref: role_ref("ClusterRole", LEADER_ELECTION_CLUSTER_ROLE),
        subjects: Some(vec![subject(account, namespace)]),
    }
}

/// The ClusterRoleBinding `binding` of [`METRICS_AUTH_CLUSTER_ROLE`] to the EPP
/// ServiceAccount; `labels` and `annotations` name its parent (no owner reference reaches a
/// cluster-scoped object).
pub fn cluster_role_binding(
    binding: &str,
    account: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: object_meta(binding, None, labels, annotations),
        role_ref: role_ref("ClusterRole", METRICS_AUTH_CLUSTER_ROLE),
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
