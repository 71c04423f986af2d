//! The workload simulator (opt-in): makes objects progress the way their real controllers
//! would, so status flows can be tested. See [`workloads`] for what each kind gets.
//!
//! Contract: it reacts to watch events from the store, writes only through the normal commit
//! path as field manager `kinfer-simulator` (so writes bump resourceVersion and emit events,
//! and no-op writes are skipped), and never touches objects a test holds back.
//!
//! [`aim`] supplies the logs of simulated AIM images (discovery dry-runs, size checks) as a
//! [`LogHook`], for `kinfer render` and the benchmark harness.

pub mod aim;
pub mod workloads;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::state::State;

/// A log hook: given (namespace, pod name, pod object), the log text or None.
pub type LogHook = Arc<dyn Fn(&str, &str, &serde_json::Value) -> Option<String> + Send + Sync>;

/// How a simulated Job ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JobOutcome {
    /// Pods succeed.
    #[default]
    Succeed,
    /// Pods fail.
    Fail,
}

/// Simulator settings shared with the test.
#[derive(Default)]
pub struct Simulator {
    pub(crate) held: Mutex<HashSet<(String, String, String)>>,
    pub(crate) log_hook: Mutex<Option<LogHook>>,
    pub(crate) job_outcomes: Mutex<Vec<(String, JobOutcome)>>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator").finish_non_exhaustive()
    }
}

impl Simulator {
    /// Hold back (or release) progress of one object (`kind` is the plural resource name).
    pub fn hold(&self, plural: &str, namespace: &str, name: &str, held: bool) {
        let mut h = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let k = (plural.to_owned(), namespace.to_owned(), name.to_owned());
        if held {
            h.insert(k);
        } else {
            h.remove(&k);
        }
    }

    pub(crate) fn is_held(&self, plural: &str, namespace: &str, name: &str) -> bool {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&(plural.to_owned(), namespace.to_owned(), name.to_owned()))
    }

    /// Set the hook that supplies pod logs.
    pub fn set_log_hook(&self, hook: LogHook) {
        *self
            .log_hook
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(hook);
    }

    /// Jobs whose name starts with `prefix` end with `outcome`.
    pub fn job_outcome(&self, prefix: &str, outcome: JobOutcome) {
        self.job_outcomes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((prefix.to_owned(), outcome));
    }

    pub(crate) fn outcome_for(&self, job: &str) -> JobOutcome {
        self.job_outcomes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .rev()
            .find(|(p, _)| job.starts_with(p.as_str()))
            .map(|(_, o)| *o)
            .unwrap_or_default()
    }

    /// The log of a pod: from the hook, or empty.
    pub fn pod_log(&self, state: &State, namespace: &str, name: &str) -> String {
        let hook = self
            .log_hook
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let pod = {
            let txn = state.store.txn();
            txn.get(
                &(String::new(), "pods".to_owned()),
                &(namespace.to_owned(), name.to_owned()),
            )
            .cloned()
        };
        match (hook, pod) {
            (Some(h), Some(p)) => h(namespace, name, &p).unwrap_or_default(),
            _ => String::new(),
        }
    }
}

/// Run the simulator until the store closes.
pub async fn run(state: Arc<State>) {
    let mut rx = state.store.subscribe();
    // Objects that existed before the simulator started.
    workloads::resync(&state);
    loop {
        match rx.recv().await {
            Ok(e) => workloads::on_event(&state, &e),
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => workloads::resync(&state),
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}
