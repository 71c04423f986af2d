//! What this operator replaces from before it served a ModelService: a metrics
//! ClusterRoleBinding of a ClusterRole made for that one ModelService (upstream's, or one
//! carrying this operator's marker and parent labels), that ClusterRole, and the
//! InferencePool `<epp>` of upstream's earlier releases, which upstream's operator always
//! deletes.
//!
//! Contract: [`read`] only reads, by name and metadata only (labels, owner references and UID
//! decide); [`retirements`] decides, without a client, which of them the plan retires
//! ([`kinfer_state::PlanResult::retire`]: deleted by that UID before anything is applied).
//! A binding is retired only when it is this ModelService's (this operator's marker and its
//! parent labels) or upstream's for it ([`super::adopt::adoptable_meta`]), binds another role
//! than the shipped metrics ClusterRole, and its replacement is planned (a binding's `roleRef`
//! is immutable, so the plan's apply then creates it anew); the role it referenced goes after
//! it when that carries the marker and this ModelService's parent labels, or upstream's labels
//! for it, never one of the shipped roles, and only once it could be read: a failed read
//! retires nothing and holds the replacement back ([`Retirements::waiting`]), so no role is
//! left unbound and no apply meets the immutable `roleRef`. The legacy pool is retired when it carries upstream's labels for
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

/// Whether `meta` carries this operator's marker.
fn marked(meta: &ObjectMeta) -> bool {
    super::label_scheme().is_marked(meta.labels.as_ref())
}

