//! The finalizer `model.otterscale.io/epp-cluster-rbac`: removal of the Endpoint Picker's
//! cluster-scoped metrics-auth RBAC, which owner references cannot reach: the
//! ClusterRoleBinding of the shipped metrics ClusterRole, and any ClusterRole made for this one
//! ModelService (upstream's, or one carrying this operator's marker and parent labels).
//!
//! Contract (NOTES section b rows 17-18, defect g17 fixed), run by the engine's finalizer flow
//! ([`kinfer_state::Pipeline::needs_finalizer`], [`kinfer_state::Pipeline::finalize`]):
//! - the finalizer is needed per ModelService, only while it has (or is to get) cluster RBAC
//!   ([`crate::reconciler::resolve::wants_cluster_rbac`]: metrics auth on, and the name not
//!   held by another ModelService); the engine adds it **before** the ClusterRoleBinding is
//!   applied (compose plans it only while the object carries it) and
//!   never adds it otherwise;
//! - when the cluster RBAC is no longer wanted (metrics auth turned off, a name conflict), the
//!   engine runs [`cleanup`] and releases the finalizer; on deletion it runs [`cleanup`] and
//!   then removes the finalizer; namespaced children go with owner references;
//! - [`cleanup`] deletes only ClusterRoleBindings and ClusterRoles that carry this operator's
//!   marker and this ModelService's parent labels and annotation
//!   ([`kinfer_builders::labels::parent_ref`]), found by label selector (never by the
//!   ambiguous name), each with its UID as precondition (an object replaced meanwhile is not
//!   touched); 404 and 409 are success. Bindings go first, so no binding is left pointing at a
//!   missing role;
//! - cluster RBAC upstream's operator created and kinfer never labelled (the ModelService went
//!   before kinfer's first apply, its spec is invalid under kinfer's validation, metrics auth
//!   is off since the migration) is found by name instead: the ClusterRoleBinding when it
//!   binds only this ModelService's Endpoint Picker and carries upstream's labels for it, and
//!   the ClusterRole it references when that carries them too (UID preconditions);
//! - a start-up sweep ([`sweep_orphans`]) deletes this operator's cluster RBAC whose
//!   ModelService no longer exists in a watched namespace (it went while no operator ran);
//! - when metrics auth is turned off, the release also deletes the Endpoint Picker's token
//!   Secret (if it carries this ModelService's child labels): Secrets are not listed by the
//!   engine, so orphan pruning cannot reach it, and a stale long-lived token must not stay;
//! - errors are categorised like any API error; the engine retries them with its per-object
//!   backoff; a Forbidden cleanup keeps the finalizer (the engine reports `CleanupForbidden`):
//!   releasing it would leak the cluster RBAC, so deletion, and a terminating namespace, wait
//!   for the operator's RBAC to allow the cleanup.

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kinfer_api::modelservice::ModelService;
use kinfer_builders::labels::{parent_ref, parent_selector};
use kinfer_builders::naming;
use kinfer_operator::controller::marker_selector;
use kinfer_state::apply::delete_exact;
use kinfer_state::{CategorizedError, Direction, categorized_kube_error};
use kube::api::ListParams;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use crate::reconciler::adopt;
use crate::reconciler::fetch::{ClusterRbacOwner, cluster_rbac_name, cluster_rbac_owner};
use crate::reconciler::{FINALIZER, MANAGER, label_scheme};

/// Whether `ms` carries the finalizer.
pub fn has_finalizer(ms: &ModelService) -> bool {
    ms.finalizers().iter().any(|f| f == FINALIZER)
}

/// The label selector of `ms`'s cluster RBAC: this operator's marker and the parent labels.
pub fn cluster_rbac_selector(namespace: &str, name: &str) -> String {
    format!(
        "{},{}",
        marker_selector(MANAGER),
        parent_selector(namespace, name)
    )
}

