//! Children served from memory instead of a LIST per kind per reconcile.
//!
//! Contract: a [`ChildStore`] answers "the objects of this kind whose controller owner is
//! this UID" for the kinds it holds, and `None` for kinds it does not (or not yet: before its
//! watch has listed once), which the engine then LISTs. The engine still filters what a store
//! returns by its own labels, exactly like a LIST by selector would.
//!
//! [`OwnerIndex`] is the store an operator fills from the watches it already runs for
//! `Controller::owns` (`reflector` events): `apply` on Added/Modified, `delete` on Deleted,
//! `mark_synced` after the initial list (`InitDone`). It is indexed by owner UID, so a
//! reconcile costs a hash lookup, not a LIST.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Debug;
use std::sync::RwLock;

use kube::core::DynamicObject;

use crate::pipeline::ChildKind;

/// A source of children; see the module contract.
pub trait ChildStore: Send + Sync + Debug {
    /// The objects of `kind` with a controller owner reference to `owner_uid`; `None` when
    /// this store cannot answer for `kind`.
    fn owned_by(&self, kind: &ChildKind, owner_uid: &str) -> Option<Vec<DynamicObject>>;
}

type KindKey = (String, String);

fn kind_key(kind: &ChildKind) -> KindKey {
    (kind.resource.group.clone(), kind.resource.kind.clone())
}

#[derive(Debug, Default)]
struct Inner {
    /// Kinds whose initial list is complete.
    synced: HashSet<KindKey>,
    /// kind -> object UID -> (owner UID, object).
    objects: HashMap<KindKey, HashMap<String, (String, DynamicObject)>>,
    /// kind -> owner UID -> object UIDs.
    by_owner: HashMap<KindKey, HashMap<String, BTreeSet<String>>>,
}

/// A [`ChildStore`] indexed by controller owner UID; see the module contract.
#[derive(Debug, Default)]
pub struct OwnerIndex {
    inner: RwLock<Inner>,
}

fn controller_uid(obj: &DynamicObject) -> Option<String> {
    obj.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.clone())
}

impl OwnerIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record an added or modified object of `kind`.
    pub fn apply(&self, kind: &ChildKind, obj: DynamicObject) {
        let Some(uid) = obj.metadata.uid.clone() else {
            return;
        };
        let mut inner = self
            .inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let k = kind_key(kind);
        Self::remove_uid(&mut inner, &k, &uid);
        if let Some(owner) = controller_uid(&obj) {
            inner
                .by_owner
                .entry(k.clone())
                .or_default()
                .entry(owner.clone())
                .or_default()
                .insert(uid.clone());
            inner
                .objects
                .entry(k)
                .or_default()
                .insert(uid, (owner, obj));
        }
    }

    /// Forget a deleted object of `kind`.
    pub fn delete(&self, kind: &ChildKind, obj: &DynamicObject) {
        let Some(uid) = obj.metadata.uid.as_deref() else {
            return;
        };
        let mut inner = self
            .inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Self::remove_uid(&mut inner, &kind_key(kind), uid);
    }

    /// The initial list of `kind` is complete: answer for it from now on.
    pub fn mark_synced(&self, kind: &ChildKind) {
        self.inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .synced
            .insert(kind_key(kind));
    }

    fn remove_uid(inner: &mut Inner, k: &KindKey, uid: &str) {
        let Some((owner, _)) = inner.objects.get_mut(k).and_then(|m| m.remove(uid)) else {
            return;
        };
        if let Some(owners) = inner.by_owner.get_mut(k)
            && let Some(set) = owners.get_mut(&owner)
        {
            set.remove(uid);
            if set.is_empty() {
                owners.remove(&owner);
            }
        }
    }
}

impl ChildStore for OwnerIndex {
    fn owned_by(&self, kind: &ChildKind, owner_uid: &str) -> Option<Vec<DynamicObject>> {
        let inner = self
            .inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let k = kind_key(kind);
        if !inner.synced.contains(&k) {
            return None;
        }
        let objects = inner.objects.get(&k);
        Some(
            inner
                .by_owner
                .get(&k)
                .and_then(|o| o.get(owner_uid))
                .into_iter()
                .flatten()
                .filter_map(|uid| objects.and_then(|m| m.get(uid)).map(|(_, o)| o.clone()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    fn obj(uid: &str, owner: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": uid, "namespace": "ns", "uid": uid, "ownerReferences": [
                {"apiVersion": "v1", "kind": "X", "name": "p", "uid": owner, "controller": true}
            ]}
        }))
        .unwrap_or_else(|_| {
            DynamicObject::new("x", &kube::core::ApiResource::erase::<ConfigMap>(&()))
        })
    }

    #[test]
    fn indexes_by_owner_and_answers_only_when_synced() {
        let kind = ChildKind::of::<ConfigMap>();
        let index = OwnerIndex::new();
        index.apply(&kind, obj("a", "p1"));
        index.apply(&kind, obj("b", "p1"));
        index.apply(&kind, obj("c", "p2"));
        assert!(index.owned_by(&kind, "p1").is_none(), "not synced yet");
        index.mark_synced(&kind);
        assert_eq!(index.owned_by(&kind, "p1").map(|v| v.len()), Some(2));
        // Re-owned and deleted objects leave their old bucket.
        index.apply(&kind, obj("b", "p2"));
        index.delete(&kind, &obj("a", "p1"));
        assert_eq!(index.owned_by(&kind, "p1").map(|v| v.len()), Some(0));
        assert_eq!(index.owned_by(&kind, "p2").map(|v| v.len()), Some(2));
    }
}
