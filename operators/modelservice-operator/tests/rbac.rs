//! `deploy/modelservice-operator` RBAC against what the operator really does: the binary path
//! (`app::run`, leader election on) reconciles a ModelService to Ready and deletes it through
//! the finalizer; every request it sent (the test cluster counts them by verb and resource)
//! must be granted, Secrets must never be listed or watched (nor be listable), and every rule
//! of the Roles and ClusterRoles it created must be one it holds itself (Kubernetes refuses to
//! let anyone grant permissions they lack).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use clap::Parser;
use common::{Harness, minimal};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use kinfer_api::modelservice::ModelService;
use kinfer_builders::epp;
use kube::api::{Api, DeleteParams, ListParams};
use modelservice_operator::app::{RunArgs, run};
use modelservice_operator::{OperatorConfig, OptionalCrds};
use tokio::sync::oneshot;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

/// The operator's rules: its ClusterRole (everywhere) and its leader-election Role (in its own
/// namespace, where the Lease lives).
fn deployed_rules() -> (Vec<PolicyRule>, Vec<PolicyRule>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/modelservice-operator");
    let rules = |file: &str, kind: &str| -> Vec<PolicyRule> {
        kinfer_crdcheck::load_yaml_documents(&dir.join(file))
            .into_iter()
            .filter(|d| d["kind"] == kind)
            .flat_map(|d| serde_json::from_value::<Vec<PolicyRule>>(d["rules"].clone()).unwrap())
            .collect()
    };
    (
        rules("cluster_role.yaml", "ClusterRole"),
        rules("leader_election_role.yaml", "Role"),
    )
}

/// Whether `rules` grant `bind` on the ClusterRole `name`, by name.
fn bindable(rules: &[PolicyRule], name: &str) -> bool {
    rules.iter().any(|r| {
        r.verbs.iter().any(|v| v == "bind")
            && has(r.resources.as_ref(), "clusterroles")
            && has(r.resource_names.as_ref(), name)
    })
}

fn has(list: Option<&Vec<String>>, value: &str) -> bool {
    list.is_some_and(|l| l.iter().any(|v| v == value))
}

/// Whether `rules` grant `verb` on `resource` (plural, with `/subresource`), in any group.
fn grants(rules: &[PolicyRule], verb: &str, resource: &str) -> bool {
    rules
        .iter()
        .any(|r| r.verbs.iter().any(|v| v == verb) && has(r.resources.as_ref(), resource))
}

/// Whether `rules` cover every group × resource × verb (or URL × verb) of `wanted`.
fn covers(rules: &[PolicyRule], wanted: &PolicyRule) -> bool {
    let verbs = &wanted.verbs;
    if let Some(urls) = &wanted.non_resource_urls {
        return urls.iter().all(|u| {
            verbs.iter().all(|v| {
                rules
                    .iter()
                    .any(|r| has(r.non_resource_urls.as_ref(), u) && r.verbs.contains(v))
            })
        });
    }
    let groups = wanted.api_groups.clone().unwrap_or_default();
    let resources = wanted.resources.clone().unwrap_or_default();
    groups.iter().all(|g| {
        resources.iter().all(|res| {
            verbs.iter().all(|v| {
                rules.iter().any(|r| {
                    has(r.api_groups.as_ref(), g)
                        && has(r.resources.as_ref(), res)
                        && r.verbs.contains(v)
                })
            })
        })
    })
}

