//! The index's owner lookup: controller owner UID -> its children of every kind.
//!
//! Why this shape: an owner has few children (a ModelService 13), so one entry per
//! owner holding a small sorted `Vec` of (kind, child UID) costs far less than a map per kind
//! holding a `BTreeSet` per owner (a B-tree node of 11 `String` slots for one child: 2.9 MiB
//! of the 9.9 MiB the index's bookkeeping took for 13,000 children, heaptrack 2026-11-21).
//! Keys and child UIDs are the `Arc<str>`s the object map holds: one allocation per UID.
//! Adding or removing a child costs a binary search and a shift of the owner's children.
//!
//! Contract: [`Owners::children`] yields the UIDs added under an owner and kind and not
//! removed since, sorted by UID (the order a `BTreeSet` gave); an owner without children has
//! no entry.

use std::collections::HashMap;
use std::sync::Arc;

/// A kind's index in the index's table of kinds.
pub(super) type KindId = usize;

/// See the module contract.
#[derive(Debug, Default)]
pub(super) struct Owners(HashMap<Arc<str>, Vec<(KindId, Arc<str>)>>);

impl Owners {
    /// Adds `uid` of `kind` under `owner`; returns the owner UID to keep in the child (the
    /// map's own when the owner has children already, so all of them share it).
    pub(super) fn add(&mut self, owner: Arc<str>, kind: KindId, uid: &Arc<str>) -> Arc<str> {
        let owner = match self.0.get_key_value(&*owner) {
            Some((shared, _)) => Arc::clone(shared),
            None => owner,
        };
        let children = self.0.entry(Arc::clone(&owner)).or_default();
        if let Err(at) = children.binary_search_by(|(k, u)| (*k, &**u).cmp(&(kind, &**uid))) {
            children.insert(at, (kind, Arc::clone(uid)));
        }
        owner
    }

    /// Removes `uid` of `kind` from `owner`'s children.
    pub(super) fn remove(&mut self, owner: &str, kind: KindId, uid: &str) {
        if let Some(children) = self.0.get_mut(owner) {
            if let Ok(at) = children.binary_search_by(|(k, u)| (*k, &**u).cmp(&(kind, uid))) {
                children.remove(at);
            }
            if children.is_empty() {
                self.0.remove(owner);
            }
        }
    }

    /// The UIDs of `owner`'s children of `kind`, sorted.
    pub(super) fn children(&self, owner: &str, kind: KindId) -> impl Iterator<Item = &str> {
        self.0
            .get(owner)
            .into_iter()
            .flatten()
            .filter(move |(k, _)| *k == kind)
            .map(|(_, uid)| &**uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_are_per_owner_and_kind_sorted_shared_and_removed() {
        let mut o = Owners::default();
        let (a, b, c) = (Arc::from("a"), Arc::from("b"), Arc::from("c"));
        let first = o.add(Arc::from("p"), 1, &c);
        let second = o.add(Arc::from("p"), 1, &a);
        assert!(
            Arc::ptr_eq(&first, &second),
            "one owner UID for its children"
        );
        o.add(Arc::from("p"), 0, &b);
        o.add(Arc::from("p"), 1, &a);
        assert_eq!(o.children("p", 1).collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(o.children("p", 0).collect::<Vec<_>>(), ["b"]);
        assert_eq!(o.children("q", 1).count(), 0);
        o.remove("p", 1, "a");
        o.remove("p", 1, "x");
        o.remove("q", 1, "a");
        assert_eq!(o.children("p", 1).collect::<Vec<_>>(), ["c"]);
        o.remove("p", 1, "c");
        o.remove("p", 0, "b");
        assert!(o.0.is_empty(), "an owner without children has no entry");
    }
}
