//! What an earlier operator left that this one replaces: a metrics ClusterRoleBinding of a
//! per-ModelService ClusterRole (upstream's, or an earlier kinfer's), that ClusterRole, and
//! the InferencePool `<epp>` upstream's operator once created (NOTES section b row 19: it
//! always deletes that legacy pool).
//!
//! Contract: [`read`] only reads, by name and metadata only (labels, owner references and UID
//! decide); [`retirements`] decides, without a client, which of them the plan retires
//! ([`kinfer_state::PlanResult::retire`]: deleted by that UID before anything is applied).
//! A binding is retired only when it is this ModelService's (its parent labels) or upstream's
//! for it ([`super::adopt::adoptable_meta`]), binds another role than the shipped metrics
//! ClusterRole, and its replacement is planned (a binding's `roleRef` is immutable, so the
//! plan's apply then creates it anew); the role it referenced goes after it when that carries
//! this ModelService's parent labels or upstream's labels for it, never one of the shipped
//! roles, and only once it could be read (a failed read retires nothing, so no role is left
//! unbound and unlabelled). The legacy pool is retired when it carries upstream's labels for
//! this ModelService; it is looked for only until this operator's own pool `<ms>` is listed
//! (only a cluster this operator has not served yet can hold one), so a steady state reads
//! nothing. A read that fails is retried by the next reconcile.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kinfer_api::inference_pool::InferencePool;
use kinfer_api::modelservice::ModelService;
use kinfer_builders::{epp, labels, naming};
use kinfer_state::pipeline::{ChildKind, ObjectKey, Retire};
use kube::core::{ObjectMeta, PartialObjectMeta};
use kube::{Api, Client, ResourceExt};

use super::adopt;
use super::fetch::{ClusterRbacOwner, cluster_rbac_owner};

/// What [`read`] found; `None` where nothing needed reading.
#[derive(Debug, Default)]
pub struct Legacy {
    /// The ClusterRole a live binding of this ModelService references, when that is not the
    /// shipped metrics ClusterRole.
    pub role: Option<Result<Option<PartialObjectMeta<ClusterRole>>, kube::Error>>,
    /// Upstream's legacy pool `<epp>`, when the InferencePool CRD is installed.
    pub pool: Option<Result<Option<PartialObjectMeta<InferencePool>>, kube::Error>>,
}

/// Whether `binding` is `ms`'s to retire: it binds another role than the shipped one, and its
/// parent labels name `ms` or it is upstream's for `ms`.
fn retirable(binding: &ClusterRoleBinding, ms: &ModelService) -> bool {
    binding.role_ref.name != epp::METRICS_AUTH_CLUSTER_ROLE
        && match cluster_rbac_owner(binding, ms) {
            ClusterRbacOwner::This => true,
            ClusterRbacOwner::Unlabelled => adopt::adoptable_meta(ms, &binding.metadata),
            ClusterRbacOwner::Other => false,
        }
}

/// Reads what [`retirements`] decides on; see the module contract. `look_for_pool`: the
/// InferencePool CRD is installed and this ModelService's own pool is not listed yet.
pub async fn read(
    client: &Client,
    ms: &ModelService,
    binding: Option<&ClusterRoleBinding>,
    look_for_pool: bool,
) -> Legacy {
    let role = match binding {
        Some(b) if retirable(b, ms) && b.role_ref.kind == "ClusterRole" => Some(
            Api::<ClusterRole>::all(client.clone())
                .get_metadata_opt(&b.role_ref.name)
                .await,
        ),
        _ => None,
    };
    let pool = match (look_for_pool, ms.namespace(), legacy_pool_name(ms)) {
        (true, Some(ns), Some(name)) => Some(
            Api::<InferencePool>::namespaced(client.clone(), &ns)
                .get_metadata_opt(&name)
                .await,
        ),
        _ => None,
    };
    Legacy { role, pool }
}

/// The legacy pool's name, `<epp>`.
fn legacy_pool_name(ms: &ModelService) -> Option<String> {
    naming::modelservice::epp_name(&ms.name_any())
        .ok()
        .map(|n| n.to_string())
}

fn retire<K>(meta: &ObjectMeta, namespace: Option<String>) -> Option<Retire>
where
    K: kube::Resource<DynamicType = ()>,
    K::Scope: kinfer_state::pipeline::ScopeKind,
{
    let kind = ChildKind::of::<K>();
    Some(Retire {
        key: ObjectKey {
            kind: kind.resource.kind.clone(),
            group: kind.resource.group.clone(),
            namespace,
            name: meta.name.clone()?,
        },
        uid: meta.uid.clone()?,
        kind,
    })
}

/// What the plan retires, in order; see the module contract. `binding_planned`: the
/// replacement binding is planned this reconcile.
pub fn retirements(
    ms: &ModelService,
    binding: Option<&ClusterRoleBinding>,
    legacy: &Legacy,
    binding_planned: bool,
) -> Vec<Retire> {
    let mut out = Vec::new();
    if let (Some(b), true) = (binding, binding_planned)
        && retirable(b, ms)
    {
        match &legacy.role {
            Some(Ok(role)) => {
                out.extend(retire::<ClusterRoleBinding>(&b.metadata, None));
                let parent = (ms.namespace().unwrap_or_default(), ms.name_any());
                if let Some(role) = role.as_ref().filter(|r| {
                    let name = r.name_any();
                    name != epp::METRICS_AUTH_CLUSTER_ROLE
                        && name != epp::LEADER_ELECTION_CLUSTER_ROLE
                        && (labels::parent_ref(&r.metadata) == Some(parent.clone())
                            || adopt::adoptable_meta(ms, &r.metadata))
                }) {
                    out.extend(retire::<ClusterRole>(&role.metadata, None));
                }
            }
            // Not read (another kind of roleRef) or gone: the binding alone.
            None => out.extend(retire::<ClusterRoleBinding>(&b.metadata, None)),
            Some(Err(e)) => {
                tracing::debug!(error = %e, "the legacy ClusterRole could not be read; retrying");
            }
        }
    }
    if let Some(Ok(Some(pool))) = &legacy.pool
        && adopt::adoptable_meta(ms, &pool.metadata)
    {
        out.extend(retire::<InferencePool>(&pool.metadata, ms.namespace()));
    }
    out
}
