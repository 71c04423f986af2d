//! Prometheus metrics shared by every controller of a process.
//!
//! Contract: one [`Metrics`] per process, cloned (cheaply, `Arc` inside) into every engine.
//! Label values are bounded: the controller name and the error category or write verb, never
//! an object name or error text. Metrics:
//! - `kinfer_reconciles_total{controller}`: reconciles run (paused skips excluded).
//! - `kinfer_reconcile_errors_total{controller,category}`: errors seen, by category.
//! - `kinfer_reconcile_duration_seconds{controller}`: reconcile wall time.
//! - `kinfer_reconcile_queue_wait_seconds{controller}`: from the watch event to reconcile start.
//! - `kinfer_writes_total{controller,verb}`: API writes (`apply`, `delete`, `status`, `event`,
//!   `finalizer`),
//!   so a steady-state resync can be checked to write nothing.
//! - `kinfer_paused_total{controller}`: reconciles skipped for the paused annotation.
//! - `kinfer_invalid_objects_total{controller}`: objects that did not deserialise.
//!
//! And, under controller-runtime's names (so dashboards and alerts written for Go operators
//! work unchanged; `controller` and `name` are the same controller name):
//! - `controller_runtime_reconcile_total{controller,result}` (`success`, `error`,
//!   `requeue_after`), `controller_runtime_reconcile_errors_total{controller}`,
//!   `controller_runtime_reconcile_time_seconds{controller}` (the same histogram as
//!   `kinfer_reconcile_duration_seconds`),
//!   `controller_runtime_active_workers{controller}`;
//! - `workqueue_adds_total{name}` (triggers recorded), `workqueue_depth{name}` (objects with a
//!   trigger not reconciled yet, read from each engine at scrape time),
//!   `workqueue_queue_duration_seconds{name}` (from the first pending trigger to the reconcile
//!   start);
//! - `leader_election_master_status{name}` (1 while this replica holds the Lease `name`);
//! - the process: `process_resident_memory_bytes`, `process_cpu_seconds_total`,
//!   `process_open_fds`, `process_start_time_seconds` (read from `/proc` at scrape time;
//!   absent where there is no `/proc`).

use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::category::ErrorCategory;

/// `{controller}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ControllerLabel {
    /// The controller name.
    pub controller: String,
}

/// `{controller, category}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct CategoryLabels {
    /// The controller name.
    pub controller: String,
    /// The [`ErrorCategory`] name.
    pub category: String,
}

/// `{controller, result}` (controller-runtime's reconcile counter).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResultLabels {
    /// The controller name.
    pub controller: String,
    /// `success`, `error` or `requeue_after`.
    pub result: String,
}

/// `{name}` (controller-runtime's workqueue and leader election metrics).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct NameLabel {
    /// The controller (workqueue) or Lease (leader election) name.
    pub name: String,
}

/// How a reconcile ended, for `controller_runtime_reconcile_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReconcileResult {
    /// No error, nothing scheduled: waits for the next change.
    Success,
    /// An error was reported.
    Error,
    /// No error; a reconcile is scheduled after a delay.
    RequeueAfter,
}

impl ReconcileResult {
    /// Every result.
    pub const ALL: [Self; 3] = [Self::Success, Self::Error, Self::RequeueAfter];

    fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::RequeueAfter => "requeue_after",
        }
    }
}

/// `{controller, verb}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct VerbLabels {
    /// The controller name.
    pub controller: String,
    /// `apply`, `delete`, `status`, `event` or `finalizer`.
    pub verb: String,
}

/// A write the engine performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteVerb {
    /// A server-side apply of a child.
    Apply,
    /// A delete of a child.
    Delete,
    /// A status patch.
    Status,
    /// An event.
    Event,
    /// A finalizer added or removed.
    Finalizer,
}

impl WriteVerb {
    /// Every verb.
    pub const ALL: [Self; 5] = [
        Self::Apply,
        Self::Delete,
        Self::Status,
        Self::Event,
        Self::Finalizer,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Self::Apply => "apply",
            Self::Delete => "delete",
            Self::Status => "status",
            Self::Event => "event",
            Self::Finalizer => "finalizer",
        }
    }
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// A source of one controller's queue depth: `None` once its engine is gone.
type DepthSource = Box<dyn Fn() -> Option<usize> + Send + Sync>;

