//! The inspection cache and the injectable clock.
//!
//! Contract:
//! - Two maps, both scoped by registry host, repository and credential fingerprint (a caller
//!   never sees what someone else's credentials fetched):
//!   - tag → digest, trusted for `tag_ttl` after it was resolved, then re-resolved so a re-pushed
//!     tag is noticed (upstream inspects once and never again);
//!   - digest → inspection result, immutable because digests are content addresses.
//! - Both maps are bounded by `capacity`; the least recently used entry goes first. The
//!   inspector caps each value's labels (`MAX_LABEL_BYTES`), so the cache is bounded in bytes.
//! - Time comes from a [`Clock`], so tests move time explicitly instead of sleeping.
//! - No locking here: the owner wraps the cache in a mutex and never holds it across `.await`.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::auth::Fingerprint;

/// Locks `mutex`, recovering from poisoning: every value guarded in this crate (caches, the
/// client pool, a clock offset) is valid after any panic, so a panic elsewhere must not turn
/// into a panic in every later call.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A source of monotonic time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that only moves when told to, for tests and simulations.
#[derive(Debug)]
pub struct ManualClock {
    start: Instant,
    offset: Mutex<Duration>,
}

impl ManualClock {
    /// A clock standing at the current instant.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            offset: Mutex::new(Duration::ZERO),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        *lock(&self.offset) += by;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + *lock(&self.offset)
    }
}

/// Where a cached item lives: registry API host, repository, credential fingerprint (whose
/// `Debug` is redacted).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Scope {
    pub host: String,
    pub repository: String,
    pub credentials: Fingerprint,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    stored_at: Instant,
    last_used: u64,
}

/// A small LRU map (eviction scans for the oldest entry: capacities here are small).
#[derive(Debug)]
pub(crate) struct Lru<K, V> {
    map: HashMap<K, Entry<V>>,
    capacity: usize,
    tick: u64,
}

impl<K: Eq + Hash + Clone, V> Lru<K, V> {
    pub fn new(capacity: usize) -> Self {
        Self {
            map: HashMap::new(),
            capacity: capacity.max(1),
            tick: 0,
        }
    }

    fn get(&mut self, key: &K) -> Option<&Entry<V>> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self.map.get_mut(key)?;
        entry.last_used = tick;
        Some(entry)
    }

    /// The value under `key`, marked as most recently used.
    pub fn get_value(&mut self, key: &K) -> Option<&V> {
        self.get(key).map(|e| &e.value)
    }

    /// Inserts `value`, evicting the least recently used entry when full.
    pub fn insert(&mut self, key: K, value: V, now: Instant) {
        self.tick += 1;
        if !self.map.contains_key(&key) && self.map.len() >= self.capacity {
            let oldest = self
                .map
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.map.remove(&oldest);
            }
        }
        self.map.insert(
            key,
            Entry {
                value,
                stored_at: now,
                last_used: self.tick,
            },
        );
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }
}

/// What the cache knows about a tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TagLookup {
    /// The digest the tag last resolved to.
    pub digest: String,
    /// Resolved less than the TTL ago.
    pub fresh: bool,
}

/// Tag → digest and digest → value, as described in the module contract.
#[derive(Debug)]
pub(crate) struct InspectionCache<V> {
    tags: Lru<(Scope, String), String>,
    digests: Lru<(Scope, String), V>,
    tag_ttl: Duration,
}

impl<V: Clone> InspectionCache<V> {
    pub fn new(capacity: usize, tag_ttl: Duration) -> Self {
        Self {
            tags: Lru::new(capacity),
            digests: Lru::new(capacity),
            tag_ttl,
        }
    }

    /// The digest `tag` last resolved to, and whether that was less than `tag_ttl` ago.
    pub fn lookup_tag(&mut self, scope: &Scope, tag: &str, now: Instant) -> Option<TagLookup> {
        let ttl = self.tag_ttl;
        let entry = self.tags.get(&(scope.clone(), tag.to_owned()))?;
        Some(TagLookup {
            digest: entry.value.clone(),
            fresh: now.saturating_duration_since(entry.stored_at) < ttl,
        })
    }

    pub fn store_tag(&mut self, scope: &Scope, tag: &str, digest: &str, now: Instant) {
        self.tags
            .insert((scope.clone(), tag.to_owned()), digest.to_owned(), now);
    }

    pub fn by_digest(&mut self, scope: &Scope, digest: &str) -> Option<V> {
        self.digests
            .get(&(scope.clone(), digest.to_owned()))
            .map(|e| e.value.clone())
    }

    pub fn store_digest(&mut self, scope: &Scope, digest: &str, value: V, now: Instant) {
        self.digests
            .insert((scope.clone(), digest.to_owned()), value, now);
    }

    /// (tag entries, digest entries)
    pub fn sizes(&self) -> (usize, usize) {
        (self.tags.len(), self.digests.len())
    }
}

#[cfg(test)]
#[path = "unit_tests/cache.rs"]
mod tests;
