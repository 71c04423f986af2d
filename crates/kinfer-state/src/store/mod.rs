//! Children served from memory instead of a LIST per kind per reconcile.
//!
//! Contract: a [`ChildStore`] answers "the objects of this kind in this namespace whose
//! controller owner is this UID" for the kinds (and namespaces) it holds, and `None` for those
//! it does not (or not yet: before its watch has listed once), which the engine then LISTs.
//! The engine still filters what a store returns by its own labels and namespace, exactly like
//! a LIST by selector would.
//!
//! A store may also answer for one object by name ([`ChildStore::named`]): a planned object
//! that is not a child by owner reference (cluster-scoped objects a namespaced parent cannot
//! own, labelled with the parent instead). Only a hit counts: the store is fed by label-scoped
//! watches, so a miss says nothing about a foreign object of that name, and the engine then
//! reads it by name (so it refuses a foreign object instead of taking it over).
//!
//! [`OwnerIndex`] is the store an operator fills from the watches it already runs for its
//! controller's owned kinds ([`crate::child_watch`] feeds it with [`OwnerIndex::follow`]):
//! each watch has a scope (one namespace, or all), and the index answers for a namespace once
//! a watch covering it has listed. A re-list (`Init` .. `InitDone`) replaces what the scope
//! held at once, so objects deleted while the watch was down do not linger, and
//! [`OwnerIndex::follow`] returns the objects it dropped so their owners can be reconciled
//! (their delete event never came). Several watches may feed the same scope (per-namespace
//! controllers each watching a cluster-scoped kind): each watch is a [`Feed`] of its own,
//! whose list in progress is kept apart and which reports every object it reported before
//! and missed the deletion of, even when another feed saw it go first (`inner`'s contract).
//! Objects with a controller owner are indexed by owner UID, so a reconcile costs a hash
//! lookup, not a LIST; objects without one are kept (by name) only by feeds made for that
//! ([`OwnerIndex::named_feed`]: kinds a parent labels but cannot own), so an owned kind's
//! unowned objects cost no memory.
//!
//! Objects are kept serialised (`Compact`: their JSON bytes, deflated: [`crate::packed`]) and
//! parsed when a reconcile reads them (one that does not parse back makes the answer `None`,
//! never a shorter list): a `serde_json` tree of a Deployment costs about ten times its JSON
//! (measured ~30 KiB per cached child, 90 MiB per 1,000 Zerfoo services), and its JSON about
//! three times its deflated JSON, while a reconcile reads only its own few children, and
//! inflating and parsing them costs microseconds. No lock is held across either: an object
//! is deflated before the write lock is taken, and copied out under the read lock to be
//! inflated after it.

use std::fmt::Debug;
use std::sync::RwLock;

use kube::core::DynamicObject;
use kube::runtime::watcher::Event;

use crate::pipeline::{ChildKind, ObjectKey};

/// A source of children; see the module contract.
pub trait ChildStore: Send + Sync + Debug {
    /// The objects of `kind` in `namespace` (`None`: cluster-scoped parent, any namespace)
    /// with a controller owner reference to `owner_uid`; `None` when this store cannot answer
    /// for `kind` there.
    fn owned_by(
        &self,
        kind: &ChildKind,
        namespace: Option<&str>,
        owner_uid: &str,
    ) -> Option<Vec<DynamicObject>>;

    /// The object `key` of `kind` when this store holds it (see the module contract: a miss
    /// proves nothing). Default: never.
    fn named(&self, _kind: &ChildKind, _key: &ObjectKey) -> Option<DynamicObject> {
        None
    }
}

mod feeds;
mod inner;
mod intern;
mod owners;

use inner::{Compact, Inner, Kept};

/// One watch feeding an [`OwnerIndex`] ([`OwnerIndex::feed`], [`OwnerIndex::named_feed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feed {
    id: u64,
    /// Whether objects without a controller owner are kept, by name.
    by_name: bool,
}

impl Feed {
    /// The feed of [`OwnerIndex::observe`]: the only one of its scopes.
    const SOLE: Self = Self {
        id: 0,
        by_name: true,
    };
}