#[tokio::test]
async fn deployed_rbac_grants_every_request_and_every_rule_the_operator_hands_out() {
    let (operator_rules, lease_rules) = deployed_rules();
    assert!(!operator_rules.is_empty() && !lease_rules.is_empty());
    for verb in ["list", "watch"] {
        assert!(
            !grants(&operator_rules, verb, "secrets"),
            "the operator must not be able to {verb} Secrets"
        );
    }

    let h = Harness::without_operator(&OperatorConfig::default(), OptionalCrds::all()).await;
    // Only what happens from here on counts: the operator, plus this test's own ModelService
    // create/delete and waits (which the operator's rules cover anyway, except create/delete).
    h.cluster.counters().reset();
    let args = Cli::try_parse_from([
        "run",
        "--metrics-addr",
        "127.0.0.1:0",
        "--health-addr",
        "127.0.0.1:0",
        "--leader-elect",
        "--leader-election-namespace",
        "default",
        "--leader-election-identity",
        "modelservice-operator-0",
    ])
    .unwrap()
    .run;
    let (term, shutdown) = oneshot::channel::<()>();
    let operator = tokio::spawn(run(args, h.client.clone(), async move {
        let _ = shutdown.await;
    }));
    let mut ms = minimal("rbac", "team-a");
    ms["spec"]["prefill"] = serde_json::json!({"replicas": 1});
    ms["spec"]["routingProxy"] = serde_json::json!({});
    ms["spec"]["model"]["imagePullSecrets"] = serde_json::json!([{"name": "pull"}]);
    // Two Endpoint Picker replicas elect a leader: the leader-election binding too.
    ms["spec"]["inferencePool"] = serde_json::json!({"endpointPicker": {"replicas": 2}});
    h.create(&ms).await;
    h.wait_ready("team-a", "rbac").await;

    // What the operator handed out must be within what it holds (RBAC escalation check), or
    // a ClusterRole it may bind by name (the shipped Endpoint Picker roles).
    let marked = ListParams::default().labels("kinfer.dev/managed-by=kinfer-modelservice");
    let roles = Api::<Role>::namespaced(h.client.clone(), "team-a")
        .list(&marked)
        .await
        .unwrap();
    assert!(!roles.items.is_empty());
    for rule in roles
        .iter()
        .flat_map(|r| r.rules.clone().unwrap_or_default())
    {
        assert!(
            covers(&operator_rules, &rule),
            "the operator grants what it does not hold: {rule:?}"
        );
    }
    assert!(
        Api::<ClusterRole>::all(h.client.clone())
            .list(&marked)
            .await
            .unwrap()
            .items
            .is_empty(),
        "the operator creates no ClusterRole"
    );
    let cluster_bound: Vec<String> = Api::<ClusterRoleBinding>::all(h.client.clone())
        .list(&marked)
        .await
        .unwrap()
        .iter()
        .map(|b| b.role_ref.clone())
        .chain(
            Api::<RoleBinding>::namespaced(h.client.clone(), "team-a")
                .list(&marked)
                .await
                .unwrap()
                .iter()
                .map(|b| b.role_ref.clone()),
        )
        .filter(|r| r.kind == "ClusterRole")
        .map(|r| r.name)
        .collect();
    assert_eq!(
        cluster_bound.len(),
        2,
        "the metrics and the leader-election bindings: {cluster_bound:?}"
    );
    for role in &cluster_bound {
        assert!(
            bindable(&operator_rules, role),
            "the operator binds a ClusterRole it may not: {role}"
        );
    }

    let api: Api<ModelService> = Api::namespaced(h.client.clone(), "team-a");
    api.delete("rbac", &DeleteParams::default()).await.unwrap();
    common::wait(api, "rbac", "gone", |o: Option<&ModelService>| o.is_none()).await;
    term.send(()).unwrap();
    tokio::time::timeout(common::TIMEOUT, operator)
        .await
        .expect("stops")
        .unwrap()
        .expect("clean stop");

    // This test's own requests the operator does not make (its other ones, the waits and the
    // role listings above, are within the operator's rules anyway).
    let by_test = [("create", "modelservices"), ("delete", "modelservices")];
    let mut missing = Vec::new();
    let snapshot = h.cluster.counters().snapshot();
    for (verb, resource, _) in snapshot.keys() {
        if verb == "discovery" || by_test.contains(&(verb.as_str(), resource.as_str())) {
            continue;
        }
        let granted = grants(&operator_rules, verb, resource)
            || (resource == "leases" && grants(&lease_rules, verb, resource));
        if !granted {
            missing.push(format!("{verb} {resource}"));
        }
    }
    missing.dedup();
    assert!(
        missing.is_empty(),
        "requests the deployed RBAC does not grant: {missing:?}\nall: {:#?}",
        snapshot
            .keys()
            .map(|(v, r, _)| format!("{v} {r}"))
            .collect::<Vec<_>>()
    );
    // The paths that need the less obvious rules were exercised, so the check above means
    // something: the token Secret read by name, the finalizer's label-scoped cluster RBAC
    // listing, the cluster RBAC watch, status by apply, events. (No namespace read: the
    // cleanup runs in a terminating namespace too, and the deployment grants none.)
    for (verb, resource) in [
        ("get", "secrets"),
        ("list", "clusterrolebindings"),
        ("watch", "clusterrolebindings"),
        ("patch", "modelservices/status"),
        ("patch", "modelservices"),
        ("get", "leases"),
    ] {
        assert!(
            snapshot.keys().any(|(v, r, _)| v == verb && r == resource),
            "{verb} {resource} was not exercised"
        );
    }
}

/// The ClusterRoles the install ships for every Endpoint Picker hold exactly the rules the
/// builders name them for, and the operator may bind both.
#[test]
fn the_shipped_endpoint_picker_roles_are_the_builders_and_bindable() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/modelservice-operator");
    let shipped: Vec<ClusterRole> =
        kinfer_crdcheck::load_yaml_documents(&dir.join("epp_roles.yaml"))
            .into_iter()
            .map(|d| serde_json::from_value(d).unwrap())
            .collect();
    let rules_of = |name: &str| {
        shipped
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
            .and_then(|r| r.rules.clone())
            .unwrap_or_else(|| panic!("{name} is not shipped"))
    };
    assert_eq!(
        rules_of(epp::METRICS_AUTH_CLUSTER_ROLE),
        epp::metrics_auth_rules()
    );
    assert_eq!(
        rules_of(epp::LEADER_ELECTION_CLUSTER_ROLE),
        epp::leader_election_rules()
    );
    let (operator_rules, _) = deployed_rules();
    for name in [
        epp::METRICS_AUTH_CLUSTER_ROLE,
        epp::LEADER_ELECTION_CLUSTER_ROLE,
    ] {
        assert!(bindable(&operator_rules, name), "{name}");
    }
    // It holds none of the metrics role's URL grant itself.
    assert!(
        !operator_rules.iter().any(|r| r.non_resource_urls.is_some()),
        "the operator holds a non-resource URL"
    );
}
