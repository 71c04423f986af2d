//! The data behind [`super::OwnerIndex`]: objects kept compact, indexed by owner UID and by
//! name, and which watch (feed) has reported each one.
//!
//! Contract: every object records the feeds that reported it and have not yet seen it go
//! (`Held::feeds`). When an object leaves the index (a delete event or a re-list of one feed)
//! while other feeds still count it, it is kept as a ghost for them: each of those feeds drops
//! it from its count on its own delete event, or reports it as dropped at its own next re-list
//! (the delete happened while its watch was down). So every feed reports every object it has
//! seen whose deletion it missed, whichever feed noticed first: per-namespace controllers
//! sharing a cluster-wide kind each reconcile their own parents. A feed that stops for good
//! leaves its ghosts behind until the index is dropped (an operator builds a new index for
//! each set of controllers).
//!
//! Memory: the index holds every child an operator owns, so what it keeps per object besides
//! the object itself is small: one `Arc<str>` per UID, shared by the object map and the owner
//! lookup ([`super::owners`], which also shares one owner UID among an owner's children),
//! namespaces interned ([`super::intern`]), the feeds inline for the common single feed
//! ([`super::feeds`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kube::core::DynamicObject;

use super::feeds::Feeds;
use super::intern::Interner;
use super::owners::{KindId, Owners};
use super::{Feed, KindKey, ListKey, NameKey, ScopeKey};
use crate::packed::Packed;

/// An object kept as its deflated JSON ([`Packed`]), with the namespace a re-list replaces by.
#[derive(Debug, Clone)]
pub(super) struct Compact {
    /// Interned: shared by the objects of a namespace.
    pub(super) namespace: Option<Arc<str>>,
    pub(super) json: Packed,
}

impl Compact {
    pub(super) fn object(&self) -> Option<DynamicObject> {
        self.json.value()
    }

    fn within(&self, scope: Option<&str>) -> bool {
        scope.is_none() || self.namespace.as_deref() == scope
    }
}

/// How an object is found: by its controller owner's UID, or (without one) by its name.
#[derive(Debug)]
enum Link {
    Owner(Arc<str>),
    Name(Box<str>),
}

/// An object as a feed reports it: its UID, how it is found, the object. Built before the
/// index's lock is taken, so its strings are not shared yet (the index shares them on insert).
#[derive(Debug)]
pub(super) struct Kept {
    uid: Arc<str>,
    link: Link,
    namespace: Option<String>,
    json: Packed,
}

impl Kept {
    /// `None` for an object without a UID, one without a name, and one without a controller
    /// owner when `feed` does not keep those by name.
    pub(super) fn of(obj: &DynamicObject, feed: Feed) -> Option<Self> {
        let link = match controller_uid(obj) {
            Some(owner) => Link::Owner(Arc::from(owner)),
            None if feed.by_name => Link::Name(obj.metadata.name.as_deref()?.into()),
            None => return None,
        };
        Some(Self {
            uid: Arc::from(obj.metadata.uid.as_deref()?),
            link,
            namespace: obj.metadata.namespace.clone(),
            json: Packed::of(obj)?,
        })
    }
}

fn controller_uid(obj: &DynamicObject) -> Option<&str> {
    obj.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.as_str())
}

/// An object in the index and the feeds that count it.
#[derive(Debug)]
struct Held {
    link: Link,
    object: Compact,
    feeds: Feeds,
}

/// An object gone from the index that some feeds still count (see the module contract).
#[derive(Debug)]
struct Ghost {
    object: Compact,
    feeds: Feeds,
}

/// The objects of one kind.
#[derive(Debug, Default)]
struct Table {
    /// Object UID -> the object.
    objects: HashMap<Arc<str>, Held>,
    /// (namespace, name) -> UID, for objects without a controller owner.
    by_name: HashMap<NameKey, Arc<str>>,
    /// UID -> objects gone that some feeds still count.
    ghosts: HashMap<Arc<str>, Ghost>,
}

