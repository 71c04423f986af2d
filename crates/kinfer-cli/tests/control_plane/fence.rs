//! What the operators may grant, enforced by the real API server: the ValidatingAdmissionPolicy
//! of `deploy/aim-operator/rbac_fence.yaml` lets the AIM operator's ServiceAccount write only
//! the Roles and RoleBindings of its download pods; the one of
//! `deploy/modelservice-operator/rbac_fence.yaml` lets the ModelService operator's write only
//! the Endpoint Picker's Role and bindings (to the ClusterRoles the install ships, which it may
//! bind without holding them) and token Secret, and delete only cluster RBAC made for a
//! ModelService (docs/operations.md, "Security model").

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kinfer_builders::discovery_job::progress_reporter;
use kinfer_builders::epp::{EppInput, epp_bundle};
use kinfer_builders::meta::Parent;
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use kube::api::{Api, DeleteParams, PostParams};

use crate::install::install;
use crate::{client, client_as, create_unless_exists, ensure_namespace, plane};

const NS: &str = "fence-aim";
const OPERATOR: &str = "system:serviceaccount:aim-system:aim-operator";

/// `create` of `object` as the operator: `Ok`, or the refusal's message.
async fn create<K>(api: &Api<K>, object: &K) -> Result<(), String>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match api.create(&dry, object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) => Err(s.message.clone()),
        Err(e) => panic!("{e}"),
    }
}

/// `delete` of `name` as the operator, dry run: `Ok`, or the refusal's message.
async fn delete<K>(api: &Api<K>, name: &str) -> Result<(), String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let dry = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    match api.delete(name, &dry).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) => Err(s.message.clone()),
        Err(e) => panic!("{e}"),
    }
}

/// Polls `attempt` (200 ms steps, at most 30 s) until it is refused, and returns the refusal:
/// a policy is in force once the API server's policy informer has it, and the server gives no
/// event for that.
async fn first_refusal<F, Fut>(what: &str, attempt: F) -> String
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match attempt().await {
            Err(message) => return message,
            Ok(()) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Ok(()) => panic!("the policy never refused {what}"),
        }
    }
}

#[tokio::test]
async fn the_aim_operator_may_grant_only_its_download_roles() {
    let plane = tokio::task::spawn_blocking(plane).await.unwrap();
    tokio::task::spawn_blocking(move || install(plane, "aim-operator"))
        .await
        .unwrap();
    let (admin, _) = client().await;
    ensure_namespace(&admin, NS).await;
    let operator = client_as(plane.kubeconfig(), OPERATOR).await;
    let roles: Api<Role> = Api::namespaced(operator.clone(), NS);
    let bindings: Api<RoleBinding> = Api::namespaced(operator, NS);

    let parent = Parent {
        name: Dns1123Subdomain::new("qwen-artifact").unwrap(),
        namespace: Dns1123Label::new(NS).unwrap(),
        managed_by: "aim-operator".to_owned(),
    };
    let reporter = progress_reporter(&parent, "6f1c2d3e-0000-4000-8000-000000000001", &[]).unwrap();

    // A Role that may do more than its artifact's status (reading pods, which the operator
    // holds, so RBAC's own escalation check lets it through).
    let mut wider = reporter.role.clone();
    wider
        .rules
        .as_mut()
        .unwrap()
        .push(k8s_openapi::api::rbac::v1::PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["pods".to_owned()]),
            verbs: vec!["get".to_owned()],
            ..Default::default()
        });
    // Until the policy is in force the wider Role goes through.
    let refusal = first_refusal("a wider Role", || create(&roles, &wider)).await;
    assert!(refusal.contains("kinfer-aim-operator-rbac"), "{refusal}");

    // What the operator really writes is accepted (the Role for real: a binding's own
    // escalation check reads the Role it binds).
    create_unless_exists(&roles, &reporter.role, "the download Role").await;
    create(&bindings, &reporter.binding).await.unwrap();

    // Any other Role or binding is refused.
    let mut renamed = reporter.role.clone();
    renamed.metadata.name = Some("admin-helper".to_owned());
    // The operator's own ClusterRole: RBAC lets it bind what it holds; the policy does not.
    let mut to_cluster_role = reporter.binding.clone();
    to_cluster_role.role_ref.kind = "ClusterRole".to_owned();
    to_cluster_role.role_ref.name = "aim-operator".to_owned();
    let mut to_another_account = reporter.binding.clone();
    to_another_account.subjects.as_mut().unwrap()[0].name = "default".to_owned();
    // A tenant's Role whose permissions the operator holds.
    let (admin, _) = client().await;
    let tenant_role: Role = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "tenant-admin", "namespace": NS},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }))
    .unwrap();
    create_unless_exists(
        &Api::<Role>::namespaced(admin, NS),
        &tenant_role,
        "the tenant's Role",
    )
    .await;
    let mut to_a_foreign_role = reporter.binding.clone();
    to_a_foreign_role.metadata.name = Some("tenant-admin".to_owned());
    to_a_foreign_role.role_ref.name = "tenant-admin".to_owned();
    to_a_foreign_role.subjects.as_mut().unwrap()[0].name = "tenant-admin".to_owned();
    let message = create(&roles, &renamed)
        .await
        .expect_err("a Role of another name");
    assert!(message.contains("kinfer-aim-operator-rbac"), "{message}");
    for (what, binding) in [
        ("to a ClusterRole", to_cluster_role),
        ("to another ServiceAccount", to_another_account),
        ("to a Role not named like a download's", to_a_foreign_role),
    ] {
        let message = create(&bindings, &binding).await.expect_err(what);
        assert!(
            message.contains("kinfer-aim-operator-rbac"),
            "{what}: {message}"
        );
    }

    // The fence is the operator's alone: an administrator binds what they like.
    let (admin, _) = client().await;
    let admin_bindings: Api<RoleBinding> = Api::namespaced(admin, NS);
    let mut admin_binding = reporter.binding.clone();
    admin_binding.role_ref.kind = "ClusterRole".to_owned();
    admin_binding.role_ref.name = "view".to_owned();
    create(&admin_bindings, &admin_binding).await.unwrap();
}