/// `workqueue_depth`, summed per controller name over the engines still alive (a controller
/// restarted with a new engine keeps its name).
#[derive(Default)]
struct QueueDepth {
    sources: Mutex<Vec<(String, DepthSource)>>,
}

impl std::fmt::Debug for QueueDepth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueDepth").finish_non_exhaustive()
    }
}

impl QueueDepth {
    /// The depth per controller name, dropping the sources whose engine is gone.
    fn totals(&self) -> std::collections::BTreeMap<String, i64> {
        let mut depth: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
        let mut sources = self
            .sources
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sources.retain(|(name, source)| match source() {
            Some(n) => {
                *depth.entry(name.clone()).or_default() += i64::try_from(n).unwrap_or(i64::MAX);
                true
            }
            None => false,
        });
        depth
    }
}

impl Collector for QueueDepth {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let depth = self.totals();
        let mut family = encoder.encode_descriptor(
            "workqueue_depth",
            "Objects with a trigger not reconciled yet",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (name, n) in depth {
            ConstGauge::new(n).encode(family.encode_family(&NameLabel { name })?)?;
        }
        Ok(())
    }
}

/// The value of the `field` line (`VmRSS:`, `VmHWM:`, ...) of a `/proc/<pid>/status` text, in
/// KiB; `None` when the line is missing or not a number.
pub fn proc_status_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The process metrics, read from `/proc/self` at scrape time (Linux).
#[derive(Debug, Default)]
struct ProcessMetrics;

/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, 100 on every Linux ABI
/// kinfer runs on).
const USER_HZ: f64 = 100.0;

impl ProcessMetrics {
    /// (cpu seconds, start time since the epoch in seconds) from `/proc/self/stat` and the boot
    /// time of `/proc/stat`.
    fn times() -> Option<(f64, f64)> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name (which may hold spaces) in parentheses.
        let rest = stat.rsplit_once(')')?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // `rest` starts at field 3 (state): utime is field 14, stime 15, starttime 22.
        let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
        let cpu = (field(14)? + field(15)?) / USER_HZ;
        let boot = std::fs::read_to_string("/proc/stat")
            .ok()?
            .lines()
            .find_map(|l| {
                l.strip_prefix("btime ")
                    .and_then(|v| v.trim().parse::<f64>().ok())
            })?;
        Some((cpu, boot + field(22)? / USER_HZ))
    }

    fn resident_bytes() -> Option<i64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let kib = proc_status_kib(&status, "VmRSS:")?;
        i64::try_from(kib).ok()?.checked_mul(1024)
    }

    fn open_fds() -> Option<i64> {
        let n = std::fs::read_dir("/proc/self/fd").ok()?.count();
        i64::try_from(n).ok()
    }
}

impl Collector for ProcessMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(rss) = Self::resident_bytes() {
            let g = ConstGauge::new(rss);
            g.encode(encoder.encode_descriptor(
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                None,
                g.metric_type(),
            )?)?;
        }
        if let Some(fds) = Self::open_fds() {
            let g = ConstGauge::new(fds);
            g.encode(encoder.encode_descriptor(
                "process_open_fds",
                "Number of open file descriptors",
                None,
                g.metric_type(),
            )?)?;
        }
        if let Some((cpu, start)) = Self::times() {
            let c = ConstCounter::new(cpu);
            c.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                c.metric_type(),
            )?)?;
            let g = ConstGauge::new(start);
            g.encode(encoder.encode_descriptor(
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds",
                None,
                g.metric_type(),
            )?)?;
        }
        Ok(())
    }
}

/// When a reconcile last started or finished anywhere in the process.
#[derive(Debug)]
struct Progress {
    base: std::time::Instant,
    /// Nanoseconds after `base`.
    last: std::sync::atomic::AtomicU64,
}

