//! Object storage with a single global resourceVersion counter and a bounded event history.
//!
//! Contract: every successful write gets the next resourceVersion, is stored, appended to the
//! history and broadcast to live watches while the store lock is held, so a watch that reads the
//! history and subscribes under the same lock never misses or duplicates an event. Watches that
//! start from a version older than the oldest kept event get [`Expired`].

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::broadcast;

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
    pub object: Value,
    /// The object before the change, for modifications.
    pub old: Option<Value>,
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
    objects: BTreeMap<Bucket, BTreeMap<ObjKey, Value>>,
    history: VecDeque<Arc<Event>>,
    /// Watches from a version below this are expired.
    compacted: u64,
}

/// The object store.
#[derive(Debug)]
pub struct Store {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Event>>,
    history_limit: usize,
}

/// A locked view of the store for read-modify-write sequences.
#[derive(Debug)]
pub struct Txn<'a> {
    inner: MutexGuard<'a, Inner>,
    tx: &'a broadcast::Sender<Arc<Event>>,
    history_limit: usize,
}

impl Store {
    /// A new empty store keeping `history_limit` events for watches.
    pub fn new(history_limit: usize) -> Self {
        let (tx, _) = broadcast::channel(16_384);
        Self {
            inner: Mutex::new(Inner {
                rv: 1,
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                compacted: 0,
            }),
            tx,
            history_limit,
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
        }
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
        self.inner.objects.get(bucket).and_then(|m| m.get(key))
    }

    /// Objects of a bucket, optionally in one namespace, in (namespace, name) order.
    pub fn list(&self, bucket: &Bucket, namespace: Option<&str>) -> Vec<&Value> {
        self.inner
            .objects
            .get(bucket)
            .map(|m| {
                m.iter()
                    .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
                    .map(|(_, v)| v)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every bucket with its objects.
    pub fn buckets(&self) -> impl Iterator<Item = (&Bucket, &BTreeMap<ObjKey, Value>)> {
        self.inner.objects.iter()
    }

    /// Store an object (create or replace), assigning the next resourceVersion; returns it.
    pub fn put(&mut self, bucket: &Bucket, key: ObjKey, mut object: Value) -> Value {
        self.inner.rv += 1;
        let rv = self.inner.rv;
        object["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let old = self
            .inner
            .objects
            .entry(bucket.clone())
            .or_default()
            .insert(key, object.clone());
        let kind = if old.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.emit(Event {
            rv,
            bucket: bucket.clone(),
            kind,
            object: object.clone(),
            old,
        });
        object
    }

    /// Remove an object; the DELETED event carries a fresh resourceVersion.
    pub fn remove(&mut self, bucket: &Bucket, key: &ObjKey) -> Option<Value> {
        let mut object = self.inner.objects.get_mut(bucket)?.remove(key)?;
        self.inner.rv += 1;
        let rv = self.inner.rv;
        object["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        self.emit(Event {
            rv,
            bucket: bucket.clone(),
            kind: EventType::Deleted,
            object: object.clone(),
            old: None,
        });
        Some(object)
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

    /// Forget the whole history: every watch from an older version now gets 410 Gone.
    pub fn expire_history(&mut self) {
        self.inner.history.clear();
        // Advance the version so even the latest version handed out before is now too old,
        // while a list made after this call can be watched from.
        self.inner.rv += 1;
        self.inner.compacted = self.inner.rv;
    }

    /// The oldest resourceVersion a watch can resume from.
    pub fn compacted(&self) -> u64 {
        self.inner.compacted
    }
}
