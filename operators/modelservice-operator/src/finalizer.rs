//! The finalizer `model.otterscale.io/epp-cluster-rbac`: removal of the Endpoint Picker's
//! cluster-scoped metrics-auth RBAC, which owner references cannot reach.
//!
//! Contract (NOTES section b rows 17-18, defect g17 fixed), run by the engine's finalizer flow
//! ([`kinfer_state::Pipeline::needs_finalizer`], [`kinfer_state::Pipeline::finalize`]):
//! - the finalizer is needed only when the operator creates cluster RBAC (metrics auth on);
//!   the engine adds it **before** the ClusterRole/ClusterRoleBinding are applied (nothing is
//!   applied while adding it fails) and never adds it otherwise;
//! - when the cluster RBAC is no longer wanted (metrics auth turned off), [`cleanup`] deletes it
//!   and the engine releases the finalizer;
//! - on deletion, [`cleanup`] deletes the ClusterRoleBinding and ClusterRole `<namespace>-<epp>`
//!   (404 is success), then the engine removes the finalizer; namespaced children go with owner
//!   references;
//! - the name is upstream's and ambiguous across namespaces: objects whose binding subject is
//!   another namespace's Endpoint Picker are never deleted;
//! - errors are categorised like any API error; the engine retries them with its per-object
//!   backoff (a Forbidden cleanup releases the finalizer anyway: deletion is never blocked by
//!   the operator's own RBAC).

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kinfer_api::modelservice::ModelService;
use kinfer_state::{CategorizedError, Direction, categorized_kube_error};
use kube::api::DeleteParams;
use kube::{Api, Client, ResourceExt};

use crate::reconciler::FINALIZER;
use crate::reconciler::fetch::{binding_is_ours, cluster_rbac_name, epp_name};

/// Whether `ms` carries the finalizer.
pub fn has_finalizer(ms: &ModelService) -> bool {
    ms.finalizers().iter().any(|f| f == FINALIZER)
}

fn ignore_not_found<T>(r: Result<T, kube::Error>) -> Result<(), kube::Error> {
    match r {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes the cluster RBAC of `ms` if it is ours; see the module contract.
pub async fn cleanup(client: &Client, ms: &ModelService) -> Result<(), CategorizedError> {
    let (Some(name), Some(sa)) = (cluster_rbac_name(ms), epp_name(ms)) else {
        return Ok(());
    };
    let err = |e: kube::Error| {
        let mut c = categorized_kube_error(&e, Direction::Downstream);
        c.message = format!("clean up cluster RBAC {name}: {}", c.message);
        c
    };
    let bindings = Api::<ClusterRoleBinding>::all(client.clone());
    let namespace = ms.namespace().unwrap_or_default();
    if let Some(binding) = bindings.get_opt(&name).await.map_err(err)?
        && !binding_is_ours(&binding, &namespace, &sa)
    {
        tracing::info!(
            name,
            "cluster RBAC belongs to another namespace's Endpoint Picker; left alone"
        );
        return Ok(());
    }
    ignore_not_found(bindings.delete(&name, &DeleteParams::default()).await).map_err(err)?;
    ignore_not_found(
        Api::<ClusterRole>::all(client.clone())
            .delete(&name, &DeleteParams::default())
            .await,
    )
    .map_err(err)?;
    tracing::info!(name, "cluster RBAC removed");
    Ok(())
}
