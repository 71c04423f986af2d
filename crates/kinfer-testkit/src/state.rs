//! Shared server state: the store, the resource registry, faults, counters, the garbage
//! collector's wake-up and the options the cluster was started with.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use crate::faults::{Counters, Faults};
use crate::resources::{Registry, ResourceDef};
use crate::simulator::Simulator;
use crate::store::{Bucket, Store};

/// Options for a test cluster.
#[derive(Debug, Clone)]
pub struct Options {
    /// Number of events kept for watches to resume from (older versions answer 410 Gone).
    pub history_limit: usize,
    /// Interval between watch bookmarks for watches that allow them (at least one millisecond:
    /// shorter values, zero included, are taken as one millisecond).
    pub bookmark_interval: Duration,
    /// Run the workload simulator.
    pub simulate: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            history_limit: 10_000,
            bookmark_interval: Duration::from_secs(5),
            simulate: false,
        }
    }
}

/// Everything a request handler needs.
#[derive(Debug)]
pub struct State {
    /// Objects.
    pub store: Store,
    /// Served resources.
    pub registry: RwLock<Registry>,
    /// Injected faults.
    pub faults: Faults,
    /// Request counters.
    pub counters: Counters,
    /// Bumped to cut every open watch.
    pub watch_cut: watch::Sender<u64>,
    /// Start options.
    pub options: Options,
    /// The workload simulator's settings (also used when it is off, for pod logs).
    pub simulator: Simulator,
    uid_counter: AtomicU64,
    /// How many objects were created so far under each identity (uids, see [`State::new_uid`]).
    births: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    seed: u64,
}

impl State {
    /// New state with the default namespaces.
    pub fn new(options: Options) -> Arc<Self> {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::from(d.subsec_nanos()) ^ d.as_secs());
        Arc::new(Self {
            store: Store::new(options.history_limit),
            registry: RwLock::new(Registry::default()),
            faults: Faults::default(),
            counters: Counters::default(),
            watch_cut: watch::channel(0).0,
            options,
            simulator: Simulator::default(),
            uid_counter: AtomicU64::new(1),
            births: std::sync::Mutex::default(),
            seed,
        })
    }

    /// A read-only view of the registry.
    pub fn registry(&self) -> std::sync::RwLockReadGuard<'_, Registry> {
        self.registry
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A writable view of the registry.
    pub fn registry_mut(&self) -> std::sync::RwLockWriteGuard<'_, Registry> {
        self.registry
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Any served version of the resource stored in `bucket`.
    pub fn def_for_bucket(&self, bucket: &Bucket) -> Option<ResourceDef> {
        self.registry()
            .all()
            .find(|d| d.group == bucket.0 && d.plural == bucket.1)
            .cloned()
    }

    /// A fresh UUID-shaped uid for the `nth` creation of the object `identity`
    /// (group/resource/namespace/name).
    ///
    /// Derived from the identity, not from a global counter or the clock, so the uids of a
    /// run do not depend on the order in which concurrent controllers create objects: names
    /// that hash a uid (upstream AIM's artifact PVCs, for one) are the same run to run, which
    /// `kinfer render` relies on for stable output. A recreated object gets a new uid.
    pub fn new_uid(&self, identity: &str) -> String {
        let n = {
            let mut births = self
                .births
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let n = births.entry(identity.to_owned()).or_insert(0);
            *n += 1;
            *n
        };
        // FNV-1a over the identity, then SplitMix64 to spread it.
        let h = identity.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let a = splitmix(h ^ n);
        let b = splitmix(a ^ n.rotate_left(17));
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }

    /// Five lowercase alphanumerics for generateName.
    pub fn random_suffix(&self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut x = splitmix(
            self.seed
                ^ self
                    .uid_counter
                    .fetch_add(1, Ordering::Relaxed)
                    .wrapping_mul(31),
        );
        let mut s = String::new();
        for _ in 0..5 {
            let i = usize::try_from(x % ALPHABET.len() as u64).unwrap_or(0);
            s.push(char::from(ALPHABET[i]));
            x /= ALPHABET.len() as u64;
        }
        s
    }
}

/// The SplitMix64 output function (uids, name suffixes, fault decisions).
pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Now, formatted like `metav1.Time` (RFC 3339, seconds).
pub fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// `metadata.name`.
pub fn name_of(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap_or_default()
}

/// `metadata.namespace` (empty for cluster scope).
pub fn namespace_of(v: &Value) -> &str {
    v["metadata"]["namespace"].as_str().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{Options, State};

    #[test]
    fn uids_follow_the_identity_not_the_creation_order() {
        let one = State::new(Options::default());
        let two = State::new(Options::default());
        let a1 = one.new_uid("g/r/ns/a");
        let b1 = one.new_uid("g/r/ns/b");
        // The other cluster creates them the other way round.
        let b2 = two.new_uid("g/r/ns/b");
        let a2 = two.new_uid("g/r/ns/a");
        assert_eq!(a1, a2);
        assert_eq!(b1, b2);
        assert_ne!(a1, b1);
        // A recreated object gets a new uid.
        assert_ne!(one.new_uid("g/r/ns/a"), a1);
    }
}
