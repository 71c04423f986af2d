//! Adoption of objects the upstream otterscale model-operator created (a drop-in migration).
//!
//! Contract: the engine applies over a live object that is not ours (no controller owner
//! reference to the ModelService, no `kinfer.dev/managed-by` marker) only when [`adoptable`]
//! says so; otherwise the plan is refused with `NameTaken`. An object is adoptable when it
//! carries upstream's labels for this ModelService: `app.kubernetes.io/managed-by:
//! model-operator`, `app.kubernetes.io/part-of: otterscale-system` and
//! `app.kubernetes.io/name` equal to the ModelService's name (serving Deployments,
//! InferencePool, HTTPRoute, PodMonitors) or to its Endpoint Picker's (the EPP family and the
//! cluster RBAC), and it carries neither another kinfer operator's marker nor a controller owner
//! reference to another object (the API server allows one controller). Names and selectors are
//! upstream's ([`kinfer_builders::labels::otterscale`]), so server-side apply takes the object
//! over in place: no second object, no selector change, no pod restart beyond the fields we
//! set. Fields only upstream set (e.g. its `app.kubernetes.io/version` label) stay until
//! someone removes them: server-side apply does not remove fields another manager owns.

use kinfer_api::modelservice::ModelService;
use kinfer_builders::labels::{self, otterscale};
use kinfer_builders::naming;
use kube::ResourceExt;
use kube::core::{DynamicObject, ObjectMeta};

/// Whether `live` may be taken over for `ms`; see the module contract.
pub fn adoptable(ms: &ModelService, live: &DynamicObject) -> bool {
    adoptable_meta(ms, &live.metadata)
}

/// [`adoptable`] from an object's metadata (typed objects, e.g. upstream's cluster RBAC the
/// finalizer removes).
pub fn adoptable_meta(ms: &ModelService, meta: &ObjectMeta) -> bool {
    let Some(l) = meta.labels.as_ref() else {
        return false;
    };
    let is = |k: &str, v: &str| l.get(k).is_some_and(|x| x == v);
    if !is(labels::MANAGED_BY, otterscale::MANAGED_BY_VALUE)
        || !is(labels::PART_OF, otterscale::PART_OF_VALUE)
        || l.contains_key(labels::KINFER_MANAGED_BY)
    {
        return false;
    }
    let name = ms.name_any();
    let epp = naming::modelservice::epp_name(&name)
        .map(|n| n.to_string())
        .unwrap_or_default();
    let ours = [naming::sanitize_label_value(&name), epp];
    if !l
        .get(labels::NAME)
        .is_some_and(|v| ours.iter().any(|o| o == v))
    {
        return false;
    }
    let uid = ms.uid();
    !meta
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && Some(&r.uid) != uid.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ms() -> ModelService {
        serde_json::from_value(json!({
            "apiVersion": "model.otterscale.io/v1alpha1",
            "kind": "ModelService",
            "metadata": {"name": "llama-3.1-8b", "namespace": "ns", "uid": "u1"},
            "spec": {
                "model": {"name": "m", "image": "r/m:1"},
                "engine": {},
                "accelerator": {"type": "nvidia"},
                "decode": {}
            }
        }))
        .unwrap()
    }

    #[allow(clippy::needless_pass_by_value)] // json! temporaries at every call
    fn obj(labels: serde_json::Value, owners: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "x", "labels": labels, "ownerReferences": owners}
        }))
        .unwrap()
    }

    fn upstream(name: &str) -> serde_json::Value {
        json!({
            "app.kubernetes.io/name": name,
            "app.kubernetes.io/component": "epp",
            "app.kubernetes.io/part-of": "otterscale-system",
            "app.kubernetes.io/managed-by": "model-operator",
            "app.kubernetes.io/version": "v1.0.1",
        })
    }

    #[test]
    fn upstream_objects_of_this_modelservice_are_adoptable() {
        let ms = ms();
        for name in ["llama-3.1-8b", "llama-3-1-8b-epp"] {
            assert!(adoptable(&ms, &obj(upstream(name), json!([]))), "{name}");
        }
        // upstream's own controller reference to this ModelService is fine
        let same = json!([{"apiVersion": "model.otterscale.io/v1alpha1", "kind": "ModelService",
            "name": "llama-3.1-8b", "uid": "u1", "controller": true}]);
        assert!(adoptable(&ms, &obj(upstream("llama-3.1-8b"), same)));
    }

    #[test]
    fn others_are_not() {
        let ms = ms();
        // another ModelService's object, no labels, someone else's labels
        assert!(!adoptable(&ms, &obj(upstream("other"), json!([]))));
        assert!(!adoptable(&ms, &obj(json!({}), json!([]))));
        assert!(!adoptable(
            &ms,
            &obj(json!({"app.kubernetes.io/name": "llama-3.1-8b"}), json!([]))
        ));
        // another kinfer operator's object
        let mut l = upstream("llama-3.1-8b");
        l["kinfer.dev/managed-by"] = json!("kinfer-aim");
        assert!(!adoptable(&ms, &obj(l, json!([]))));
        // controlled by something else
        let other = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r",
            "uid": "u2", "controller": true}]);
        assert!(!adoptable(&ms, &obj(upstream("llama-3.1-8b"), other)));
    }
}