impl Progress {
    fn new() -> Self {
        Self {
            base: std::time::Instant::now(),
            last: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn mark(&self) {
        let nanos = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last.store(nanos, std::sync::atomic::Ordering::Relaxed);
    }

    fn since(&self) -> std::time::Duration {
        let last =
            std::time::Duration::from_nanos(self.last.load(std::sync::atomic::Ordering::Relaxed));
        self.base.elapsed().saturating_sub(last)
    }
}

#[derive(Debug)]
struct Inner {
    registry: Mutex<Registry>,
    progress: Arc<Progress>,
    cr_reconciles: Family<ResultLabels, Counter>,
    cr_errors: Family<ControllerLabel, Counter>,
    cr_active: Family<ControllerLabel, Gauge>,
    wq_adds: Family<NameLabel, Counter>,
    wq_wait: Family<NameLabel, Histogram, fn() -> Histogram>,
    wq_depth: Arc<QueueDepth>,
    leader: Family<NameLabel, Gauge>,
    reconciles: Family<ControllerLabel, Counter>,
    errors: Family<CategoryLabels, Counter>,
    duration: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    queue_wait: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    writes: Family<VerbLabels, Counter>,
    paused: Family<ControllerLabel, Counter>,
    invalid: Family<ControllerLabel, Counter>,
}

/// The process-wide metrics; see the module contract.
#[derive(Debug, Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every kinfer metric registered.
    pub fn new() -> Self {
        let mut root = Registry::default();
        let cr_reconciles = Family::<ResultLabels, Counter>::default();
        let cr_errors = Family::<ControllerLabel, Counter>::default();
        // One histogram under both names: `kinfer_reconcile_duration_seconds` below.
        let duration =
            Family::<ControllerLabel, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_histogram,
            );
        let cr_active = Family::<ControllerLabel, Gauge>::default();
        let wq_adds = Family::<NameLabel, Counter>::default();
        let wq_wait = Family::<NameLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram,
        );
        let wq_depth = Arc::new(QueueDepth::default());
        let leader = Family::<NameLabel, Gauge>::default();
        root.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            cr_reconciles.clone(),
        );
        root.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            cr_errors.clone(),
        );
        root.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            duration.clone(),
        );
        root.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            cr_active.clone(),
        );
        root.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            wq_adds.clone(),
        );
        root.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            wq_wait.clone(),
        );
        root.register_collector(Box::new(Arc::clone(&wq_depth)));
        root.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master",
            leader.clone(),
        );
        root.register_collector(Box::new(ProcessMetrics));
        let registry = root.sub_registry_with_prefix("kinfer");
        let reconciles = Family::<ControllerLabel, Counter>::default();
        let errors = Family::<CategoryLabels, Counter>::default();
        let queue_wait =
            Family::<ControllerLabel, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_histogram,
            );
        let writes = Family::<VerbLabels, Counter>::default();
        let paused = Family::<ControllerLabel, Counter>::default();
        let invalid = Family::<ControllerLabel, Counter>::default();
        registry.register("reconciles", "Reconciles run", reconciles.clone());
        registry.register(
            "reconcile_errors",
            "Reconcile errors by category",
            errors.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Reconcile wall time",
            duration.clone(),
        );
        registry.register(
            "reconcile_queue_wait_seconds",
            "Time from the watch event to the reconcile start",
            queue_wait.clone(),
        );
        registry.register("writes", "API writes by verb", writes.clone());
        registry.register(
            "paused",
            "Reconciles skipped for the paused annotation",
            paused.clone(),
        );
        registry.register(
            "invalid_objects",
            "Objects that failed to deserialise",
            invalid.clone(),
        );
        Self {
            inner: Arc::new(Inner {
                registry: Mutex::new(root),
                progress: Arc::new(Progress::new()),
                cr_reconciles,
                cr_errors,
                cr_active,
                wq_adds,
                wq_wait,
                wq_depth,
                leader,
                reconciles,
                errors,
                duration,
                queue_wait,
                writes,
                paused,
                invalid,
            }),
        }
    }

    /// The metrics in the OpenMetrics text format (for `/metrics`).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self
            .inner
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }

    /// Register more metrics (an operator's own) in the same registry, under the `kinfer_`
    /// prefix.
    pub fn with_registry<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        let mut registry = self
            .inner
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(registry.sub_registry_with_prefix("kinfer"))
    }

    /// Reports `depth` (the number of objects with a pending trigger) as controller
    /// `controller`'s `workqueue_depth` until it answers `None` (its engine is gone).
    pub fn queue_depth(
        &self,
        controller: &str,
        depth: impl Fn() -> Option<usize> + Send + Sync + 'static,
    ) {
        self.inner
            .wq_depth
            .sources
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((controller.to_owned(), Box::new(depth)));
    }

    /// How long the process has had work queued without any reconcile starting or finishing:
    /// `None` while nothing is queued (an idle operator is not stalled). A health check
    /// compares it with its limit.
    pub fn stalled_for(&self) -> Option<std::time::Duration> {
        let queued: i64 = self.inner.wq_depth.totals().values().sum();
        (queued > 0).then(|| self.inner.progress.since())
    }

    /// Sets `leader_election_master_status{name}`: 1 while this replica holds Lease `name`.
    pub fn leading(&self, name: &str, leading: bool) {
        self.inner
            .leader
            .get_or_create(&NameLabel {
                name: name.to_owned(),
            })
            .set(i64::from(leading));
    }

    fn c(controller: &str) -> ControllerLabel {
        ControllerLabel {
            controller: controller.to_owned(),
        }
    }

    /// Count a reconcile and its duration.
    pub fn reconciled(&self, controller: &str, seconds: f64) {
        self.inner
            .reconciles
            .get_or_create(&Self::c(controller))
            .inc();
        self.inner
            .duration
            .get_or_create(&Self::c(controller))
            .observe(seconds);
    }

    /// Count an error.
    pub fn error(&self, controller: &str, category: ErrorCategory) {
        let l = CategoryLabels {
            controller: controller.to_owned(),
            category: category.as_str().to_owned(),
        };
        self.inner.errors.get_or_create(&l).inc();
    }

    /// Record queue wait.
    pub fn queue_wait(&self, controller: &str, seconds: f64) {
        self.inner
            .queue_wait
            .get_or_create(&Self::c(controller))
            .observe(seconds);
    }

    /// Count a write.
    pub fn write(&self, controller: &str, verb: WriteVerb) {
        let l = VerbLabels {
            controller: controller.to_owned(),
            verb: verb.as_str().to_owned(),
        };
        self.inner.writes.get_or_create(&l).inc();
    }

    /// Count a paused skip.
    pub fn paused(&self, controller: &str) {
        self.inner.paused.get_or_create(&Self::c(controller)).inc();
    }

    /// Count an object that failed to deserialise.
    pub fn invalid(&self, controller: &str) {
        self.inner.invalid.get_or_create(&Self::c(controller)).inc();
    }

    /// The handles of one controller's metrics, created once so a reconcile does not allocate
    /// label sets.
    pub fn controller(&self, controller: &str) -> ControllerMetrics {
        let c = Self::c(controller);
        let i = &self.inner;
        let n = NameLabel {
            name: controller.to_owned(),
        };
        ControllerMetrics {
            progress: Arc::clone(&i.progress),
            results: ReconcileResult::ALL.map(|r| {
                i.cr_reconciles
                    .get_or_create(&ResultLabels {
                        controller: controller.to_owned(),
                        result: r.as_str().to_owned(),
                    })
                    .clone()
            }),
            cr_errors: i.cr_errors.get_or_create(&c).clone(),
            active: i.cr_active.get_or_create(&c).clone(),
            adds: i.wq_adds.get_or_create(&n).clone(),
            queue_duration: i.wq_wait.get_or_create(&n).clone(),
            reconciles: i.reconciles.get_or_create(&c).clone(),
            duration: i.duration.get_or_create(&c).clone(),
            queue_wait: i.queue_wait.get_or_create(&c).clone(),
            writes: WriteVerb::ALL.map(|v| {
                i.writes
                    .get_or_create(&VerbLabels {
                        controller: controller.to_owned(),
                        verb: v.as_str().to_owned(),
                    })
                    .clone()
            }),
            errors: ErrorCategory::ALL.map(|cat| {
                i.errors
                    .get_or_create(&CategoryLabels {
                        controller: controller.to_owned(),
                        category: cat.as_str().to_owned(),
                    })
                    .clone()
            }),
            paused: i.paused.get_or_create(&c).clone(),
            invalid: i.invalid.get_or_create(&c).clone(),
        }
    }

    /// Writes of `verb` by `controller` so far (for tests and benchmarks).
    pub fn writes(&self, controller: &str, verb: WriteVerb) -> u64 {
        let l = VerbLabels {
            controller: controller.to_owned(),
            verb: verb.as_str().to_owned(),
        };
        self.inner.writes.get_or_create(&l).get()
    }

    /// Errors of `category` seen by `controller` so far.
    pub fn errors(&self, controller: &str, category: ErrorCategory) -> u64 {
        let l = CategoryLabels {
            controller: controller.to_owned(),
            category: category.as_str().to_owned(),
        };
        self.inner.errors.get_or_create(&l).get()
    }

    /// The sum of the whole-number samples whose exposition line starts with `prefix` (a
    /// metric name such as `kinfer_reconciles_total`, or a histogram's `_count`), over every
    /// controller: for tests and benchmarks reading the process's counters without a scrape.
    pub fn sum(&self, prefix: &str) -> u64 {
        self.encode()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .filter_map(|l| l.rsplit(' ').next())
            .filter_map(|n| n.parse::<u64>().ok())
            .sum()
    }
}

