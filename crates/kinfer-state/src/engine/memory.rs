//! What the engine remembers per reconciled object, and how it is forgotten.
//!
//! Contract: one entry per object key, holding the queue-wait start, the last invalid error
//! reported, the last status written (value and the resourceVersions before and after the
//! write, so a reconcile of a stale cached copy neither re-patches nor re-emits), and per
//! child the hash of the body last applied successfully (the diff's pruning tolerance). Every
//! entry carries the time it was last touched; [`Memory::forget`] drops one entry,
//! [`Memory::sweep`] every entry older than a given age. Nothing here does I/O.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::clock::elapsed;
use crate::pipeline::ObjectKey;

/// The last status the engine wrote for an object.
#[derive(Debug, Clone)]
pub(crate) struct WrittenStatus {
    /// The object's resourceVersion the status was derived from.
    pub from_version: Option<String>,
    /// The status written.
    pub status: Value,
}

#[derive(Debug, Default)]
struct Entry {
    touched: Option<Timestamp>,
    seen: Option<Timestamp>,
    invalid: Option<String>,
    status: Option<WrittenStatus>,
    applied: HashMap<ObjectKey, u64>,
}

#[derive(Debug, Default)]
pub(crate) struct Memory {
    entries: Mutex<HashMap<ObjectKey, Entry>>,
}

impl Memory {
    fn with<R>(&self, key: &ObjectKey, now: Timestamp, f: impl FnOnce(&mut Entry) -> R) -> R {
        let mut map = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = map.entry(key.clone()).or_default();
        entry.touched = Some(now);
        f(entry)
    }

    fn read<R>(&self, key: &ObjectKey, f: impl FnOnce(&Entry) -> R) -> Option<R> {
        let map = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(key).map(f)
    }

    /// A watch event for `key` was seen at `now` (the first since the last reconcile counts).
    pub fn seen(&self, key: &ObjectKey, now: Timestamp) {
        self.with(key, now, |e| {
            e.seen.get_or_insert(now);
        });
    }

    /// A reconcile of `key` starts: clears the invalid error; returns when its event was seen.
    pub fn start(&self, key: &ObjectKey, now: Timestamp) -> Option<Timestamp> {
        self.with(key, now, |e| {
            e.invalid = None;
            e.seen.take()
        })
    }

    /// Record the deserialisation error of `key`; true when it differs from the last one.
    pub fn invalid(&self, key: &ObjectKey, error: &str, now: Timestamp) -> bool {
        self.with(key, now, |e| {
            let new = e.invalid.as_deref() != Some(error);
            e.invalid = Some(error.to_owned());
            new
        })
    }

    /// The last status written for `key`.
    pub fn status(&self, key: &ObjectKey) -> Option<WrittenStatus> {
        self.read(key, |e| e.status.clone()).flatten()
    }

    /// Remember the status written for `key`.
    pub fn wrote_status(&self, key: &ObjectKey, written: WrittenStatus, now: Timestamp) {
        self.with(key, now, |e| e.status = Some(written));
    }

    /// The hash of the body last applied to `child` of `key`.
    pub fn applied(&self, key: &ObjectKey, child: &ObjectKey) -> Option<u64> {
        self.read(key, |e| e.applied.get(child).copied()).flatten()
    }

    /// Remember the body applied to `child` of `key`.
    pub fn wrote_child(&self, key: &ObjectKey, child: &ObjectKey, hash: u64, now: Timestamp) {
        self.with(key, now, |e| {
            e.applied.insert(child.clone(), hash);
        });
    }

    /// Keep applied-body memory only for `children` (the others are no longer planned).
    pub fn retain_children(&self, key: &ObjectKey, children: &[ObjectKey]) {
        let mut map = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = map.get_mut(key) {
            e.applied.retain(|k, _| children.contains(k));
        }
    }

    /// Drop everything about `key`.
    pub fn forget(&self, key: &ObjectKey) {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }

    /// Drop entries untouched for `max_age`; returns their keys.
    pub fn sweep(&self, now: Timestamp, max_age: Duration) -> Vec<ObjectKey> {
        let mut map = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut dropped = Vec::new();
        map.retain(|k, e| {
            let keep = e.touched.is_some_and(|t| elapsed(t, now) < max_age);
            if !keep {
                dropped.push(k.clone());
            }
            keep
        });
        dropped
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            kind: "Toy".into(),
            group: "example.com".into(),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    #[test]
    fn forget_and_sweep() {
        let t0 = Timestamp::UNIX_EPOCH;
        let later = Timestamp::from_second(100).unwrap_or(t0);
        let m = Memory::default();
        m.seen(&key("a"), t0);
        assert!(m.invalid(&key("b"), "bad", t0));
        assert!(!m.invalid(&key("b"), "bad", t0), "same error: not new");
        m.wrote_child(&key("c"), &key("child"), 7, later);
        assert_eq!(m.len(), 3);
        m.forget(&key("a"));
        assert_eq!(m.len(), 2);
        let dropped = m.sweep(later, Duration::from_secs(50));
        assert_eq!(dropped, [key("b")]);
        assert_eq!(m.applied(&key("c"), &key("child")), Some(7));
    }
}
