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

use std::collections::{BTreeSet, HashMap, HashSet};

use kube::core::DynamicObject;

use super::{Feed, KindKey, ListKey, NameKey, ScopeKey};
use crate::packed::Packed;

/// An object kept as its deflated JSON ([`Packed`]), with the namespace a re-list replaces by.
#[derive(Debug, Clone)]
pub(super) struct Compact {
    pub(super) namespace: Option<String>,
    pub(super) json: Packed,
}

impl Compact {
    /// `None` for an object that does not serialise (never for a watched one).
    fn of(obj: &DynamicObject) -> Option<Self> {
        Some(Self {
            namespace: obj.metadata.namespace.clone(),
            json: Packed::of(obj)?,
        })
    }

    pub(super) fn object(&self) -> Option<DynamicObject> {
        self.json.value()
    }

    fn within(&self, scope: Option<&str>) -> bool {
        scope.is_none() || self.namespace.as_deref() == scope
    }
}

/// How an object is found: by its controller owner's UID, or (without one) by its name.
#[derive(Debug, Clone)]
enum Link {
    Owner(String),
    Name(String),
}

/// An object as a feed reports it: its UID, how it is found, the object.
#[derive(Debug)]
pub(super) struct Kept {
    uid: String,
    link: Link,
    object: Compact,
}

impl Kept {
    /// `None` for an object without a UID, one without a name, and one without a controller
    /// owner when `feed` does not keep those by name.
    pub(super) fn of(obj: &DynamicObject, feed: Feed) -> Option<Self> {
        let link = match controller_uid(obj) {
            Some(owner) => Link::Owner(owner),
            None if feed.by_name => Link::Name(obj.metadata.name.clone()?),
            None => return None,
        };
        Some(Self {
            uid: obj.metadata.uid.clone()?,
            link,
            object: Compact::of(obj)?,
        })
    }
}

fn controller_uid(obj: &DynamicObject) -> Option<String> {
    obj.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.clone())
}

/// An object in the index and the feeds that count it.
#[derive(Debug)]
pub(super) struct Held {
    link: Link,
    pub(super) object: Compact,
    feeds: Vec<u64>,
}

/// An object gone from the index that some feeds still count (see the module contract).
#[derive(Debug)]
struct Ghost {
    object: Compact,
    feeds: Vec<u64>,
}

#[derive(Debug, Default)]
pub(super) struct Inner {
    /// Scopes whose (latest) list is complete.
    pub(super) synced: HashSet<ScopeKey>,
    /// Objects of a re-list in progress, per scope and feed (compact too: a re-list of every
    /// child at once is the peak).
    pub(super) pending: HashMap<ListKey, Vec<Kept>>,
    /// kind -> object UID -> the object.
    pub(super) objects: HashMap<KindKey, HashMap<String, Held>>,
    /// kind -> owner UID -> object UIDs.
    pub(super) by_owner: HashMap<KindKey, HashMap<String, BTreeSet<String>>>,
    /// kind -> (namespace, name) -> UID, for objects without a controller owner.
    pub(super) by_name: HashMap<KindKey, HashMap<NameKey, String>>,
    /// kind -> UID -> objects gone that some feeds still count.
    ghosts: HashMap<KindKey, HashMap<String, Ghost>>,
    /// Feed ids handed out ([`super::OwnerIndex::feed`]).
    pub(super) feeds: u64,
}