/// One controller's metric handles ([`Metrics::controller`]).
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    progress: Arc<Progress>,
    results: [Counter; 3],
    cr_errors: Counter,
    active: Gauge,
    adds: Counter,
    queue_duration: Histogram,
    reconciles: Counter,
    duration: Histogram,
    queue_wait: Histogram,
    writes: [Counter; 5],
    errors: [Counter; 6],
    paused: Counter,
    invalid: Counter,
}

impl ControllerMetrics {
    /// A reconcile starts (`controller_runtime_active_workers`).
    pub fn started(&self) {
        self.progress.mark();
        self.active.inc();
    }

    /// Count a reconcile, its duration and how it ended (and end its worker).
    pub fn reconciled(&self, seconds: f64, result: ReconcileResult) {
        self.progress.mark();
        self.active.dec();
        self.reconciles.inc();
        self.duration.observe(seconds);
        if let Some(i) = ReconcileResult::ALL.iter().position(|r| *r == result) {
            self.results[i].inc();
        }
        if result == ReconcileResult::Error {
            self.cr_errors.inc();
        }
    }

    /// A trigger was recorded (`workqueue_adds_total`).
    pub fn triggered(&self) {
        self.adds.inc();
    }

    /// Count an error.
    pub fn error(&self, category: ErrorCategory) {
        if let Some(i) = ErrorCategory::ALL.iter().position(|c| *c == category) {
            self.errors[i].inc();
        }
    }

