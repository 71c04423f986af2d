//! What the engine remembers per reconciled object, and how it is forgotten.
//!
//! Contract: one entry per object key, holding the queue-wait start (the first trigger seen
//! since the last reconcile started; cleared by a reconcile that skips a paused or malformed
//! object, so the wait never spans a pause), the hold deadline (a server's `Retry-After`: no
//! reconcile may send a request before it), the last invalid error reported, the last status
//! written (its value and the resourceVersion it was derived from, so a reconcile of the stale
//! cached copy that write replaced neither re-patches nor re-emits), the outdated copy (the
//! resourceVersion a finalizer patch was sent from, once that patch succeeded or was refused
//! with 409, and the version it produced: a reconcile of that copy is the cache lagging behind
//! our own write, see [`super::finalize`]), and per child the hash of the body last applied
//! successfully (the diff's pruning tolerance) and the UID of a cached copy the server refused
//! an apply pinned to (the object was replaced: that copy is read past, by name, until the
//! child is applied again or no longer planned). Every entry carries the
//! time it was last touched; [`Memory::forget`] drops one entry, [`Memory::retain`] every
//! entry a predicate refuses (the objects a re-list no longer has), [`Memory::sweep`] every
//! entry older than a given age. Nothing here does I/O.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use crate::clock::elapsed;
use crate::packed::Packed;
use crate::pipeline::ObjectKey;

/// The last status the engine wrote for an object, kept as deflated JSON ([`Packed`]): it is
/// read back only for a stale cached copy, and a `serde_json` tree of it costs several times
/// its text for every object an operator has reconciled.
#[derive(Debug, Clone)]
pub(crate) struct WrittenStatus {
    /// The object's resourceVersion the status was derived from.
    from_version: Option<String>,
    /// The status written (`None`: it did not serialise, so it is never served back).
    json: Option<Packed>,
}

impl WrittenStatus {
    /// `status`, written to the object at `from_version`.
    pub fn new(from_version: Option<String>, status: &Value) -> Self {
        Self {
            from_version,
            json: Packed::of(status),
        }
    }
}

/// A copy of the object known to be outdated: a finalizer patch sent from it succeeded (the
/// server moved on to `produced`) or was refused with 409 (the server holds another version).
/// Equality with the version seen is enough to recognise it: a controller's cache only moves
/// forward, so once it has served this copy it serves this one or a newer one.
#[derive(Debug, Clone)]
struct Outdated {
    /// The resourceVersion of the outdated copy.
    version: String,
    /// The resourceVersion our patch produced (`None` after a 409).
    produced: Option<String>,
    /// When it was first known outdated (the wait for the watch is bounded from here).
    since: Timestamp,
}

#[derive(Debug, Default)]
struct Entry {
    touched: Option<Timestamp>,
    seen: Option<Timestamp>,
    hold: Option<Timestamp>,
    invalid: Option<String>,
    status: Option<WrittenStatus>,
    outdated: Option<Outdated>,
    /// Per child, under the [`fingerprint`] of its key (16 bytes per child with the map's
    /// overhead, against about 250 for the key's four strings: a ModelService has 15
    /// children): the [`fingerprint`] of the body last applied successfully. Two children of
    /// one parent whose keys collide (odds about 2^-64 per pair) share one slot, so each finds
    /// the other's body hash there and gets the strict [`crate::diff::needs_apply`]: possible
    /// re-applies, never a skipped apply.
    applied: HashMap<u64, u64>,
    replaced: HashMap<ObjectKey, String>,
}