type KindKey = (String, String);
/// A kind and a watch scope (one namespace, or `None` for all).
type ScopeKey = (KindKey, Option<String>);
/// A scope and the feed (one watch) listing it.
type ListKey = (ScopeKey, u64);
/// A namespace (`None`: cluster-scoped) and a name.
type NameKey = (Option<String>, String);

fn kind_key(kind: &ChildKind) -> KindKey {
    (kind.resource.group.clone(), kind.resource.kind.clone())
}

/// A [`ChildStore`] indexed by controller owner UID, and by name for objects without a
/// controller owner; see the module contract.
#[derive(Debug, Default)]
pub struct OwnerIndex {
    inner: RwLock<Inner>,
}

impl OwnerIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Record an added or modified object of `kind` (a single feed keeping objects without a
    /// controller owner by name, as [`Self::observe`]).
    pub fn apply(&self, kind: &ChildKind, obj: &DynamicObject) {
        let kept = Kept::of(obj, Feed::SOLE);
        self.write()
            .apply(&kind_key(kind), obj, kept, Feed::SOLE.id);
    }

    /// Forget a deleted object of `kind`.
    pub fn delete(&self, kind: &ChildKind, obj: &DynamicObject) {
        let Some(uid) = obj.metadata.uid.as_deref() else {
            return;
        };
        self.write().delete(&kind_key(kind), uid, Feed::SOLE.id);
    }

    /// The list of `kind` in every namespace is complete: answer for it from now on.
    pub fn mark_synced(&self, kind: &ChildKind) {
        self.write().synced.insert((kind_key(kind), None));
    }

    /// Follow one event of the watch of `kind` over `scope` (a namespace, or `None` for all),
    /// the only watch feeding that scope, keeping objects without a controller owner by name;
    /// see [`Self::follow`].
    pub fn observe(&self, kind: &ChildKind, scope: Option<&str>, event: &Event<DynamicObject>) {
        self.follow(kind, scope, Feed::SOLE, event);
    }

    /// A new feed for [`Self::follow`], one per watch, keeping only objects with a controller
    /// owner (children found through [`ChildStore::owned_by`]).
    pub fn feed(&self) -> Feed {
        self.next_feed(false)
    }

    /// A new feed for [`Self::follow`], one per watch, that also keeps objects without a
    /// controller owner, by name ([`ChildStore::named`]): for kinds a parent labels but cannot
    /// own (cluster-scoped ones), not for every child kind (the memory, docs/operations.md).
    /// The feeds of one kind should all be of one sort: a feed that does not keep such objects
    /// neither serves nor drops them (a re-list drops only what its own feed reported), so they
    /// are served only while a named feed reports them.
    pub fn named_feed(&self) -> Feed {
        self.next_feed(true)
    }

    fn next_feed(&self, by_name: bool) -> Feed {
        let mut inner = self.write();
        inner.feeds += 1;
        Feed {
            id: inner.feeds,
            by_name,
        }
    }

    /// Follow one event of the watch `feed` ([`Self::feed`]) of `kind` over `scope` (a
    /// namespace, or `None` for all); returns, when the event completes a list, the objects
    /// this feed reported before that the list no longer has (deleted while its watch was
    /// down, whichever feed noticed first; see [`inner`]'s contract).
    pub fn follow(
        &self,
        kind: &ChildKind,
        scope: Option<&str>,
        feed: Feed,
        event: &Event<DynamicObject>,
    ) -> Vec<DynamicObject> {
        let k = kind_key(kind);
        let sk = (k.clone(), scope.map(str::to_owned));
        // Packed before the write lock is taken: readers (reconciles) never wait on a deflate.
        let kept = match event {
            Event::Apply(o) | Event::InitApply(o) => Kept::of(o, feed),
            Event::Delete(_) | Event::Init | Event::InitDone => None,
        };
        let mut inner = self.write();
        match event {
            Event::Apply(o) => inner.apply(&k, o, kept, feed.id),
            Event::Delete(o) => {
                if let Some(uid) = o.metadata.uid.as_deref() {
                    inner.delete(&k, uid, feed.id);
                }
            }
            Event::Init => {
                inner.pending.insert((sk, feed.id), Vec::new());
            }
            Event::InitApply(_) => {
                if let Some(kept) = kept {
                    inner.pending.entry((sk, feed.id)).or_default().push(kept);
                }
            }
            Event::InitDone => {
                let listed = inner
                    .pending
                    .remove(&(sk.clone(), feed.id))
                    .unwrap_or_default();
                let dropped = inner.replace(&k, scope, listed, feed.id);
                inner.synced.insert(sk);
                drop(inner);
                return dropped.iter().filter_map(Compact::object).collect();
            }
        }
        Vec::new()
    }
}