impl Table {
    /// `feed` no longer counts the ghost `uid` (it saw the object go); returns the object when
    /// `feed` counted it.
    fn unhaunt(&mut self, uid: &str, feed: u64) -> Option<Compact> {
        if !self.ghosts.get(uid)?.feeds.contains(feed) {
            return None;
        }
        let (uid, ghost) = self.ghosts.remove_entry(uid)?;
        match ghost.feeds.without(feed) {
            Some(feeds) => {
                let object = ghost.object.clone();
                self.ghosts.insert(
                    uid,
                    Ghost {
                        object: ghost.object,
                        feeds,
                    },
                );
                Some(object)
            }
            None => Some(ghost.object),
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Inner {
    /// Scopes whose (latest) list is complete.
    pub(super) synced: HashSet<ScopeKey>,
    /// Objects of a re-list in progress, per scope and feed (compact too: a re-list of every
    /// child at once is the peak).
    pub(super) pending: HashMap<ListKey, Vec<Kept>>,
    /// Feed ids handed out ([`super::OwnerIndex::feed`]).
    pub(super) feeds: u64,
    /// Kind -> its table's index in `tables` (kinds are few and never leave).
    kinds: HashMap<KindKey, KindId>,
    tables: Vec<Table>,
    /// Owner UID -> its children, of every kind.
    owners: Owners,
    namespaces: Interner,
}

/// The key of `by_name`.
fn name_key(namespace: Option<&str>, name: &str) -> NameKey {
    (namespace.map(str::to_owned), name.to_owned())
}

impl Inner {
    pub(super) fn answers(&self, k: &KindKey, namespace: Option<&str>) -> bool {
        self.synced.contains(&(k.clone(), None))
            || namespace.is_some_and(|ns| self.synced.contains(&(k.clone(), Some(ns.to_owned()))))
    }

    fn id(&self, k: &KindKey) -> Option<KindId> {
        self.kinds.get(k).copied()
    }

    fn table(&self, k: &KindKey) -> Option<(KindId, &Table)> {
        let id = self.id(k)?;
        Some((id, self.tables.get(id)?))
    }

    /// The id of kind `k`, which gets a table when new.
    fn id_or_add(&mut self, k: &KindKey) -> KindId {
        if let Some(id) = self.id(k) {
            return id;
        }
        let id = self.tables.len();
        self.tables.push(Table::default());
        self.kinds.insert(k.clone(), id);
        id
    }

    /// The objects of kind `k` whose controller owner is `owner`, by UID.
    pub(super) fn owned_by<'a>(
        &'a self,
        k: &KindKey,
        owner: &'a str,
    ) -> impl Iterator<Item = &'a Compact> {
        self.table(k).into_iter().flat_map(move |(id, table)| {
            self.owners
                .children(owner, id)
                .filter_map(move |uid| table.objects.get(uid))
                .map(|held| &held.object)
        })
    }

    /// The object of kind `k` without a controller owner kept under `key`.
    pub(super) fn named(&self, k: &KindKey, key: &NameKey) -> Option<&Compact> {
        let (_, table) = self.table(k)?;
        let held = table.objects.get(table.by_name.get(key)?)?;
        Some(&held.object)
    }

    /// The object `uid` of kind `k`, to corrupt in a test.
    #[cfg(test)]
    pub(super) fn object_mut(&mut self, k: &KindKey, uid: &str) -> Option<&mut Compact> {
        let id = self.id(k)?;
        let held = self.tables.get_mut(id)?.objects.get_mut(uid)?;
        Some(&mut held.object)
    }

    /// The object `obj` `feed` reported as added or modified, with `kept` its
    /// [`Kept::of`] (built by the caller before it takes the index's write lock: packing an
    /// object costs tens of microseconds, which no reader should wait for).
    pub(super) fn apply(
        &mut self,
        k: &KindKey,
        obj: &DynamicObject,
        kept: Option<Kept>,
        feed: u64,
    ) {
        if let Some(kept) = kept {
            let id = self.id_or_add(k);
            self.insert(id, kept, feed);
        } else if let Some(uid) = obj.metadata.uid.as_deref() {
            let owned = self
                .table(k)
                .and_then(|(_, t)| t.objects.get(uid))
                .is_some_and(|h| matches!(h.link, Link::Owner(_)));
            if owned {
                // No longer one to keep (its controller owner went): as if deleted.
                self.delete(k, uid, feed);
            } else if let Some(id) = self.id(k)
                && let Some(table) = self.tables.get_mut(id)
            {
                // Already gone from the index (another feed saw its owner go first): `feed`
                // has seen it too, so it must not report it at its next re-list.
                table.unhaunt(uid, feed);
            }
        }
    }

    /// The object `uid` `feed` reported deleted.
    pub(super) fn delete(&mut self, k: &KindKey, uid: &str, feed: u64) {
        let Some(id) = self.id(k) else {
            return;
        };
        if let Some((key, held)) = self.remove_uid(id, uid) {
            self.haunt(id, key, held.object, held.feeds, feed);
        }
        if let Some(table) = self.tables.get_mut(id) {
            table.unhaunt(uid, feed);
        }
    }

    /// Keeps `object` as a ghost for `feeds` but `seen_by` (see the module contract).
    fn haunt(&mut self, id: KindId, uid: Arc<str>, object: Compact, feeds: Feeds, seen_by: u64) {
        if let Some(feeds) = feeds.without(seen_by)
            && let Some(table) = self.tables.get_mut(id)
        {
            table.ghosts.insert(uid, Ghost { object, feeds });
        }
    }

    fn insert(&mut self, id: KindId, kept: Kept, feed: u64) {
        let Kept {
            uid,
            link,
            namespace,
            json,
        } = kept;
        let object = Compact {
            namespace: namespace.as_deref().map(|ns| self.namespaces.intern(ns)),
            json,
        };
        let Some(table) = self.tables.get_mut(id) else {
            return;
        };
        // The map's UID when the object is there already: its owner's entry shares it.
        let (uid, feeds, previous) = if let Some((shared, held)) = table.objects.remove_entry(&*uid)
        {
            (shared, Some(held.feeds), Some((held.link, held.object)))
        } else {
            let ghost = table.ghosts.remove(&*uid);
            (uid, ghost.map(|g| g.feeds), None)
        };
        let feeds = feeds.map_or(Feeds::One(feed), |f| f.with(feed));
        let link = match (previous, link) {
            // Modified but still of the same owner (most events): the owner lookup stays.
            (Some((Link::Owner(old), _)), Link::Owner(new)) if old == new => Link::Owner(old),
            (previous, link) => {
                if let Some((old, was)) = previous {
                    self.unlink(id, &uid, &old, was.namespace.as_deref());
                }
                self.link(id, &uid, link, object.namespace.as_deref())
            }
        };
        if let Some(table) = self.tables.get_mut(id) {
            table.objects.insert(
                uid,
                Held {
                    link,
                    object,
                    feeds,
                },
            );
        }
    }

    /// Makes the object `uid` found through `link`; returns the link to keep in it.
    fn link(&mut self, id: KindId, uid: &Arc<str>, link: Link, namespace: Option<&str>) -> Link {
        match link {
            Link::Owner(owner) => Link::Owner(self.owners.add(owner, id, uid)),
            Link::Name(name) => {
                let previous = self.tables.get_mut(id).and_then(|t| {
                    t.by_name
                        .insert(name_key(namespace, &name), Arc::clone(uid))
                });
                // Another UID under the same name (recreated before its delete event came) is
                // replaced: one object per name.
                if let Some(previous) = previous
                    && previous != *uid
                {
                    self.remove_uid(id, &previous);
                }
                Link::Name(name)
            }
        }
    }

    /// Undoes [`Self::link`] of the object `uid` in `namespace`.
    fn unlink(&mut self, id: KindId, uid: &str, link: &Link, namespace: Option<&str>) {
        match link {
            Link::Owner(owner) => self.owners.remove(owner, id, uid),
            Link::Name(name) => {
                if let Some(table) = self.tables.get_mut(id) {
                    let key = name_key(namespace, name);
                    if table.by_name.get(&key).is_some_and(|u| **u == *uid) {
                        table.by_name.remove(&key);
                    }
                }
            }
        }
    }

    /// Drops the object `uid` of kind `id` from the index; returns it and its shared UID.
    fn remove_uid(&mut self, id: KindId, uid: &str) -> Option<(Arc<str>, Held)> {
        let (key, held) = self.tables.get_mut(id)?.objects.remove_entry(uid)?;
        self.unlink(id, uid, &held.link, held.object.namespace.as_deref());
        Some((key, held))
    }

    /// `feed`'s list of kind `k` in `scope` is `listed`: every other object of that scope
    /// `feed` counted leaves the index (objects only other feeds reported stay: those watches
    /// may select differently, and each re-lists for itself). Returns the objects `feed`
    /// counted that the list no longer has (deleted while its watch was down), whether still
    /// in the index or already ghosts.
    pub(super) fn replace(
        &mut self,
        k: &KindKey,
        scope: Option<&str>,
        listed: Vec<Kept>,
        feed: u64,
    ) -> Vec<Compact> {
        let id = self.id_or_add(k);
        let uids: HashSet<&str> = listed.iter().map(|o| &*o.uid).collect();
        let missed = |uid: &Arc<str>, object: &Compact, feeds: &Feeds| {
            object.within(scope) && feeds.contains(feed) && !uids.contains(&**uid)
        };
        let (mut stale, mut gone): (Vec<Arc<str>>, Vec<Arc<str>>) = match self.tables.get(id) {
            Some(t) => (
                t.objects
                    .iter()
                    .filter(|(uid, h)| missed(uid, &h.object, &h.feeds))
                    .map(|(uid, _)| Arc::clone(uid))
                    .collect(),
                t.ghosts
                    .iter()
                    .filter(|(uid, g)| missed(uid, &g.object, &g.feeds))
                    .map(|(uid, _)| Arc::clone(uid))
                    .collect(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        // Deterministic order of the dropped objects (the maps' is not).
        stale.sort();
        gone.sort();
        let mut dropped = Vec::new();
        for uid in stale {
            if let Some((uid, held)) = self.remove_uid(id, &uid) {
                dropped.push(held.object.clone());
                self.haunt(id, uid, held.object, held.feeds, feed);
            }
        }
        if let Some(table) = self.tables.get_mut(id) {
            dropped.extend(gone.iter().filter_map(|uid| table.unhaunt(uid, feed)));
        }
        for o in listed {
            self.insert(id, o, feed);
        }
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-object bookkeeping stays small (the index holds every child an operator owns).
    #[test]
    fn an_object_entry_is_small() {
        assert!(
            std::mem::size_of::<Held>() <= 72,
            "{}",
            std::mem::size_of::<Held>()
        );
        assert!(std::mem::size_of::<(Arc<str>, Held)>() <= 88);
    }
}
