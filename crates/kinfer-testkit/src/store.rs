//! Object storage with a single global resourceVersion counter and a bounded event history.
//!
//! Contract: every successful write gets the next resourceVersion, is stored, appended to the
//! history and broadcast to live watches while the store lock is held, so a watch that reads the
//! history and subscribes under the same lock never misses or duplicates an event. Watches that
//! start from a version older than the oldest kept event get [`Expired`].
//!
//! Objects are `Arc<Value>`, shared between the store and the events of the history.
//!
//! For the garbage collector the store keeps, updated by every put and remove, a uid → key
//! index, an owner uid → dependents index, and the set of uids whose change may need the
//! collector's attention (see [`Txn::take_dirty`]); it wakes the collector when that set grows.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::{Notify, broadcast};

/// (group, plural): one storage bucket shared by all versions of a resource.
pub type Bucket = (String, String);
/// (namespace or empty, name).
pub type ObjKey = (String, String);

/// Watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Updated.
    Modified,
    /// Removed.
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One stored change.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion of this change.
    pub rv: u64,
    /// Which bucket.
    pub bucket: Bucket,
    /// Type of change.
    pub kind: EventType,
    /// The object after the change (before it, for deletes).
    pub object: Arc<Value>,
    /// The object before the change, for modifications.
    pub old: Option<Arc<Value>>,
}

/// Past events and a receiver of the future ones.
pub type WatchStart = (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>);

/// A watch asked for a version no longer in the history.
#[derive(Debug, Clone, Copy)]
pub struct Expired {
    /// The oldest version a watch may start from.
    pub oldest: u64,
}

#[derive(Debug)]
struct Inner {
    rv: u64,
    objects: BTreeMap<Bucket, BTreeMap<ObjKey, Arc<Value>>>,
    /// uid -> where the object is.
    uids: HashMap<String, (Bucket, ObjKey)>,
    /// owner uid -> the objects with an owner reference to it.
    dependents: HashMap<String, BTreeSet<(Bucket, ObjKey)>>,
    /// uids the garbage collector has to look at.
    dirty: BTreeSet<String>,
    history: VecDeque<Arc<Event>>,
    /// Watches from a version below this are expired.
    compacted: u64,
    /// `continue` tokens from a version below this are expired (only [`Txn::expire_history`]
    /// moves it: pages are not snapshots, so trimming the history never breaks a paginated list).
    continue_floor: u64,
}

/// The object store.
#[derive(Debug)]
pub struct Store {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Event>>,
    history_limit: usize,
    gc: Notify,
}

/// A locked view of the store for read-modify-write sequences.
#[derive(Debug)]
pub struct Txn<'a> {
    inner: MutexGuard<'a, Inner>,
    tx: &'a broadcast::Sender<Arc<Event>>,
    history_limit: usize,
    gc: &'a Notify,
}

impl Store {
    /// A new empty store keeping `history_limit` events for watches.
    pub fn new(history_limit: usize) -> Self {
        let (tx, _) = broadcast::channel(16_384);
        Self {
            inner: Mutex::new(Inner {
                rv: 1,
                objects: BTreeMap::new(),
                uids: HashMap::new(),
                dependents: HashMap::new(),
                dirty: BTreeSet::new(),
                history: VecDeque::new(),
                compacted: 0,
                continue_floor: 0,
            }),
            tx,
            history_limit,
            gc: Notify::new(),
        }
    }

    /// Lock the store.
    pub fn txn(&self) -> Txn<'_> {
        let inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Txn {
            inner,
            tx: &self.tx,
            history_limit: self.history_limit,
            gc: &self.gc,
        }
    }

    /// Notified whenever the garbage collector has something to look at.
    pub fn gc_signal(&self) -> &Notify {
        &self.gc
    }

    /// A receiver of every future event (used by the simulator and the garbage collector).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
}