impl ChildStore for OwnerIndex {
    fn owned_by(
        &self,
        kind: &ChildKind,
        namespace: Option<&str>,
        owner_uid: &str,
    ) -> Option<Vec<DynamicObject>> {
        let k = kind_key(kind);
        // Copied out under the read lock, inflated and parsed after it is released: a watch
        // event waiting for the write lock does not wait for the parsing.
        let kept: Vec<Compact> = {
            let inner = self
                .inner
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !inner.answers(&k, namespace) {
                return None;
            }
            inner
                .owned_by(&k, owner_uid)
                .filter(|o| {
                    !kind.namespaced || namespace.is_none() || o.namespace.as_deref() == namespace
                })
                .cloned()
                .collect()
        };
        let parsed: Option<Vec<DynamicObject>> = kept.iter().map(Compact::object).collect();
        if parsed.is_none() {
            // A child the index cannot read back must not look missing (it would be applied
            // over or planned again): let the engine LIST instead.
            tracing::warn!(kind = %kind.resource.kind, owner = owner_uid, "a cached child does not parse; listing instead");
        }
        parsed
    }

    fn named(&self, kind: &ChildKind, key: &ObjectKey) -> Option<DynamicObject> {
        let k = kind_key(kind);
        let namespace = key.namespace.clone().filter(|_| kind.namespaced);
        // Copied out under the read lock, parsed after it (as in `owned_by`).
        let kept = {
            let inner = self
                .inner
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !inner.answers(&k, namespace.as_deref()) {
                return None;
            }
            inner.named(&k, &(namespace, key.name.clone()))?.clone()
        };
        kept.object()
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
        index.apply(&kind, &obj("a", "p1"));
        index.apply(&kind, &obj("b", "p1"));
        index.apply(&kind, &obj("c", "p2"));
        assert!(
            index.owned_by(&kind, Some("ns"), "p1").is_none(),
            "not synced yet"
        );
        index.mark_synced(&kind);
        assert_eq!(
            index.owned_by(&kind, Some("ns"), "p1").map(|v| v.len()),
            Some(2)
        );
        // Re-owned and deleted objects leave their old bucket.
        index.apply(&kind, &obj("b", "p2"));
        index.delete(&kind, &obj("a", "p1"));
        assert_eq!(
            index.owned_by(&kind, Some("ns"), "p1").map(|v| v.len()),
            Some(0)
        );
        assert_eq!(
            index.owned_by(&kind, Some("ns"), "p2").map(|v| v.len()),
            Some(2)
        );
    }

    /// One owner's children of several kinds share its entry in the owner lookup: each kind
    /// answers with its own only, a repeated event adds no duplicate, and a delete of one kind
    /// leaves the other alone.
    #[test]
    fn an_owner_of_several_kinds_is_answered_per_kind() {
        let (cms, secrets) = (
            ChildKind::of::<ConfigMap>(),
            ChildKind::of::<k8s_openapi::api::core::v1::Secret>(),
        );
        let index = OwnerIndex::new();
        for kind in [&cms, &secrets] {
            index.mark_synced(kind);
        }
        let uids = |kind: &ChildKind, owner: &str| {
            index.owned_by(kind, Some("ns"), owner).map(|v| {
                v.into_iter()
                    .filter_map(|o| o.metadata.uid)
                    .collect::<Vec<_>>()
            })
        };
        index.apply(&cms, &obj("c2", "p"));
        index.apply(&cms, &obj("c1", "p"));
        index.apply(&secrets, &obj("s1", "p"));
        index.apply(&cms, &obj("c1", "p"));
        assert_eq!(
            uids(&cms, "p"),
            Some(vec!["c1".to_owned(), "c2".to_owned()])
        );
        assert_eq!(uids(&secrets, "p"), Some(vec!["s1".to_owned()]));
        index.delete(&secrets, &obj("s1", "p"));
        assert_eq!(uids(&secrets, "p"), Some(vec![]));
        assert_eq!(uids(&cms, "p").map(|v| v.len()), Some(2));
        // The same UID under another kind (never in a real cluster) is another object.
        index.apply(&secrets, &obj("c1", "q"));
        index.delete(&cms, &obj("c1", "p"));
        assert_eq!(uids(&cms, "p"), Some(vec!["c2".to_owned()]));
        assert_eq!(uids(&secrets, "q"), Some(vec!["c1".to_owned()]));
    }

