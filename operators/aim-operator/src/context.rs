//! What the controllers share: settings, the registry inspector, the clock, the discovery
//! slot reservations and the informer caches.
//!
//! Contract: built once per process ([`Context::new`]); every pipeline holds an `Arc` of it.
//! The caches are optional: without them (tests driving one engine by hand) fetch lists from
//! the API server instead ([`crate::informers`]). Nothing here writes to the cluster.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kinfer_oci::{Inspector, InspectorConfig, OciError};
use kinfer_state::Clock;
use kinfer_state::clock::elapsed;
use kube::runtime::reflector::Store;

/// The operator namespace when neither `AIM_SYSTEM_NAMESPACE` nor the pod's own namespace is
/// known.
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "aim-system";

/// Where a pod finds its own namespace, beside its ServiceAccount token.
pub const POD_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Discovery throttling and backoff (NOTES row 7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverySettings {
    /// Discovery Jobs running at once, cluster-wide.
    pub max_active: usize,
    /// First retry delay after a failure; doubles per attempt.
    pub backoff_base: Duration,
    /// Longest retry delay.
    pub backoff_max: Duration,
    /// How soon a template waiting for a free slot checks again.
    pub throttle_recheck: Duration,
    /// How long a slot reserved for a Job that never appeared stays reserved.
    pub reservation_ttl: Duration,
    /// How often a running discovery Job's pod is checked for a start that cannot succeed
    /// (image pull, container config): pods are not watched.
    pub pod_recheck: Duration,
}

impl Default for DiscoverySettings {
    fn default() -> Self {
        Self {
            max_active: 10,
            backoff_base: Duration::from_mins(1),
            backoff_max: Duration::from_hours(1),
            throttle_recheck: Duration::from_secs(5),
            reservation_ttl: Duration::from_mins(1),
            pod_recheck: Duration::from_secs(15),
        }
    }
}

/// Process-wide settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The operator namespace: pull secrets of cluster models and model sources, discovery
    /// Jobs of cluster templates.
    pub system_namespace: String,
    /// Discovery throttling and backoff.
    pub discovery: DiscoverySettings,
    /// Registry inspection (tag TTL, insecure registries, timeouts).
    pub inspector: InspectorConfig,
    /// Reconciles running at once per controller.
    pub concurrency: u16,
    /// Quiet time after a trigger before a serving controller's reconcile (`--debounce-ms`;
    /// zero here, the binary's flag defaults to 50 ms).
    pub debounce: std::time::Duration,
    /// How often a model or model source that failed for a reason outside the cluster's
    /// watched objects (a missing or wrong pull secret, a registry) is checked again: Secrets
    /// are read by name, never listed or watched.
    pub external_recheck: std::time::Duration,
    /// CPU and memory of the discovery, check-size and download Jobs' containers (the
    /// binary's `--<job>-job-requests` and `--<job>-job-limits`).
    pub jobs: kinfer_builders::discovery_job::JobResources,
}

/// [`Settings::external_recheck`] by default.
pub const DEFAULT_EXTERNAL_RECHECK: std::time::Duration = std::time::Duration::from_mins(1);

impl Default for Settings {
    fn default() -> Self {
        Self {
            system_namespace: DEFAULT_SYSTEM_NAMESPACE.to_owned(),
            discovery: DiscoverySettings::default(),
            inspector: InspectorConfig::default(),
            concurrency: 4,
            debounce: std::time::Duration::ZERO,
            external_recheck: DEFAULT_EXTERNAL_RECHECK,
            jobs: kinfer_builders::discovery_job::JobResources::default(),
        }
    }
}

impl Settings {
    /// Defaults with the operator namespace found as [`system_namespace`] finds it.
    pub fn from_env() -> Self {
        Self {
            system_namespace: system_namespace(
                std::env::var("AIM_SYSTEM_NAMESPACE").ok().as_deref(),
                Path::new(POD_NAMESPACE_FILE),
            ),
            ..Self::default()
        }
    }
}

/// The operator namespace as AIM Engine finds it: `env` (`AIM_SYSTEM_NAMESPACE`) when set,
/// else the pod's own namespace (`namespace_file`, [`POD_NAMESPACE_FILE`] in a pod), else
/// [`DEFAULT_SYSTEM_NAMESPACE`]. Blank values count as unset; the file is read up to 256
/// bytes (a namespace name is at most 63).
pub fn system_namespace(env: Option<&str>, namespace_file: &Path) -> String {
    if let Some(ns) = env.map(str::trim).filter(|n| !n.is_empty()) {
        return ns.to_owned();
    }
    let mut text = String::new();
    let read =
        std::fs::File::open(namespace_file).and_then(|f| f.take(256).read_to_string(&mut text));
    match read.map(|_| text.trim()) {
        Ok(ns) if !ns.is_empty() => ns.to_owned(),
        _ => DEFAULT_SYSTEM_NAMESPACE.to_owned(),
    }
}

/// Slots reserved for discovery Jobs being created, so concurrent reconciles in this process
/// cannot overshoot the cap while the informer cache has not seen their Jobs yet. Not a lock:
/// each check-and-reserve is one short critical section, and a reservation ends when its Job
/// shows up in the cache, when its template sees the Job finished or no longer wanted
/// ([`DiscoverySlots::release`]: a Job created and removed between two cache reads is never
/// seen), or after [`DiscoverySettings::reservation_ttl`].
#[derive(Debug, Default)]
pub struct DiscoverySlots {
    reserved: Mutex<BTreeMap<String, Timestamp>>,
}