const MS_NS: &str = "fence-ms";
const MS_OPERATOR: &str = "system:serviceaccount:modelservice-system:modelservice-operator";
const MS_POLICY: &str = "kinfer-modelservice-operator-rbac";

#[tokio::test]
async fn the_modelservice_operator_may_grant_only_the_endpoint_pickers_roles() {
    let plane = tokio::task::spawn_blocking(plane).await.unwrap();
    tokio::task::spawn_blocking(move || install(plane, "modelservice-operator"))
        .await
        .unwrap();
    let (admin, _) = client().await;
    ensure_namespace(&admin, MS_NS).await;
    let operator = client_as(plane.kubeconfig(), MS_OPERATOR).await;
    let roles: Api<Role> = Api::namespaced(operator.clone(), MS_NS);
    let bindings: Api<RoleBinding> = Api::namespaced(operator.clone(), MS_NS);
    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(operator.clone());
    let cluster_roles: Api<ClusterRole> = Api::all(operator.clone());
    let secrets: Api<Secret> = Api::namespaced(operator, MS_NS);

    // What the operator writes for an Endpoint Picker of two replicas with metrics auth.
    let input: EppInput = serde_json::from_value(serde_json::json!({
        "parent": {"name": "llama", "namespace": MS_NS, "managedBy": "kinfer-modelservice"},
        "image": "epp", "replicas": 2, "port": 9002, "config": {"kind": "default"},
        "metricsAuth": true
    }))
    .unwrap();
    let epp = epp_bundle(&input).unwrap();
    let election = epp.leader_election_binding.clone().unwrap();
    let metrics = epp.cluster_role_binding.clone().unwrap();
    let mut token = epp.token_secret.clone().unwrap();
    // The engine marks every object it applies.
    token
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(
            "kinfer.dev/managed-by".to_owned(),
            "kinfer-modelservice".to_owned(),
        );

    // A Role reading Secrets: the operator holds that, so RBAC's escalation check lets it
    // through; the policy does not.
    let mut wider = epp.role.clone();
    let first = &mut wider.rules.as_mut().unwrap()[0];
    first.resources = Some(vec!["secrets".to_owned()]);
    first.verbs = vec!["get".to_owned()];
    let refusal = first_refusal("a Role reading Secrets", || create(&roles, &wider)).await;
    assert!(refusal.contains(MS_POLICY), "{refusal}");

    // What the operator really writes is accepted, the bindings of the shipped ClusterRoles
    // through `bind` alone (the operator holds neither leases nor `/metrics`).
    create_unless_exists(&roles, &epp.role, "the Endpoint Picker's Role").await;
    for (what, result) in [
        (
            "its RoleBinding",
            create(&bindings, &epp.role_binding).await,
        ),
        (
            "the leader-election binding",
            create(&bindings, &election).await,
        ),
        (
            "the metrics binding",
            create(&cluster_bindings, &metrics).await,
        ),
        ("the token Secret", create(&secrets, &token).await),
    ] {
        result.unwrap_or_else(|e| panic!("{what}: {e}"));
    }

    // Any other binding or Secret is refused by the policy. The operator's own ClusterRole:
    // RBAC lets it bind what it holds.
    let mut own_role_cluster_wide = metrics.clone();
    own_role_cluster_wide.role_ref.name = "modelservice-operator".to_owned();
    let mut metrics_renamed = metrics.clone();
    metrics_renamed.metadata.name = Some("someone-else".to_owned());
    let mut metrics_to_default = metrics.clone();
    metrics_to_default.subjects.as_mut().unwrap()[0].name = "default".to_owned();
    let mut own_role_here = election.clone();
    own_role_here.role_ref.name = "modelservice-operator".to_owned();
    let mut role_to_default = epp.role_binding.clone();
    role_to_default.subjects.as_mut().unwrap()[0].name = "default".to_owned();
    let opaque: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "loot", "namespace": MS_NS}, "stringData": {"k": "v"}
    }))
    .unwrap();
    let mut token_of_default = token.clone();
    token_of_default
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(
            "kubernetes.io/service-account.name".to_owned(),
            "default".to_owned(),
        );
    // Named by the rule, for a ServiceAccount that is no Endpoint Picker's.
    let mut well_named_token_of_default = token_of_default.clone();
    well_named_token_of_default.metadata.name = Some("default-sa-metrics-reader-secret".to_owned());
    let mut unmarked_token = token.clone();
    unmarked_token.metadata.labels = None;
    // A Role and binding named alike, but not like an Endpoint Picker.
    let mut role_not_epp = epp.role.clone();
    role_not_epp.metadata.name = Some("secret-reader".to_owned());
    let mut binding_not_epp = epp.role_binding.clone();
    binding_not_epp.metadata.name = Some("config-reader".to_owned());
    binding_not_epp.role_ref.name = "config-reader".to_owned();
    binding_not_epp.subjects.as_mut().unwrap()[0].name = "config-reader".to_owned();
    // The Role the last binding names exists (RBAC's escalation check reads it before the
    // policy runs), created by an administrator.
    let (admin, _) = client().await;
    let mut config_reader = role_not_epp.clone();
    config_reader.metadata.name = Some("config-reader".to_owned());
    create_unless_exists(
        &Api::<Role>::namespaced(admin, MS_NS),
        &config_reader,
        "a Role named like a tenant's",
    )
    .await;
    let refusals = [
        (
            "the operator's ClusterRole, cluster-wide",
            create(&cluster_bindings, &own_role_cluster_wide).await,
        ),
        (
            "the metrics role under another name",
            create(&cluster_bindings, &metrics_renamed).await,
        ),
        (
            "the metrics role to another account",
            create(&cluster_bindings, &metrics_to_default).await,
        ),
        (
            "the operator's ClusterRole in a namespace",
            create(&bindings, &own_role_here).await,
        ),
        (
            "the Role to another account",
            create(&bindings, &role_to_default).await,
        ),
        ("an opaque Secret", create(&secrets, &opaque).await),
        (
            "another account's token",
            create(&secrets, &token_of_default).await,
        ),
        (
            "a token of an account that is no Endpoint Picker's",
            create(&secrets, &well_named_token_of_default).await,
        ),
        (
            "an unmarked token Secret",
            create(&secrets, &unmarked_token).await,
        ),
        (
            "a Role not named like an Endpoint Picker's",
            create(&roles, &role_not_epp).await,
        ),
        (
            "a binding not named like an Endpoint Picker's",
            create(&bindings, &binding_not_epp).await,
        ),
    ];
    for (what, result) in refusals {
        let message = result.expect_err(what);
        assert!(message.contains(MS_POLICY), "{what}: {message}");
    }

    // Deletes: only cluster RBAC made for a ModelService and the token Secrets. A per-ModelService
    // ClusterRole of an earlier install may go; a built-in one, the operator's own binding, a
    // tenant's Secret may not.
    let (admin, _) = client().await;
    let legacy: ClusterRole = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "fence-ms-llama-epp", "labels": {
            "kinfer.dev/managed-by": "kinfer-modelservice",
            "kinfer.dev/parent-namespace": MS_NS, "kinfer.dev/parent-name": "llama"}},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    }))
    .unwrap();
    create_unless_exists(
        &Api::<ClusterRole>::all(admin.clone()),
        &legacy,
        "a legacy ClusterRole",
    )
    .await;
    let tenant: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "tenant-credentials", "namespace": MS_NS},
        "stringData": {"password": "hunter2"}
    }))
    .unwrap();
    create_unless_exists(
        &Api::<Secret>::namespaced(admin.clone(), MS_NS),
        &tenant,
        "a tenant Secret",
    )
    .await;
    delete(&cluster_roles, "fence-ms-llama-epp").await.unwrap();
    for (what, result) in [
        (
            "the built-in view ClusterRole",
            delete(&cluster_roles, "view").await,
        ),
        (
            "the operator's own binding",
            delete(&cluster_bindings, "modelservice-operator").await,
        ),
        (
            "a tenant's Secret",
            delete(&secrets, "tenant-credentials").await,
        ),
    ] {
        let message = result.expect_err(what);
        assert!(message.contains(MS_POLICY), "{what}: {message}");
    }

    // The fence is the operator's alone: an administrator binds what they like.
    create(
        &Api::<ClusterRoleBinding>::all(admin),
        &own_role_cluster_wide,
    )
    .await
    .unwrap();
}