    fn in_ns(uid: &str, owner: &str, ns: &str) -> DynamicObject {
        let mut o = obj(uid, owner);
        o.metadata.namespace = Some(ns.to_owned());
        o
    }

    #[test]
    fn a_child_that_does_not_parse_back_makes_the_store_not_answer() {
        let kind = ChildKind::of::<ConfigMap>();
        let index = OwnerIndex::new();
        index.apply(&kind, &obj("a", "p"));
        index.apply(&kind, &obj("b", "p"));
        index.mark_synced(&kind);
        {
            let mut inner = index.write();
            if let Some(compact) = inner.object_mut(&kind_key(&kind), "b") {
                compact.json = crate::packed::Packed::from_json(b"{not json").expect("deflates");
            }
        }
        assert!(
            index.owned_by(&kind, Some("ns"), "p").is_none(),
            "a shorter list would read as a missing child"
        );
    }

    #[test]
    fn a_scoped_watch_answers_for_its_namespace_and_a_relist_replaces_its_scope() {
        let kind = ChildKind::of::<ConfigMap>();
        let index = OwnerIndex::new();
        index.observe(&kind, Some("a"), &Event::Init);
        index.observe(&kind, Some("a"), &Event::InitApply(in_ns("x", "p", "a")));
        assert!(index.owned_by(&kind, Some("a"), "p").is_none(), "listing");
        index.observe(&kind, Some("a"), &Event::InitDone);
        index.observe(&kind, Some("b"), &Event::Init);
        index.observe(&kind, Some("b"), &Event::InitApply(in_ns("y", "p", "b")));
        index.observe(&kind, Some("b"), &Event::InitDone);
        assert_eq!(
            index.owned_by(&kind, Some("a"), "p").map(|v| v.len()),
            Some(1)
        );
        assert!(
            index.owned_by(&kind, Some("c"), "p").is_none(),
            "not watched"
        );
        assert!(
            index.owned_by(&kind, None, "p").is_none(),
            "no watch of all namespaces"
        );

        // A re-list of `a` that no longer has `x` (deleted while disconnected) drops it and
        // leaves `b` alone; until InitDone the old view is served.
        index.observe(&kind, Some("a"), &Event::Init);
        index.observe(&kind, Some("a"), &Event::InitApply(in_ns("z", "q", "a")));
        assert_eq!(
            index.owned_by(&kind, Some("a"), "p").map(|v| v.len()),
            Some(1)
        );
        index.observe(&kind, Some("a"), &Event::InitDone);
        assert_eq!(
            index.owned_by(&kind, Some("a"), "p").map(|v| v.len()),
            Some(0)
        );
        assert_eq!(
            index.owned_by(&kind, Some("a"), "q").map(|v| v.len()),
            Some(1)
        );
        assert_eq!(
            index.owned_by(&kind, Some("b"), "p").map(|v| v.len()),
            Some(1)
        );

        index.observe(&kind, Some("b"), &Event::Delete(in_ns("y", "p", "b")));
        assert_eq!(
            index.owned_by(&kind, Some("b"), "p").map(|v| v.len()),
            Some(0)
        );
    }