impl Inner {
    pub(super) fn answers(&self, k: &KindKey, namespace: Option<&str>) -> bool {
        self.synced.contains(&(k.clone(), None))
            || namespace.is_some_and(|ns| self.synced.contains(&(k.clone(), Some(ns.to_owned()))))
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
            self.insert(k, kept, feed);
        } else if let Some(uid) = obj.metadata.uid.as_deref() {
            let owned = self
                .objects
                .get(k)
                .and_then(|m| m.get(uid))
                .is_some_and(|h| matches!(h.link, Link::Owner(_)));
            if owned {
                // No longer one to keep (its controller owner went): as if deleted.
                self.delete(k, uid, feed);
            } else {
                // Already gone from the index (another feed saw its owner go first): `feed`
                // has seen it too, so it must not report it at its next re-list.
                self.unhaunt(k, uid, feed);
            }
        }
    }

    /// The object `uid` `feed` reported deleted.
    pub(super) fn delete(&mut self, k: &KindKey, uid: &str, feed: u64) {
        if let Some(held) = self.remove_uid(k, uid) {
            self.haunt(k, uid, held.object, held.feeds, feed);
        }
        self.unhaunt(k, uid, feed);
    }

    /// `feed` no longer counts the ghost `uid` (it saw the object go).
    fn unhaunt(&mut self, k: &KindKey, uid: &str, feed: u64) {
        if let Some(ghosts) = self.ghosts.get_mut(k)
            && let Some(g) = ghosts.get_mut(uid)
        {
            g.feeds.retain(|f| *f != feed);
            if g.feeds.is_empty() {
                ghosts.remove(uid);
            }
        }
    }

    /// Keeps `object` as a ghost for `feeds` but `seen_by` (see the module contract).
    fn haunt(
        &mut self,
        k: &KindKey,
        uid: &str,
        object: Compact,
        mut feeds: Vec<u64>,
        seen_by: u64,
    ) {
        feeds.retain(|f| *f != seen_by);
        if !feeds.is_empty() {
            self.ghosts
                .entry(k.clone())
                .or_default()
                .insert(uid.to_owned(), Ghost { object, feeds });
        }
    }

    fn insert(&mut self, k: &KindKey, kept: Kept, feed: u64) {
        let mut feeds = match self.remove_uid(k, &kept.uid) {
            Some(held) => held.feeds,
            None => self
                .ghosts
                .get_mut(k)
                .and_then(|g| g.remove(&kept.uid))
                .map(|g| g.feeds)
                .unwrap_or_default(),
        };
        if !feeds.contains(&feed) {
            feeds.push(feed);
        }
        match &kept.link {
            Link::Owner(owner) => {
                self.by_owner
                    .entry(k.clone())
                    .or_default()
                    .entry(owner.clone())
                    .or_default()
                    .insert(kept.uid.clone());
            }
            Link::Name(name) => {
                let names = self.by_name.entry(k.clone()).or_default();
                let key = (kept.object.namespace.clone(), name.clone());
                // Another UID under the same name (recreated before its delete event came) is
                // replaced: one object per name.
                if let Some(previous) = names.insert(key, kept.uid.clone())
                    && previous != kept.uid
                    && let Some(m) = self.objects.get_mut(k)
                {
                    m.remove(&previous);
                }
            }
        }
        self.objects.entry(k.clone()).or_default().insert(
            kept.uid,
            Held {
                link: kept.link,
                object: kept.object,
                feeds,
            },
        );
    }

    /// Drops the object `uid` of kind `k` from the index; returns it.
    fn remove_uid(&mut self, k: &KindKey, uid: &str) -> Option<Held> {
        let held = self.objects.get_mut(k).and_then(|m| m.remove(uid))?;
        match &held.link {
            Link::Owner(owner) => {
                if let Some(owners) = self.by_owner.get_mut(k)
                    && let Some(set) = owners.get_mut(owner)
                {
                    set.remove(uid);
                    if set.is_empty() {
                        owners.remove(owner);
                    }
                }
            }
            Link::Name(name) => {
                if let Some(names) = self.by_name.get_mut(k) {
                    let key = (held.object.namespace.clone(), name.clone());
                    if names.get(&key).is_some_and(|u| u == uid) {
                        names.remove(&key);
                    }
                }
            }
        }
        Some(held)
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
        let uids: HashSet<&str> = listed.iter().map(|o| o.uid.as_str()).collect();
        let mut stale: Vec<String> = self
            .objects
            .get(k)
            .into_iter()
            .flatten()
            .filter(|(uid, held)| {
                held.object.within(scope)
                    && held.feeds.contains(&feed)
                    && !uids.contains(uid.as_str())
            })
            .map(|(uid, _)| uid.clone())
            .collect();
        // Deterministic order of the dropped objects (the map's is not).
        stale.sort();
        let mut dropped = Vec::new();
        for uid in stale {
            if let Some(held) = self.remove_uid(k, &uid) {
                dropped.push(held.object.clone());
                self.haunt(k, &uid, held.object, held.feeds, feed);
            }
        }
        if let Some(ghosts) = self.ghosts.get_mut(k) {
            let mut gone: Vec<&String> = ghosts
                .iter()
                .filter(|(uid, g)| {
                    g.object.within(scope)
                        && g.feeds.contains(&feed)
                        && !uids.contains(uid.as_str())
                })
                .map(|(uid, _)| uid)
                .collect();
            gone.sort();
            let gone: Vec<String> = gone.into_iter().cloned().collect();
            for uid in gone {
                if let Some(g) = ghosts.get_mut(&uid) {
                    dropped.push(g.object.clone());
                    g.feeds.retain(|f| *f != feed);
                    if g.feeds.is_empty() {
                        ghosts.remove(&uid);
                    }
                }
            }
        }
        for o in listed {
            self.insert(k, o, feed);
        }
        dropped
    }
}
