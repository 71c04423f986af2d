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

use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
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

#[derive(Debug)]
struct Inner {
    registry: Mutex<Registry>,
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
        let mut registry = Registry::with_prefix("kinfer");
        let reconciles = Family::<ControllerLabel, Counter>::default();
        let errors = Family::<CategoryLabels, Counter>::default();
        let duration =
            Family::<ControllerLabel, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_histogram,
            );
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
                registry: Mutex::new(registry),
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

    /// Register more metrics (an operator's own) in the same registry.
    pub fn with_registry<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        let mut registry = self
            .inner
            .registry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut registry)
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
        ControllerMetrics {
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
    reconciles: Counter,
    duration: Histogram,
    queue_wait: Histogram,
    writes: [Counter; 5],
    errors: [Counter; 6],
    paused: Counter,
    invalid: Counter,
}

impl ControllerMetrics {
    /// Count a reconcile and its duration.
    pub fn reconciled(&self, seconds: f64) {
        self.reconciles.inc();
        self.duration.observe(seconds);
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