    fn unowned(uid: &str, name: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "uid": uid}
        }))
        .unwrap_or_else(|_| {
            DynamicObject::new("x", &kube::core::ApiResource::erase::<ConfigMap>(&()))
        })
    }

    fn key_of(name: &str) -> ObjectKey {
        ObjectKey {
            kind: "ConfigMap".to_owned(),
            group: String::new(),
            namespace: Some("ns".to_owned()),
            name: name.to_owned(),
        }
    }

    #[test]
    fn objects_without_an_owner_are_served_by_name_once_listed() {
        let kind = ChildKind::of::<ConfigMap>();
        let index = OwnerIndex::new();
        index.observe(&kind, None, &Event::Init);
        index.observe(&kind, None, &Event::InitApply(unowned("u1", "shared")));
        index.observe(&kind, None, &Event::InitApply(obj("u2", "p")));
        assert!(index.named(&kind, &key_of("shared")).is_none(), "listing");
        index.observe(&kind, None, &Event::InitDone);
        let found = index
            .named(&kind, &key_of("shared"))
            .map(|o| o.metadata.uid);
        assert_eq!(found, Some(Some("u1".to_owned())));
        assert!(
            index.named(&kind, &key_of("u2")).is_none(),
            "owned objects are found through their owner"
        );
        assert!(index.named(&kind, &key_of("absent")).is_none());

        // Recreated under the same name (a new UID) before the old one's delete event: the new
        // one is served, and the late delete of the old one does not remove it.
        index.observe(&kind, None, &Event::Apply(unowned("u3", "shared")));
        index.observe(&kind, None, &Event::Delete(unowned("u1", "shared")));
        let found = index
            .named(&kind, &key_of("shared"))
            .map(|o| o.metadata.uid);
        assert_eq!(found, Some(Some("u3".to_owned())));
        index.observe(&kind, None, &Event::Delete(unowned("u3", "shared")));
        assert!(index.named(&kind, &key_of("shared")).is_none());
    }

    fn names(objects: &[DynamicObject]) -> Vec<String> {
        objects
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect()
    }

    #[test]
    fn a_relist_returns_what_it_dropped_and_feeds_of_one_scope_list_apart() {
        let kind = ChildKind::of::<ConfigMap>();
        let index = OwnerIndex::new();
        let (a, b) = (index.named_feed(), index.named_feed());
        assert_ne!(a, b);
        for f in [a, b] {
            index.follow(&kind, None, f, &Event::Init);
            index.follow(&kind, None, f, &Event::InitApply(obj("x", "p")));
            index.follow(&kind, None, f, &Event::InitApply(unowned("y", "shared")));
            index.follow(&kind, None, f, &Event::InitApply(unowned("z", "other")));
        }
        assert!(index.follow(&kind, None, a, &Event::InitDone).is_empty());
        assert!(index.follow(&kind, None, b, &Event::InitDone).is_empty());

        // Both watches down while "shared" goes; they re-list interleaved (per-namespace
        // controllers each watching a cluster-wide kind): neither list is mixed into the
        // other, and each reports the drop, also the one re-listing second (its controller
        // may be the only one whose namespace holds the parent).
        index.follow(&kind, None, a, &Event::Init);
        index.follow(&kind, None, b, &Event::Init);
        for f in [a, b] {
            index.follow(&kind, None, f, &Event::InitApply(obj("x", "p")));
            index.follow(&kind, None, f, &Event::InitApply(unowned("z", "other")));
        }
        let dropped = index.follow(&kind, None, a, &Event::InitDone);
        assert_eq!(names(&dropped), ["shared"], "deleted while a was down");
        assert!(index.named(&kind, &key_of("shared")).is_none());
        let dropped = index.follow(&kind, None, b, &Event::InitDone);
        assert_eq!(names(&dropped), ["shared"], "deleted while b was down");
        assert_eq!(
            index.owned_by(&kind, Some("ns"), "p").map(|v| v.len()),
            Some(1)
        );
        assert!(index.named(&kind, &key_of("other")).is_some());

        // Only b was down when "other" went: a's delete event removes it; b's re-list still
        // reports it, a's next re-list does not again.
        index.follow(&kind, None, a, &Event::Delete(unowned("z", "other")));
        assert!(index.named(&kind, &key_of("other")).is_none());
        index.follow(&kind, None, b, &Event::Init);
        index.follow(&kind, None, b, &Event::InitApply(obj("x", "p")));
        let dropped = index.follow(&kind, None, b, &Event::InitDone);
        assert_eq!(names(&dropped), ["other"], "b never saw it go");
        index.follow(&kind, None, a, &Event::Init);
        index.follow(&kind, None, a, &Event::InitApply(obj("x", "p")));
        assert!(index.follow(&kind, None, a, &Event::InitDone).is_empty());

        // Both saw it go: nobody reports it later, and nothing lingers for them.
        index.follow(&kind, None, a, &Event::Apply(unowned("w", "late")));
        index.follow(&kind, None, b, &Event::Apply(unowned("w", "late")));
        index.follow(&kind, None, a, &Event::Delete(unowned("w", "late")));
        index.follow(&kind, None, b, &Event::Delete(unowned("w", "late")));
        for f in [a, b] {
            index.follow(&kind, None, f, &Event::Init);
            index.follow(&kind, None, f, &Event::InitApply(obj("x", "p")));
            assert!(index.follow(&kind, None, f, &Event::InitDone).is_empty());
        }
    }

    /// A whole list of `feed` (all namespaces) holding `objects`; returns what it dropped.
    fn relist(
        index: &OwnerIndex,
        kind: &ChildKind,
        feed: Feed,
        objects: &[DynamicObject],
    ) -> Vec<DynamicObject> {
        index.follow(kind, None, feed, &Event::Init);
        for o in objects {
            index.follow(kind, None, feed, &Event::InitApply(o.clone()));
        }
        index.follow(kind, None, feed, &Event::InitDone)
    }

    #[test]
    fn a_relist_drops_only_what_its_own_feed_reported() {
        let kind = ChildKind::of::<ConfigMap>();
        let index = OwnerIndex::new();
        // Two watches of one scope selecting differently: each lists only its own.
        let (a, b) = (index.feed(), index.feed());
        assert!(relist(&index, &kind, a, &[obj("x", "p")]).is_empty());
        assert!(relist(&index, &kind, b, &[obj("y", "q")]).is_empty());
        // a re-lists: y was never a's to drop.
        assert!(relist(&index, &kind, a, &[obj("x", "p")]).is_empty());
        assert_eq!(
            index.owned_by(&kind, Some("ns"), "q").map(|v| v.len()),
            Some(1),
            "another watch's object left the index"
        );
        // Nor did it become a ghost b reports as deleted at its own re-list.
        assert!(relist(&index, &kind, b, &[obj("y", "q")]).is_empty());
    }

    #[test]
    fn a_feed_that_sees_a_child_lose_its_owner_no_longer_counts_it() {
        let kind = ChildKind::of::<ConfigMap>();
        let index = OwnerIndex::new();
        let (a, b) = (index.feed(), index.feed());
        for f in [a, b] {
            relist(&index, &kind, f, &[obj("x", "p")]);
        }
        // x loses its owner; a reports it first (it leaves the index), then b.
        let orphan = unowned("x", "x");
        index.follow(&kind, None, a, &Event::Apply(orphan.clone()));
        assert_eq!(
            index.owned_by(&kind, Some("ns"), "p").map(|v| v.len()),
            Some(0)
        );
        index.follow(&kind, None, b, &Event::Apply(orphan.clone()));
        // Both saw it go: neither re-list reports it as deleted behind its back.
        for f in [a, b] {
            assert!(
                relist(&index, &kind, f, std::slice::from_ref(&orphan)).is_empty(),
                "feed {f:?} reported a child it saw lose its owner"
            );
        }
    }

    #[test]
    fn a_feed_of_owned_children_keeps_no_object_without_an_owner() {
        let kind = ChildKind::of::<ConfigMap>();
        let index = OwnerIndex::new();
        let f = index.feed();
        index.follow(&kind, None, f, &Event::Init);
        index.follow(&kind, None, f, &Event::InitApply(unowned("y", "shared")));
        index.follow(&kind, None, f, &Event::InitApply(obj("x", "p")));
        index.follow(&kind, None, f, &Event::InitDone);
        assert!(index.named(&kind, &key_of("shared")).is_none());
        assert_eq!(
            index.owned_by(&kind, Some("ns"), "p").map(|v| v.len()),
            Some(1)
        );
    }
}