/// A 64-bit fingerprint of `value`, for what the engine remembers by hash (a child's key, the
/// body applied to it): `DefaultHasher` (SipHash with fixed keys), so equal values give equal
/// fingerprints within one process, which is all the memory needs: it is never persisted.
pub(super) fn fingerprint<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
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

    /// Like [`Self::seen`], but only for a `key` already remembered: an owned object's event
    /// must not bring back an object that was forgotten (its children's delete events follow
    /// the owner's).
    pub fn seen_if_known(&self, key: &ObjectKey, now: Timestamp) {
        let mut map = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = map.get_mut(key) {
            e.touched = Some(now);
            e.seen.get_or_insert(now);
        }
    }

    /// A reconcile of `key` starts: clears the invalid error and a passed hold; returns when
    /// its first pending trigger was seen.
    pub fn start(&self, key: &ObjectKey, now: Timestamp) -> Option<Timestamp> {
        self.with(key, now, |e| {
            e.invalid = None;
            e.hold = None;
            e.seen.take()
        })
    }

    /// Hold `key` until `until`: reconciles starting before then must not send a request.
    pub fn hold(&self, key: &ObjectKey, until: Timestamp, now: Timestamp) {
        self.with(key, now, |e| e.hold = Some(until));
    }

    /// How much longer `key` is held at `now` (`None`: not held, or the hold has passed).
    pub fn held(&self, key: &ObjectKey, now: Timestamp) -> Option<Duration> {
        self.read(key, |e| e.hold)
            .flatten()
            .filter(|until| *until > now)
            .map(|until| elapsed(now, until))
    }

    /// A reconcile of `key` was skipped (paused): its pending trigger is consumed without a
    /// queue wait. Creates no entry.
    pub fn skipped(&self, key: &ObjectKey) {
        let mut map = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = map.get_mut(key) {
            e.seen = None;
        }
    }

    /// Record the deserialisation error of `key` (its reconcile is skipped: the pending
    /// trigger is consumed, [`Self::skipped`]); true when it differs from the last one.
    pub fn invalid(&self, key: &ObjectKey, error: &str, now: Timestamp) -> bool {
        self.with(key, now, |e| {
            e.seen = None;
            let new = e.invalid.as_deref() != Some(error);
            e.invalid = Some(error.to_owned());
            new
        })
    }

    /// The last status written for `key`, when it was derived from the object at `version`
    /// (so the object seen now is the stale copy that write replaced), or from the copy our
    /// finalizer patch turned into `version` (the status write followed that patch).
    pub fn status_from(&self, key: &ObjectKey, version: Option<&str>) -> Option<Value> {
        let version = version?;
        self.read(key, |e| {
            e.status
                .as_ref()
                .filter(|w| {
                    let from = w.from_version.as_deref();
                    from == Some(version)
                        || e.outdated.as_ref().is_some_and(|o| {
                            from == Some(o.version.as_str())
                                && o.produced.as_deref() == Some(version)
                        })
                })
                .and_then(|w| w.json.as_ref()?.value())
        })
        .flatten()
    }

    /// The copy of `key` at `version` is outdated since `now` (a finalizer patch sent from it
    /// succeeded and produced `produced`, or was refused with 409: `None`). Recording the same
    /// version again keeps the first `since`, so repeated reconciles of the copy cannot extend
    /// the wait for the watch.
    pub fn outdated(
        &self,
        key: &ObjectKey,
        version: String,
        produced: Option<String>,
        now: Timestamp,
    ) {
        self.with(key, now, |e| {
            let since = e
                .outdated
                .as_ref()
                .filter(|o| o.version == version)
                .map_or(now, |o| o.since);
            e.outdated = Some(Outdated {
                version,
                produced,
                since,
            });
        });
    }

    /// For a reconcile of `key` seeing the copy at `version`: how long that copy has been known
    /// outdated ([`Self::outdated`]), or `None` when it is not the outdated one. Creates no
    /// entry. The record stays until [`Self::fresh`] (the status memory still needs the
    /// produced version).
    pub fn outdated_for(
        &self,
        key: &ObjectKey,
        version: Option<&str>,
        now: Timestamp,
    ) -> Option<Duration> {
        let version = version?;
        self.read(key, |e| {
            e.outdated
                .as_ref()
                .filter(|o| o.version == version)
                // A wall clock stepped back before `since` must not prolong the wait: the
                // copy counts as long outdated (the engine then reads the object once).
                .map(|o| {
                    if o.since > now {
                        Duration::MAX
                    } else {
                        elapsed(o.since, now)
                    }
                })
        })
        .flatten()
    }

    /// The copy at `version` was read from the server: whatever it was known as, it is the
    /// server's current copy now. Creates no entry.
    pub fn fresh(&self, key: &ObjectKey, version: Option<&str>) {
        let mut map = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = map.get_mut(key)
            && e.outdated.as_ref().map(|o| o.version.as_str()) == version
        {
            e.outdated = None;
        }
    }

    /// Remember the status written for `key`.
    pub fn wrote_status(&self, key: &ObjectKey, written: WrittenStatus, now: Timestamp) {
        self.with(key, now, |e| e.status = Some(written));
    }

    /// The hash of the body last applied to `child` of `key`.
    pub fn applied(&self, key: &ObjectKey, child: &ObjectKey) -> Option<u64> {
        self.read(key, |e| e.applied.get(&fingerprint(child)).copied())
            .flatten()
    }

    /// Remember the body applied to `child` of `key`.
    pub fn wrote_child(&self, key: &ObjectKey, child: &ObjectKey, hash: u64, now: Timestamp) {
        self.with(key, now, |e| {
            e.applied.insert(fingerprint(child), hash);
            e.replaced.remove(child);
        });
    }

    /// The server refused an apply of `child` of `key` pinned to `uid`: the cached copy of
    /// that UID is stale.
    pub fn replaced_child(&self, key: &ObjectKey, child: &ObjectKey, uid: &str, now: Timestamp) {
        self.with(key, now, |e| {
            e.replaced.insert(child.clone(), uid.to_owned());
        });
    }

    /// True when the cached copy `uid` of `child` of `key` is known stale
    /// ([`Self::replaced_child`]).
    pub fn is_replaced(&self, key: &ObjectKey, child: &ObjectKey, uid: Option<&str>) -> bool {
        uid.is_some_and(|uid| {
            self.read(key, |e| e.replaced.get(child).is_some_and(|r| r == uid))
                .unwrap_or(false)
        })
    }

    /// Keep applied-body memory only for `children` (the others are no longer planned).
    pub fn retain_children(&self, key: &ObjectKey, children: &[ObjectKey]) {
        let mut map = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(e) = map.get_mut(key) {
            let ids: std::collections::HashSet<u64> = children.iter().map(fingerprint).collect();
            e.applied.retain(|k, _| ids.contains(k));
            e.replaced.retain(|k, _| children.contains(k));
        }
    }

    /// Drop everything about `key`.
    pub fn forget(&self, key: &ObjectKey) {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }

    /// Drop the entries `keep` refuses; returns their keys.
    fn keep_entries(&self, mut keep: impl FnMut(&ObjectKey, &Entry) -> bool) -> Vec<ObjectKey> {
        let mut map = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut dropped = Vec::new();
        map.retain(|k, e| {
            let kept = keep(k, e);
            if !kept {
                dropped.push(k.clone());
            }
            kept
        });
        dropped
    }

    /// Drop the entries whose key `keep` refuses; returns their keys.
    pub fn retain(&self, mut keep: impl FnMut(&ObjectKey) -> bool) -> Vec<ObjectKey> {
        self.keep_entries(|k, _| keep(k))
    }

    /// Drop entries untouched for `max_age`; returns their keys.
    pub fn sweep(&self, now: Timestamp, max_age: Duration) -> Vec<ObjectKey> {
        self.keep_entries(|_, e| e.touched.is_some_and(|t| elapsed(t, now) < max_age))
    }

    /// Number of objects with a trigger seen since their last reconcile start (the queue
    /// depth).
    pub fn pending(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .filter(|e| e.seen.is_some())
            .count()
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

    /// `s` seconds after the epoch.
    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn a_replaced_copy_is_known_by_its_uid_until_the_child_is_applied_or_unplanned() {
        let (parent, child) = (key("p"), key("c"));
        let memory = Memory::default();
        memory.replaced_child(&parent, &child, "u1", at(1));
        assert!(memory.is_replaced(&parent, &child, Some("u1")));
        assert!(
            !memory.is_replaced(&parent, &child, Some("u2")),
            "another copy"
        );
        assert!(!memory.is_replaced(&parent, &child, None));
        memory.wrote_child(&parent, &child, 7, at(2));
        assert!(
            !memory.is_replaced(&parent, &child, Some("u1")),
            "applied since"
        );
        memory.replaced_child(&parent, &child, "u1", at(3));
        memory.retain_children(&parent, &[]);
        assert!(
            !memory.is_replaced(&parent, &child, Some("u1")),
            "no longer planned"
        );
    }

    #[test]
    fn applied_hashes_are_per_child_and_dropped_when_unplanned() {
        let parent = key("p");
        let m = Memory::default();
        let children: Vec<ObjectKey> = (0..50).map(|i| key(&format!("c{i}"))).collect();
        for (i, c) in (0u64..).zip(&children) {
            m.wrote_child(&parent, c, i, at(1));
        }
        for (i, c) in (0u64..).zip(&children) {
            assert_eq!(m.applied(&parent, c), Some(i), "{c}");
        }
        let mut other_kind = key("c0");
        other_kind.kind = "Other".into();
        assert_eq!(
            m.applied(&parent, &other_kind),
            None,
            "kind is part of the key"
        );
        m.retain_children(&parent, &children[..2]);
        assert_eq!(m.applied(&parent, &children[1]), Some(1));
        assert_eq!(m.applied(&parent, &children[2]), None, "no longer planned");
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

    #[test]
    fn retain_drops_what_the_predicate_refuses_and_skips_consume_the_trigger() {
        let t0 = Timestamp::UNIX_EPOCH;
        let m = Memory::default();
        m.seen(&key("a"), t0);
        m.seen(&key("b"), t0);
        assert_eq!(m.retain(|k| k.name == "a"), [key("b")]);
        assert_eq!(m.len(), 1);

        m.skipped(&key("a"));
        assert_eq!(
            m.start(&key("a"), t0),
            None,
            "the skip consumed the trigger"
        );
        m.skipped(&key("new"));
        assert_eq!(m.len(), 1, "a skip creates no entry");
        m.seen(&key("a"), t0);
        m.invalid(&key("a"), "bad", t0);
        assert_eq!(
            m.start(&key("a"), t0),
            None,
            "an invalid object has no queue wait"
        );
    }

    #[test]
    fn an_outdated_copy_is_known_by_its_version_until_read_fresh() {
        let m = Memory::default();
        assert_eq!(m.outdated_for(&key("a"), Some("1"), at(0)), None);
        m.fresh(&key("a"), Some("1"));
        assert_eq!(m.len(), 0, "asking and clearing create no entry");

        m.outdated(&key("a"), "1".into(), Some("2".into()), at(0));
        m.outdated(&key("a"), "1".into(), Some("2".into()), at(3));
        assert_eq!(
            m.outdated_for(&key("a"), Some("1"), at(4)),
            Some(Duration::from_secs(4)),
            "recording the same copy again keeps the first time"
        );
        assert_eq!(
            m.outdated_for(&key("a"), Some("2"), at(4)),
            None,
            "the new copy"
        );
        assert_eq!(m.outdated_for(&key("a"), None, at(4)), None);

        // A status written from the outdated copy also covers the copy the patch produced.
        m.wrote_status(
            &key("a"),
            WrittenStatus::new(Some("1".into()), &serde_json::json!({"ok": true})),
            at(4),
        );
        assert!(m.status_from(&key("a"), Some("2")).is_some());
        assert!(m.status_from(&key("a"), Some("3")).is_none());

        assert_eq!(
            m.outdated_for(&key("a"), Some("1"), at(-10)),
            Some(Duration::MAX),
            "a clock stepped back ends the wait"
        );
        m.fresh(&key("a"), Some("2"));
        assert!(
            m.outdated_for(&key("a"), Some("1"), at(5)).is_some(),
            "another version"
        );
        m.fresh(&key("a"), Some("1"));
        assert_eq!(
            m.outdated_for(&key("a"), Some("1"), at(5)),
            None,
            "read fresh"
        );
        m.outdated(&key("a"), "1".into(), None, at(6));
        m.forget(&key("a"));
        assert_eq!(
            m.outdated_for(&key("a"), Some("1"), at(6)),
            None,
            "forgotten"
        );
    }

    #[test]
    fn a_hold_lasts_until_its_deadline_and_a_start_clears_it() {
        let m = Memory::default();
        assert_eq!(m.held(&key("a"), at(0)), None, "never held");
        assert_eq!(m.len(), 0, "asking does not create an entry");
        m.hold(&key("a"), at(10), at(0));
        assert_eq!(m.held(&key("a"), at(4)), Some(Duration::from_secs(6)));
        assert_eq!(
            m.held(&key("a"), at(10)),
            None,
            "the deadline itself is free"
        );
        m.hold(&key("a"), at(20), at(10));
        m.start(&key("a"), at(21));
        assert_eq!(m.held(&key("a"), at(15)), None, "cleared by the start");
    }
}
