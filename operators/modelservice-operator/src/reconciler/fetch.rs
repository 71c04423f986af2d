//! Fetch: what a ModelService depends on beyond its listed children.
//!
//! Contract: reads (but for the one write below), never fails as a whole (errors are kept per item). It snapshots the
//! optional CRDs once, so compose and plan of one reconcile agree, and reads the Endpoint
//! Picker's ClusterRoleBinding from the engine's index of the marked ones
//! ([`crate::cluster_rbac`]) or, when the index does not hold it (not created yet, or
//! unmarked: upstream's), by name: the engine lists only namespaced children, and the
//! name (`<namespace>-<epp>`) is ambiguous across namespaces (`a-b`/`c` and `a`/`b-c` both give
//! `a-b-c-epp`), so [`cluster_rbac_owner`] decides from the binding's parent labels whether it
//! is this ModelService's.
//!
//! One write happens here, before anything is applied: a binding of this ModelService (or
//! upstream's for it) whose `roleRef` is not the shipped metrics ClusterRole (an earlier
//! kinfer's or upstream's per-ModelService ClusterRole) is deleted, with the ClusterRole it
//! referenced ([`crate::finalizer::retire_legacy_binding`]): a binding's `roleRef` is
//! immutable, so the plan's apply then creates it anew, bound to the shipped role.

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kinfer_api::modelservice::ModelService;
use kinfer_builders::{epp, labels, naming};
use kinfer_state::OwnerIndex;
use kinfer_state::health::FetchResult;
use kube::{Api, Client, ResourceExt};

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

/// Whose a live metrics-auth ClusterRoleBinding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterRbacOwner {
    /// Its parent labels name this ModelService.
    This,
    /// It carries no parent labels and binds nothing but this ModelService's Endpoint Picker
    /// (created by upstream's operator, or by kinfer before the labels): adopted, and labelled
    /// by the next apply.
    Unlabelled,
    /// Another ModelService's (its labels name another parent, or it binds another
    /// namespace's ServiceAccount): left alone.
    Other,
}

/// True when `binding` binds nothing but `namespace`'s ServiceAccount `sa` (or nothing at
/// all).
fn binds_only(binding: &ClusterRoleBinding, namespace: &str, sa: &str) -> bool {
    binding.subjects.iter().flatten().all(|s| {
        s.kind == "ServiceAccount" && s.name == sa && s.namespace.as_deref() == Some(namespace)
    })
}

/// Whose `binding` is, seen from `ms`; see [`ClusterRbacOwner`].
pub fn cluster_rbac_owner(binding: &ClusterRoleBinding, ms: &ModelService) -> ClusterRbacOwner {
    let namespace = ms.namespace().unwrap_or_default();
    let meta = &binding.metadata;
    if let Some((ns, name)) = labels::parent_ref(meta) {
        return if ns == namespace && name == ms.name_any() {
            ClusterRbacOwner::This
        } else {
            ClusterRbacOwner::Other
        };
    }
    let labelled = meta.labels.as_ref().is_some_and(|l| {
        l.contains_key(labels::PARENT_NAME) || l.contains_key(labels::PARENT_NAMESPACE)
    }) || meta
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(labels::PARENT_ANNOTATION));
    let sa = epp_name(ms).unwrap_or_default();
    if !labelled && binds_only(binding, &namespace, &sa) {
        ClusterRbacOwner::Unlabelled
    } else {
        ClusterRbacOwner::Other
    }
}

/// Whether `binding` is `ms`'s to retire: its parent labels name `ms`, or it is upstream's
/// for `ms` (unlabelled by kinfer, upstream's labels, binding only `ms`'s Endpoint Picker).
/// Anything else of that name is left to the plan, which refuses it as taken.
fn retirable(binding: &ClusterRoleBinding, ms: &ModelService) -> bool {
    match cluster_rbac_owner(binding, ms) {
        ClusterRbacOwner::This => true,
        ClusterRbacOwner::Unlabelled => super::adopt::adoptable_meta(ms, &binding.metadata),
        ClusterRbacOwner::Other => false,
    }
}

/// The ClusterRoleBinding `name` (from `index` when that holds it), after retiring it when it
/// is `ms`'s and binds another role than the shipped one (see the module contract).
async fn current_binding(
    client: &Client,
    ms: &ModelService,
    name: &str,
    index: Option<&OwnerIndex>,
) -> Result<Option<ClusterRoleBinding>, kube::Error> {
    let live = match index.and_then(|i| crate::cluster_rbac::binding(i, name)) {
        Some(cached) => Some(cached),
        None => {
            Api::<ClusterRoleBinding>::all(client.clone())
                .get_opt(name)
                .await?
        }
    };
    match live {
        Some(binding)
            if binding.role_ref.name != epp::METRICS_AUTH_CLUSTER_ROLE
                && retirable(&binding, ms) =>
        {
            crate::finalizer::retire_legacy_binding(client, ms, &binding).await?;
            Ok(None)
        }
        other => Ok(other),
    }
}

/// Reads the dependencies of `ms`; the binding from `index` when that holds it.
pub async fn fetch(
    client: &Client,
    ms: &ModelService,
    config: &OperatorConfig,
    crds: OptionalCrds,
    index: Option<&OwnerIndex>,
) -> Fetched {
    let cluster_binding = match (config.metrics_endpoint_auth, cluster_rbac_name(ms)) {
        (true, Some(name)) => Some(current_binding(client, ms, &name, index).await),
        _ => None,
    };
    Fetched {
        crds,
        cluster_binding,
    }
}