    /// Record queue wait.
    pub fn queue_wait(&self, seconds: f64) {
        self.queue_wait.observe(seconds);
        self.queue_duration.observe(seconds);
    }

    /// Count `n` writes.
    pub fn writes(&self, verb: WriteVerb, n: usize) {
        if let Some(i) = WriteVerb::ALL.iter().position(|v| *v == verb) {
            self.writes[i].inc_by(u64::try_from(n).unwrap_or(u64::MAX));
        }
    }

    /// Count a paused skip.
    pub fn paused(&self) {
        self.paused.inc();
    }

    /// Count an object that failed to deserialise.
    pub fn invalid(&self) {
        self.invalid.inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_bounded_labels() {
        let m = Metrics::new();
        m.reconciled("svc", 0.01);
        m.error("svc", ErrorCategory::Infrastructure);
        m.write("svc", WriteVerb::Apply);
        m.reconciled("other", 0.02);
        assert_eq!(
            m.sum("kinfer_reconciles_total"),
            2,
            "summed over controllers"
        );
        assert_eq!(m.sum("kinfer_writes_total{controller=\"svc\""), 1);
        assert_eq!(m.sum("kinfer_no_such_metric"), 0);
        let text = m.encode();
        assert!(
            text.contains("kinfer_reconciles_total{controller=\"svc\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "kinfer_reconcile_errors_total{controller=\"svc\",category=\"Infrastructure\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("kinfer_writes_total{controller=\"svc\",verb=\"apply\"} 1"),
            "{text}"
        );
        assert_eq!(m.writes("svc", WriteVerb::Apply), 1);
        assert_eq!(m.writes("svc", WriteVerb::Delete), 0);
        let handles = m.controller("svc");
        handles.writes(WriteVerb::Apply, 2);
        handles.error(ErrorCategory::Auth);
        assert_eq!(
            m.writes("svc", WriteVerb::Apply),
            3,
            "handles share the registry"
        );
        assert_eq!(m.errors("svc", ErrorCategory::Auth), 1);
    }
}