impl Txn<'_> {
    /// The current (latest) resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.inner.rv
    }

    /// One object.
    pub fn get(&self, bucket: &Bucket, key: &ObjKey) -> Option<&Value> {
        self.get_arc(bucket, key).map(AsRef::as_ref)
    }

    /// One object, shared.
    pub fn get_arc(&self, bucket: &Bucket, key: &ObjKey) -> Option<&Arc<Value>> {
        self.inner.objects.get(bucket).and_then(|m| m.get(key))
    }

    /// The object with this uid, with where it is.
    pub fn by_uid(&self, uid: &str) -> Option<(&Bucket, &ObjKey, &Value)> {
        let (b, k) = self.inner.uids.get(uid)?;
        self.get(b, k).map(|v| (b, k, v))
    }

    /// Where the objects with an owner reference to `uid` are.
    pub fn dependents_of(&self, uid: &str) -> Vec<(Bucket, ObjKey)> {
        self.inner
            .dependents
            .get(uid)
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every object of one namespace, across buckets.
    pub fn in_namespace<'s>(
        &'s self,
        ns: &'s str,
    ) -> impl Iterator<Item = (&'s Bucket, &'s ObjKey, &'s Value)> + 's {
        self.inner.objects.iter().flat_map(move |(b, m)| {
            m.range((ns.to_owned(), String::new())..)
                .take_while(move |((n, _), _)| n == ns)
                .map(move |(k, v)| (b, k, v.as_ref()))
        })
    }

    /// The uids marked for the garbage collector since the last call.
    pub fn take_dirty(&mut self) -> BTreeSet<String> {
        std::mem::take(&mut self.inner.dirty)
    }

    /// Objects of a bucket, optionally in one namespace, in (namespace, name) order.
    pub fn list(&self, bucket: &Bucket, namespace: Option<&str>) -> Vec<&Value> {
        self.range(bucket, namespace, None).collect()
    }

    /// Objects of a bucket, optionally in one namespace, in (namespace, name) order, starting
    /// after the key `after` (a tree range: neither the namespace nor the skipped prefix is
    /// scanned).
    pub fn range<'s>(
        &'s self,
        bucket: &Bucket,
        namespace: Option<&str>,
        after: Option<&ObjKey>,
    ) -> impl Iterator<Item = &'s Value> + use<'s> {
        self.range_arc(bucket, namespace, after).map(AsRef::as_ref)
    }

    /// [`Txn::range`], shared.
    pub fn range_arc<'s>(
        &'s self,
        bucket: &Bucket,
        namespace: Option<&str>,
        after: Option<&ObjKey>,
    ) -> impl Iterator<Item = &'s Arc<Value>> + use<'s> {
        let start = match (namespace, after) {
            (Some(ns), Some(a)) if a.0.as_str() < ns => {
                Bound::Included((ns.to_owned(), String::new()))
            }
            (_, Some(a)) => Bound::Excluded(a.clone()),
            (Some(ns), None) => Bound::Included((ns.to_owned(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let namespace = namespace.map(str::to_owned);
        self.inner
            .objects
            .get(bucket)
            .into_iter()
            .flat_map(move |m| m.range((start.clone(), Bound::Unbounded)))
            .take_while(move |((ns, _), _)| namespace.as_ref().is_none_or(|n| n == ns))
            .map(|(_, v)| v)
    }

    /// Every bucket with its objects.
    pub fn buckets(&self) -> impl Iterator<Item = (&Bucket, &BTreeMap<ObjKey, Arc<Value>>)> {
        self.inner.objects.iter()
    }

    /// Store an object (create or replace), assigning the next resourceVersion; returns it.
    pub fn put(&mut self, bucket: &Bucket, key: ObjKey, mut object: Value) -> Arc<Value> {
        self.inner.rv += 1;
        let rv = self.inner.rv;
        object["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let object = Arc::new(object);
        let at = key.clone();
        let old = self
            .inner
            .objects
            .entry(bucket.clone())
            .or_default()
            .insert(key, Arc::clone(&object));
        self.index(bucket, &at, old.as_deref(), Some(&object));
        let kind = if old.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.emit(Event {
            rv,
            bucket: bucket.clone(),
            kind,
            object: Arc::clone(&object),
            old,
        });
        object
    }

    /// Remove an object; the DELETED event carries a fresh resourceVersion.
    pub fn remove(&mut self, bucket: &Bucket, key: &ObjKey) -> Option<Arc<Value>> {
        let gone = self.inner.objects.get_mut(bucket)?.remove(key)?;
        self.index(bucket, key, Some(&gone), None);
        self.inner.rv += 1;
        let rv = self.inner.rv;
        let mut object = Arc::unwrap_or_clone(gone);
        object["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let object = Arc::new(object);
        self.emit(Event {
            rv,
            bucket: bucket.clone(),
            kind: EventType::Deleted,
            object: Arc::clone(&object),
            old: None,
        });
        Some(object)
    }

    /// Keep the indexes up to date with a change from `old` to `new` at `key`, and mark what the
    /// garbage collector has to look at.
    fn index(&mut self, bucket: &Bucket, key: &ObjKey, old: Option<&Value>, new: Option<&Value>) {
        let before = self.inner.dirty.len();
        let uid = |v: &Value| v["metadata"]["uid"].as_str().map(str::to_owned);
        let old_owners = old.map(owner_uids).unwrap_or_default();
        let new_owners = new.map(owner_uids).unwrap_or_default();
        let entry = (bucket.clone(), key.clone());
        for o in old_owners.difference(&new_owners) {
            if let Some(d) = self.inner.dependents.get_mut(o) {
                d.remove(&entry);
                if d.is_empty() {
                    self.inner.dependents.remove(o);
                }
            }
        }
        for o in new_owners.difference(&old_owners) {
            self.inner
                .dependents
                .entry(o.clone())
                .or_default()
                .insert(entry.clone());
        }
        // Owners in deletion may be waiting for this dependent.
        for o in old_owners.union(&new_owners) {
            if self.by_uid(o).is_some_and(|(_, _, v)| deleting(v)) {
                self.inner.dirty.insert(o.clone());
            }
        }
        match (new, old) {
            (Some(n), _) => {
                if let Some(u) = uid(n) {
                    if !new_owners.is_empty() || deleting(n) {
                        self.inner.dirty.insert(u.clone());
                    }
                    self.inner.uids.insert(u, entry);
                }
            }
            (None, Some(o)) => {
                if let Some(u) = uid(o) {
                    self.inner.uids.remove(&u);
                    // Its dependents may have lost their last owner.
                    if self.inner.dependents.contains_key(&u) {
                        self.inner.dirty.insert(u);
                    }
                }
                // A terminating namespace, or a CRD being deleted, may now be empty.
                let namespace = (!key.0.is_empty())
                    .then(|| {
                        self.get(
                            &(String::new(), "namespaces".to_owned()),
                            &(String::new(), key.0.clone()),
                        )
                    })
                    .flatten();
                let crd = (!bucket.0.is_empty())
                    .then(|| {
                        self.get(
                            &(
                                "apiextensions.k8s.io".to_owned(),
                                "customresourcedefinitions".to_owned(),
                            ),
                            &(String::new(), format!("{}.{}", bucket.1, bucket.0)),
                        )
                    })
                    .flatten();
                let containers: Vec<String> = [namespace, crd]
                    .into_iter()
                    .flatten()
                    .filter(|c| deleting(c))
                    .filter_map(uid)
                    .collect();
                self.inner.dirty.extend(containers);
            }
            (None, None) => {}
        }
        if self.inner.dirty.len() > before {
            self.gc.notify_one();
        }
    }

    fn emit(&mut self, event: Event) {
        let event = Arc::new(event);
        self.inner.history.push_back(event.clone());
        while self.inner.history.len() > self.history_limit {
            if let Some(e) = self.inner.history.pop_front() {
                self.inner.compacted = e.rv;
            }
        }
        // No receivers is fine.
        let _ = self.tx.send(event);
    }

    /// Events of a bucket after `from_rv`, and a receiver for later ones.
    pub fn watch_from(&self, bucket: &Bucket, from_rv: u64) -> Result<WatchStart, Expired> {
        if from_rv < self.inner.compacted {
            return Err(Expired {
                oldest: self.inner.compacted,
            });
        }
        let past = self
            .inner
            .history
            .iter()
            .filter(|e| e.rv > from_rv && &e.bucket == bucket)
            .cloned()
            .collect();
        Ok((past, self.tx.subscribe()))
    }

    /// A receiver of future events only.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }

    /// Mark a uid for the garbage collector (and wake it).
    pub fn mark_dirty(&mut self, uid: &str) {
        if self.inner.dirty.insert(uid.to_owned()) {
            self.gc.notify_one();
        }
    }

    /// Forget the whole history: every watch from an older version now gets 410 Gone.
    pub fn expire_history(&mut self) {
        self.inner.history.clear();
        // Advance the version so even the latest version handed out before is now too old,
        // while a list made after this call can be watched from.
        self.inner.rv += 1;
        self.inner.compacted = self.inner.rv;
        self.inner.continue_floor = self.inner.rv;
    }

    /// The oldest resourceVersion a watch can resume from.
    pub fn compacted(&self) -> u64 {
        self.inner.compacted
    }

    /// The oldest resourceVersion a `continue` token may carry.
    pub fn continue_floor(&self) -> u64 {
        self.inner.continue_floor
    }
}

fn deleting(v: &Value) -> bool {
    v["metadata"].get("deletionTimestamp").is_some()
}

fn owner_uids(v: &Value) -> BTreeSet<String> {
    v["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str().map(str::to_owned))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The history holds the stored objects themselves, not copies.
    #[test]
    fn events_share_the_stored_objects() {
        let store = Store::new(10);
        let b: Bucket = (String::new(), "configmaps".to_owned());
        let k: ObjKey = ("ns".to_owned(), "a".to_owned());
        let mut txn = store.txn();
        let first = txn.put(
            &b,
            k.clone(),
            json!({"metadata": {"name": "a", "uid": "u1"}}),
        );
        let second = txn.put(
            &b,
            k.clone(),
            json!({"metadata": {"name": "a", "uid": "u1"}}),
        );
        let (past, _rx) = txn.watch_from(&b, 0).unwrap_or_else(|_| unreachable!());
        assert_eq!(past.len(), 2);
        assert!(Arc::ptr_eq(&past[0].object, &first));
        assert!(Arc::ptr_eq(&past[1].object, &second));
        assert!(past[1].old.as_ref().is_some_and(|o| Arc::ptr_eq(o, &first)));
        assert!(txn.get_arc(&b, &k).is_some_and(|o| Arc::ptr_eq(o, &second)));
        assert_eq!(txn.by_uid("u1").map(|(_, key, _)| key.clone()), Some(k));
    }
}
