//! What the operators may grant, enforced by the real API server: the ValidatingAdmissionPolicy
//! of `deploy/aim-operator/rbac_fence.yaml` lets the AIM operator's ServiceAccount write only
//! the Roles and RoleBindings of its download pods (docs/operations.md, "Security model").

use std::time::Duration;

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kinfer_builders::discovery_job::progress_reporter;
use kinfer_builders::meta::Parent;
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use kube::api::{Api, PostParams};

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
    // The policy is in force once the API server's policy informer has it: until then the
    // wider Role goes through.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let refusal = loop {
        match create(&roles, &wider).await {
            Err(message) => break message,
            Ok(()) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Ok(()) => panic!("the policy never refused a wider Role"),
        }
    };
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