/// Deletes every object of kind `K` carrying this operator's marker whose parent is in a
/// watched namespace (all when `namespaces` is empty) and no longer exists; returns how many
/// were deleted.
async fn sweep_kind<K>(
    client: &Client,
    api: &Api<K>,
    namespaces: &[String],
) -> Result<usize, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut deleted = 0;
    let marker = ListParams::default().labels(&marker_selector(MANAGER));
    for object in api.list(&marker).await? {
        let Some((namespace, name)) = parent_ref(object.meta()) else {
            continue;
        };
        if !namespaces.is_empty() && !namespaces.contains(&namespace) {
            // Another operator instance's namespace: not ours to judge.
            continue;
        }
        let parents = Api::<ModelService>::namespaced(client.clone(), &namespace);
        if parents.get_metadata_opt(&name).await?.is_some() {
            continue;
        }
        if delete_exact(api, &object.name_any(), object.uid().as_deref()).await? {
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// Start-up sweep: deletes this operator's ClusterRoleBindings and ClusterRoles whose
/// ModelService (in a watched namespace; all when `namespaces` is empty) no longer exists, e.g.
/// because it went while the operator was not running and its finalizer was removed by hand.
/// Bindings go first. Returns how many objects were deleted.
pub async fn sweep_orphans(client: &Client, namespaces: &[String]) -> Result<usize, kube::Error> {
    let bindings = sweep_kind(
        client,
        &Api::<ClusterRoleBinding>::all(client.clone()),
        namespaces,
    )
    .await?;
    let roles = sweep_kind(client, &Api::<ClusterRole>::all(client.clone()), namespaces).await?;
    if bindings + roles > 0 {
        tracing::info!(bindings, roles, "orphaned cluster RBAC removed");
    }
    Ok(bindings + roles)
}

/// Deletes every object of kind `K` that `selector` finds and whose parent is exactly
/// `(namespace, name)`; returns how many were deleted.
async fn delete_labelled<K>(
    api: &Api<K>,
    selector: &str,
    namespace: &str,
    name: &str,
) -> Result<usize, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut deleted = 0;
    for object in api.list(&ListParams::default().labels(selector)).await? {
        if parent_ref(object.meta()) != Some((namespace.to_owned(), name.to_owned())) {
            // A hashed name label shared with another parent: the annotation tells them apart.
            continue;
        }
        if delete_exact(api, &object.name_any(), object.uid().as_deref()).await? {
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// Deletes the cluster RBAC upstream's operator created for `ms` that kinfer never labelled
/// (deleted before kinfer's first apply, an invalid spec that never applied, metrics auth off
/// since the migration): the ClusterRoleBinding of `ms`'s name when it is ours unlabelled
/// ([`ClusterRbacOwner::Unlabelled`], the ownership compose uses) and carries upstream's
/// labels for `ms` ([`adopt::adoptable_meta`]), then the ClusterRole it references when that
/// carries them too; each with its UID as precondition. Returns how many were deleted.
async fn delete_upstream(client: &Client, ms: &ModelService) -> Result<usize, kube::Error> {
    let Some(name) = cluster_rbac_name(ms) else {
        return Ok(0);
    };
    let bindings = Api::<ClusterRoleBinding>::all(client.clone());
    let Some(binding) = bindings.get_opt(&name).await? else {
        return Ok(0);
    };
    if cluster_rbac_owner(&binding, ms) != ClusterRbacOwner::Unlabelled
        || !adopt::adoptable_meta(ms, &binding.metadata)
    {
        return Ok(0);
    }
    let mut deleted = usize::from(delete_exact(&bindings, &name, binding.uid().as_deref()).await?);
    if binding.role_ref.kind != "ClusterRole" {
        return Ok(deleted);
    }
    let roles = Api::<ClusterRole>::all(client.clone());
    let Some(role) = roles.get_opt(&binding.role_ref.name).await? else {
        return Ok(deleted);
    };
    if !adopt::adoptable_meta(ms, &role.metadata) {
        return Ok(deleted);
    }
    deleted += usize::from(delete_exact(&roles, &role.name_any(), role.uid().as_deref()).await?);
    Ok(deleted)
}

/// Deletes the Endpoint Picker's token Secret of `ms` if it is this ModelService's child (its
/// kind is not listed by the engine, so orphan pruning cannot reach it).
async fn delete_token_secret(client: &Client, ms: &ModelService) -> Result<(), kube::Error> {
    let (Some(namespace), Ok(epp)) = (
        ms.namespace(),
        naming::modelservice::epp_name(&ms.name_any()),
    ) else {
        return Ok(());
    };
    let Ok(name) = naming::modelservice::epp_token_secret_name(&epp) else {
        return Ok(());
    };
    let api = Api::<Secret>::namespaced(client.clone(), &namespace);
    let Some(secret) = api.get_metadata_opt(name.as_str()).await? else {
        return Ok(());
    };
    if !label_scheme().is_child_of(secret.metadata.labels.as_ref(), &ms.name_any()) {
        return Ok(());
    }
    delete_exact(&api, name.as_str(), secret.metadata.uid.as_deref()).await?;
    Ok(())
}

/// Deletes the cluster RBAC of `ms`, and with `token_secret` (metrics auth turned off) its
/// token Secret; see the module contract.
pub async fn cleanup(
    client: &Client,
    ms: &ModelService,
    token_secret: bool,
) -> Result<(), CategorizedError> {
    let namespace = ms.namespace().unwrap_or_default();
    let name = ms.name_any();
    let selector = cluster_rbac_selector(&namespace, &name);
    let err = |e: kube::Error| {
        let mut c = categorized_kube_error(&e, Direction::Downstream);
        c.message = format!("clean up cluster RBAC of {namespace}/{name}: {}", c.message);
        c
    };
    let bindings = delete_labelled(
        &Api::<ClusterRoleBinding>::all(client.clone()),
        &selector,
        &namespace,
        &name,
    )
    .await
    .map_err(err)?;
    let roles = delete_labelled(
        &Api::<ClusterRole>::all(client.clone()),
        &selector,
        &namespace,
        &name,
    )
    .await
    .map_err(err)?;
    let upstream = delete_upstream(client, ms).await.map_err(err)?;
    if token_secret {
        delete_token_secret(client, ms).await.map_err(err)?;
    }
    tracing::info!(
        bindings,
        roles,
        upstream,
        token_secret,
        "cluster RBAC removed"
    );
    Ok(())
}