/// Whether `binding` is `ms`'s to retire: it binds another role than the shipped one, and it
/// carries this operator's marker and parent labels naming `ms`, or it is upstream's for `ms`.
fn retirable(binding: &ClusterRoleBinding, ms: &ModelService) -> bool {
    binding.role_ref.name != epp::METRICS_AUTH_CLUSTER_ROLE
        && match cluster_rbac_owner(binding, ms) {
            ClusterRbacOwner::This => marked(&binding.metadata),
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

/// What [`retirements`] decided.
#[derive(Debug, Default)]
pub struct Retirements {
    /// What the plan deletes first, in order.
    pub retire: Vec<Retire>,
    /// Why the binding can be neither retired nor replaced this reconcile (the role it
    /// references could not be read): the caller plans no binding (its apply would meet the
    /// immutable `roleRef`) and reports this, and the next reconcile tries again.
    pub waiting: Option<String>,
}

/// What the plan retires; see the module contract. `binding_planned`: the replacement
/// binding is planned this reconcile.
pub fn retirements(
    ms: &ModelService,
    binding: Option<&ClusterRoleBinding>,
    legacy: &Legacy,
    binding_planned: bool,
) -> Retirements {
    let mut out = Retirements::default();
    if let (Some(b), true) = (binding, binding_planned)
        && retirable(b, ms)
    {
        match &legacy.role {
            Some(Ok(role)) => {
                out.retire
                    .extend(retire::<ClusterRoleBinding>(&b.metadata, None));
                let parent = (ms.namespace().unwrap_or_default(), ms.name_any());
                if let Some(role) = role.as_ref().filter(|r| {
                    let name = r.name_any();
                    name != epp::METRICS_AUTH_CLUSTER_ROLE
                        && name != epp::LEADER_ELECTION_CLUSTER_ROLE
                        && ((marked(&r.metadata)
                            && labels::parent_ref(&r.metadata) == Some(parent.clone()))
                            || adopt::adoptable_meta(ms, &r.metadata))
                }) {
                    out.retire
                        .extend(retire::<ClusterRole>(&role.metadata, None));
                }
            }
            // Not read (another kind of roleRef) or gone: the binding alone.
            None => out
                .retire
                .extend(retire::<ClusterRoleBinding>(&b.metadata, None)),
            Some(Err(e)) => {
                out.waiting = Some(format!(
                    "ClusterRoleBinding {} binds ClusterRole {}, which could not be read to replace it: {e}",
                    b.name_any(),
                    b.role_ref.name
                ));
            }
        }
    }
    if let Some(Ok(Some(pool))) = &legacy.pool
        && adopt::adoptable_meta(ms, &pool.metadata)
    {
        out.retire
            .extend(retire::<InferencePool>(&pool.metadata, ms.namespace()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ms() -> ModelService {
        serde_json::from_value(json!({
            "apiVersion": "model.otterscale.io/v1alpha1", "kind": "ModelService",
            "metadata": {"name": "llama", "namespace": "team", "uid": "ms-uid"},
            "spec": {"model": {"name": "m", "image": "r/m:1"}, "engine": {},
                     "accelerator": {"type": "nvidia"}, "decode": {}}
        }))
        .unwrap()
    }

    /// A binding of `role`, labelled for `team/llama` (with the marker when `marked`).
    fn binding(role: &str, marked: bool) -> ClusterRoleBinding {
        let mut labels =
            json!({"kinfer.dev/parent-namespace": "team", "kinfer.dev/parent-name": "llama"});
        if marked {
            labels["kinfer.dev/managed-by"] = json!("kinfer-modelservice");
        }
        serde_json::from_value(json!({
            "metadata": {"name": "team-llama-epp", "uid": "b-uid", "labels": labels,
                         "annotations": {"kinfer.dev/parent": "team/llama"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "llama-epp", "namespace": "team"}]
        }))
        .unwrap()
    }

    fn role(marked: bool) -> PartialObjectMeta<ClusterRole> {
        let mut labels =
            json!({"kinfer.dev/parent-namespace": "team", "kinfer.dev/parent-name": "llama"});
        if marked {
            labels["kinfer.dev/managed-by"] = json!("kinfer-modelservice");
        }
        serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": "team-llama-epp", "uid": "r-uid", "labels": labels,
                         "annotations": {"kinfer.dev/parent": "team/llama"}}
        }))
        .unwrap()
    }

    fn names(r: &Retirements) -> Vec<(String, String)> {
        r.retire
            .iter()
            .map(|r| (r.key.kind.clone(), r.uid.clone()))
            .collect()
    }

    #[test]
    fn a_marked_binding_of_its_own_role_is_retired_with_the_role() {
        let legacy = Legacy {
            role: Some(Ok(Some(role(true)))),
            pool: None,
        };
        let r = retirements(&ms(), Some(&binding("team-llama-epp", true)), &legacy, true);
        assert_eq!(
            names(&r),
            [
                ("ClusterRoleBinding".to_owned(), "b-uid".to_owned()),
                ("ClusterRole".to_owned(), "r-uid".to_owned())
            ]
        );
        assert!(r.waiting.is_none());
        // Not while the replacement is not planned, and never the shipped binding.
        assert!(
            retirements(
                &ms(),
                Some(&binding("team-llama-epp", true)),
                &legacy,
                false
            )
            .retire
            .is_empty()
        );
        let shipped = binding(epp::METRICS_AUTH_CLUSTER_ROLE, true);
        assert!(
            retirements(&ms(), Some(&shipped), &legacy, true)
                .retire
                .is_empty()
        );
    }

    #[test]
    fn unmarked_objects_are_not_retired_and_an_unread_role_holds_the_binding_back() {
        let legacy = Legacy {
            role: Some(Ok(Some(role(false)))),
            pool: None,
        };
        // Parent labels without the marker: not this operator's, left to the plan.
        assert!(
            retirements(
                &ms(),
                Some(&binding("team-llama-epp", false)),
                &legacy,
                true
            )
            .retire
            .is_empty()
        );
        // A marked binding of an unmarked role: the binding goes, the role stays.
        let r = retirements(&ms(), Some(&binding("team-llama-epp", true)), &legacy, true);
        assert_eq!(
            names(&r),
            [("ClusterRoleBinding".to_owned(), "b-uid".to_owned())]
        );

        let failed: kube::core::Status = serde_json::from_value(json!({
            "status": "Failure", "code": 500, "reason": "InternalError", "message": "boom"
        }))
        .unwrap();
        let unread = Legacy {
            role: Some(Err(kube::Error::Api(Box::new(failed)))),
            pool: None,
        };
        let r = retirements(&ms(), Some(&binding("team-llama-epp", true)), &unread, true);
        assert!(r.retire.is_empty());
        assert!(
            r.waiting
                .as_deref()
                .is_some_and(|w| w.contains("team-llama-epp")),
            "{:?}",
            r.waiting
        );
    }
}
