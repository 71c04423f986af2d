//! Fetch: what a ModelService depends on beyond its listed children.
//!
//! Contract: reads only, never fails as a whole (errors are kept per item). It snapshots the
//! optional CRDs once, so compose and plan of one reconcile agree, and reads the Endpoint
//! Picker's ClusterRoleBinding from the engine's index of the marked ones
//! ([`crate::cluster_rbac`]) or, when the index does not hold it (not created yet, or
//! unmarked: upstream's), by name: the engine lists only namespaced children, and the
//! name (`<namespace>-<epp>`) is ambiguous across namespaces (`a-b`/`c` and `a`/`b-c` both give
//! `a-b-c-epp`), so [`cluster_rbac_owner`] decides from the binding's parent labels whether it
//! is this ModelService's.
//!
//! It also reads what an earlier operator left for this one to replace
//! ([`super::legacy::read`]).

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kinfer_api::inference_pool::InferencePool;
use kinfer_api::modelservice::ModelService;
use kinfer_builders::{labels, naming};
use kinfer_state::OwnerIndex;
use kinfer_state::health::FetchResult;
use kinfer_state::pipeline::Children;
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
    /// What the plan may retire first ([`super::legacy`]).
    pub legacy: super::legacy::Legacy,
}

impl Fetched {
    /// The metrics-auth ClusterRoleBinding that was read and exists.
    pub fn live_binding(&self) -> Option<&ClusterRoleBinding> {
        self.cluster_binding
            .as_ref()
            .and_then(|b| b.as_ref().ok())
            .and_then(Option::as_ref)
    }
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

/// The ClusterRoleBinding `name`, from `index` when that holds it.
async fn current_binding(
    client: &Client,
    name: &str,
    index: Option<&OwnerIndex>,
) -> Result<Option<ClusterRoleBinding>, kube::Error> {
    match index.and_then(|i| crate::cluster_rbac::binding(i, name)) {
        Some(cached) => Ok(Some(cached)),
        None => {
            Api::<ClusterRoleBinding>::all(client.clone())
                .get_opt(name)
                .await
        }
    }
}

/// Reads the dependencies of `ms`; the binding from `index` when that holds it.
pub async fn fetch(
    client: &Client,
    ms: &ModelService,
    config: &OperatorConfig,
    (crds, children): (OptionalCrds, &Children),
    index: Option<&OwnerIndex>,
) -> Fetched {
    let cluster_binding = match (config.metrics_endpoint_auth, cluster_rbac_name(ms)) {
        (true, Some(name)) => Some(current_binding(client, &name, index).await),
        _ => None,
    };
    // A legacy pool can only be left from before this operator's first apply of the pool
    // `<ms>`: once that is listed as a child, no reconcile looks for one (no steady-state read).
    let own_pool = naming::modelservice::pool_name(&ms.name_any()).is_ok_and(|name| {
        matches!(
            children.fetch::<InferencePool>(ms.namespace().as_deref(), name.as_str()),
            Ok(Some(_))
        )
    });
    let mut fetched = Fetched {
        crds,
        cluster_binding,
        legacy: super::legacy::Legacy::default(),
    };
    fetched.legacy = super::legacy::read(
        client,
        ms,
        fetched.live_binding(),
        crds.inference_pool && !own_pool,
    )
    .await;
    fetched
}
