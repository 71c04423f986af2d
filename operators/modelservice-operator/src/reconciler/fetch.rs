//! Fetch: what a ModelService depends on beyond its listed children.
//!
//! Contract: reads only, never fails as a whole (errors are kept per item). It snapshots the
//! optional CRDs once, so compose and plan of one reconcile agree, and reads the Endpoint
//! Picker's ClusterRoleBinding by name: cluster-scoped objects carry no parent label, so the
//! engine does not list them, and their name (`<namespace>-<epp>`) is ambiguous across
//! namespaces, so the binding's subject decides whether it is ours.

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kinfer_api::modelservice::ModelService;
use kinfer_builders::naming;
use kinfer_state::health::FetchResult;
use kube::{Api, Client, ResourceExt};

use super::resolve::wants_cluster_rbac;
use crate::config::OperatorConfig;
use crate::optional_crds::OptionalCrds;

/// What fetch read.
#[derive(Debug)]
pub struct Fetched {
    /// The optional CRDs for this reconcile.
    pub crds: OptionalCrds,
    /// The metrics-auth ClusterRoleBinding, when metrics auth wants one (`None` otherwise).
    pub cluster_binding: Option<FetchResult<ClusterRoleBinding>>,
}

/// The cluster RBAC name of `ms` (`<namespace>-<epp>`), when it can be derived.
pub fn cluster_rbac_name(ms: &ModelService) -> Option<String> {
    let namespace = ms.namespace()?;
    let epp = naming::modelservice::epp_name(&ms.name_any()).ok()?;
    naming::modelservice::epp_cluster_rbac_name(&namespace, &epp)
        .ok()
        .map(|n| n.to_string())
}

/// The EPP ServiceAccount name of `ms`.
pub fn epp_name(ms: &ModelService) -> Option<String> {
    naming::modelservice::epp_name(&ms.name_any())
        .ok()
        .map(|n| n.to_string())
}

/// True when `binding` binds nothing but `namespace`'s ServiceAccount `sa` (or nothing at
/// all): the object is ours to overwrite or delete.
pub fn binding_is_ours(binding: &ClusterRoleBinding, namespace: &str, sa: &str) -> bool {
    binding.subjects.iter().flatten().all(|s| {
        s.kind == "ServiceAccount" && s.name == sa && s.namespace.as_deref() == Some(namespace)
    })
}

/// Reads the dependencies of `ms`.
pub async fn fetch(
    client: &Client,
    ms: &ModelService,
    config: &OperatorConfig,
    crds: OptionalCrds,
) -> Fetched {
    let cluster_binding = match (wants_cluster_rbac(config), cluster_rbac_name(ms)) {
        (true, Some(name)) => Some(
            Api::<ClusterRoleBinding>::all(client.clone())
                .get_opt(&name)
                .await,
        ),
        _ => None,
    };
    Fetched {
        crds,
        cluster_binding,
    }
}