impl DiscoverySlots {
    /// Reserve a slot for Job `key` (`namespace/name`) when fewer than `max` are in use;
    /// `active` are the keys of the running discovery Jobs the cache knows, `known` every
    /// discovery Job it knows (a reservation ends once its Job is known). True when the Job
    /// may be created.
    pub fn try_reserve(
        &self,
        key: &str,
        active: &[String],
        known: &[String],
        max: usize,
        now: Timestamp,
        ttl: Duration,
    ) -> bool {
        let mut reserved = self
            .reserved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        reserved.retain(|k, at| !known.contains(k) && elapsed(*at, now) < ttl);
        if active.iter().any(|k| k == key) || reserved.contains_key(key) {
            return true;
        }
        if active.len() + reserved.len() >= max {
            return false;
        }
        reserved.insert(key.to_owned(), now);
        true
    }

    /// End the reservation of Job `key`, if any.
    pub fn release(&self, key: &str) {
        self.reserved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }
}

/// Everything the pipelines share.
pub struct Context {
    /// Settings.
    pub settings: Settings,
    /// The registry inspector (digest cache, tag TTL).
    pub inspector: Inspector,
    /// "Now", for backoff and sync intervals.
    pub clock: Arc<dyn Clock>,
    /// Discovery slot reservations.
    pub slots: DiscoverySlots,
    /// Node informer cache, when running under the controllers.
    pub nodes: Option<Store<Node>>,
    /// Discovery Job informer cache, when running under the controllers.
    pub jobs: Option<Store<Job>>,
    /// The AIM kinds' informer caches, filled by the controllers ([`crate::informers`]).
    pub informers: crate::informers::Informers,
    /// Which optional serving CRDs (KServe, Gateway API) the cluster serves: no watch of a
    /// missing kind is started ([`crate::startup`]).
    pub serving_crds: crate::startup::ServingCrds,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context on the system clock without informer caches.
    pub fn new(settings: Settings) -> Result<Self, OciError> {
        Ok(Self {
            inspector: Inspector::new(settings.inspector.clone())?,
            settings,
            clock: Arc::new(kinfer_state::SystemClock),
            slots: DiscoverySlots::default(),
            nodes: None,
            jobs: None,
            informers: crate::informers::Informers::default(),
            serving_crds: crate::startup::ServingCrds::ALL,
        })
    }

    /// The optional serving CRDs the cluster serves.
    #[must_use]
    pub fn with_serving_crds(mut self, crds: crate::startup::ServingCrds) -> Self {
        self.serving_crds = crds;
        self
    }

    /// Use another clock.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Use informer caches for Nodes and discovery Jobs.
    #[must_use]
    pub fn with_caches(mut self, nodes: Store<Node>, jobs: Store<Job>) -> Self {
        self.nodes = Some(nodes);
        self.jobs = Some(jobs);
        self
    }

    /// Now.
    pub fn now(&self) -> Timestamp {
        kinfer_state::clock::now_seconds(self.clock.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_namespace_is_the_variable_then_the_pods_own_then_aim_system() {
        let dir = std::env::temp_dir().join(format!("aim-ns-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("namespace");
        std::fs::write(&file, "team-ops\n").unwrap();
        let missing = dir.join("missing");
        assert_eq!(system_namespace(Some("aim-ops"), &file), "aim-ops");
        assert_eq!(system_namespace(Some("  "), &file), "team-ops");
        assert_eq!(system_namespace(None, &file), "team-ops");
        assert_eq!(system_namespace(None, &missing), DEFAULT_SYSTEM_NAMESPACE);
        std::fs::write(&file, "").unwrap();
        assert_eq!(system_namespace(None, &file), DEFAULT_SYSTEM_NAMESPACE);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn slots_cap_and_release() {
        let slots = DiscoverySlots::default();
        let now = Timestamp::UNIX_EPOCH;
        let ttl = Duration::from_mins(1);
        assert!(slots.try_reserve("a", &[], &[], 2, now, ttl));
        assert!(slots.try_reserve("a", &[], &[], 2, now, ttl), "idempotent");
        assert!(slots.try_reserve("b", &[], &[], 2, now, ttl));
        assert!(!slots.try_reserve("c", &[], &[], 2, now, ttl));
        // "a" is running and "b" already finished: both are known, only "a" counts.
        let a = ["a".to_owned()];
        let ab = ["a".to_owned(), "b".to_owned()];
        assert!(slots.try_reserve("c", &a, &ab, 2, now, ttl));
        assert!(!slots.try_reserve("d", &a, &ab, 2, now, ttl));
        let later = now + Duration::from_mins(2);
        assert!(
            slots.try_reserve("d", &[], &[], 1, later, ttl),
            "expired reservations free slots"
        );
        assert!(!slots.try_reserve("e", &[], &[], 1, later, ttl));
        slots.release("d");
        assert!(
            slots.try_reserve("e", &[], &[], 1, later, ttl),
            "a released reservation frees its slot"
        );
    }
}
