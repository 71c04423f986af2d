//! The metrics-auth ClusterRoleBindings this operator made, as its controllers' label-scoped
//! watch of them reports them: kept in the engine's [`OwnerIndex`] by name (they carry no
//! owner reference: a namespaced ModelService cannot own them), so a reconcile does not read
//! the binding by name when it holds it: fetch reads it from there ([`binding`]), and the
//! engine serves the planned ClusterRoleBinding from there
//! ([`kinfer_state::ChildStore::named`]). The ClusterRole it binds ships with the install:
//! the operator creates none, so it watches none.
//!
//! Contract: the index answers only for objects carrying this operator's marker, and only once
//! a watch of the kind has listed. A miss proves nothing: the object may exist unmarked
//! (upstream's, to adopt, or a foreign one of the same name, to refuse) or be newer than the
//! watch, so the caller reads it by name then. The watches keep only this operator's own apply
//! entries of `managedFields` (all the engine's diff reads; fetch decides ownership from labels
//! and subjects, never from field managers).

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kinfer_state::pipeline::{ChildKind, ObjectKey};
use kinfer_state::{ChildStore, OwnerIndex};

/// The cluster-scoped kinds a ModelService gets, watched by label and kept in the index.
pub fn cluster_kinds() -> [ChildKind; 1] {
    [ChildKind::of::<ClusterRoleBinding>()]
}

/// The marked ClusterRoleBinding `name` when `index` holds it; `None` when it does not (or
/// it does not decode): read it by name then.
pub fn binding(index: &OwnerIndex, name: &str) -> Option<ClusterRoleBinding> {
    let kind = ChildKind::of::<ClusterRoleBinding>();
    let key = ObjectKey {
        kind: kind.resource.kind.clone(),
        group: kind.resource.group.clone(),
        namespace: None,
        name: name.to_owned(),
    };
    let cached = index.named(&kind, &key)?;
    serde_json::to_value(cached)
        .and_then(serde_json::from_value)
        .ok()
}

#[cfg(test)]
mod tests {
    use kube::core::DynamicObject;
    use kube::runtime::watcher::Event;

    use super::*;

    fn marked(name: &str, uid: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "uid": uid, "labels": {"kinfer.dev/managed-by": "kinfer-modelservice"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "ms-epp", "namespace": "ns"}]
        }))
        .expect("binding")
    }

    #[test]
    fn a_binding_is_served_after_the_list_and_dropped_by_a_relist_without_it() {
        let index = OwnerIndex::new();
        let kind = ChildKind::of::<ClusterRoleBinding>();
        let feed = index.named_feed();
        let follow = |e: Event<DynamicObject>| index.follow(&kind, None, feed, &e);
        follow(Event::Init);
        follow(Event::InitApply(marked("ns-ms-epp", "u1")));
        assert!(binding(&index, "ns-ms-epp").is_none(), "still listing");
        assert!(follow(Event::InitDone).is_empty());
        let b = binding(&index, "ns-ms-epp").expect("held");
        assert_eq!(b.subjects.unwrap_or_default()[0].name, "ms-epp");
        assert!(binding(&index, "other").is_none());

        // Deleted while the watch was down: the re-list drops it and says so.
        follow(Event::Init);
        let dropped = follow(Event::InitDone);
        assert_eq!(dropped.len(), 1);
        assert_eq!(dropped[0].metadata.name.as_deref(), Some("ns-ms-epp"));
        assert!(binding(&index, "ns-ms-epp").is_none());
    }
}
