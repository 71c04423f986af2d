//! How an engine behaves: label scheme, grace, backoff, rechecks, the reporting instance.

use std::time::Duration;

use crate::backoff::BackoffPolicy;
use crate::labels::LabelScheme;
use crate::status::DEFAULT_INFRA_GRACE;

/// How an engine behaves.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Label domain, controller name and field manager.
    pub scheme: LabelScheme,
    /// Infrastructure grace period (upstream: 10 s).
    pub grace: Duration,
    /// Backoff for infrastructure errors (1 s doubling to 300 s).
    pub backoff: BackoffPolicy,
    /// Recheck interval for user-fixable errors of objects with external dependencies, for
    /// resource exhaustion, and for child kinds the cluster does not serve.
    pub slow_recheck: Duration,
    /// The reporting instance of events (the pod name; the binary reads it from its
    /// environment, the library never does).
    pub instance: Option<String>,
}

impl EngineConfig {
    /// Defaults for `scheme`.
    pub fn new(scheme: LabelScheme) -> Self {
        Self {
            scheme,
            grace: DEFAULT_INFRA_GRACE,
            backoff: BackoffPolicy::default(),
            slow_recheck: Duration::from_mins(5),
            instance: None,
        }
    }

    /// Report events as `instance` (the pod name).
    #[must_use]
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
        self
    }
}
