//! Waiting until nothing is left to reconcile.
//!
//! Definition (what "settled" means for `kinfer render`): the render cluster is *settled* at
//! time `t` when both hold:
//! 1. every input of a kind an operator reconciles ([`super::operators::reconciled`]) exists
//!    and reports `status.observedGeneration == metadata.generation` (its latest spec has been
//!    reconciled at least once);
//! 2. during the quiet window `[t - window, t]` the cluster stored no change (its global
//!    resourceVersion did not move) and received no write request of any outcome (create,
//!    update, patch, delete: a refused or no-op write still means a controller is working).
//!
//! Both are read from the test cluster itself ([`kinfer_testkit::TestCluster::resource_version`]
//! and its request counters), sampled every [`SAMPLE`]; the window (`--settle`, default 1 s)
//! bounds how long a controller may think between two writes. Controllers that only requeue
//! on a timer and write nothing then (steady state) do not keep the cluster unsettled.
//! Not settled by `timeout` → [`Outcome::settled`] is false and [`Outcome::pending`] says what
//! was still pending: inputs not yet observed, or "the cluster was still changing".
//! The first time each input reports Ready is recorded for the demo's timing column.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use kinfer_testkit::TestCluster;
use kube::Client;
use serde_json::Value;

use super::apply::{self, Input};
use super::operators;
use super::validate::group_of;
use crate::progress::Progress;

/// How often the cluster is sampled.
pub const SAMPLE: Duration = Duration::from_millis(50);

/// What the wait found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Whether the cluster settled before the timeout.
    pub settled: bool,
    /// What was still pending at the timeout (empty when settled).
    pub pending: Vec<String>,
    /// Input index → time from the operators' start to the input's first Ready (as sampled).
    pub ready_after: BTreeMap<usize, Duration>,
    /// Time from the operators' start to the end of the wait.
    pub elapsed: Duration,
}

/// Whether an object says it is ready: a `Ready` condition, else `status.ready`, else a
/// `status.status` of `Ready` or `Running`. `None` when it says nothing.
pub fn readiness(object: &Value) -> Option<bool> {
    let status = &object["status"];
    if let Some(conditions) = status["conditions"].as_array()
        && let Some(ready) = conditions.iter().find(|c| c["type"] == "Ready")
    {
        return Some(ready["status"] == "True");
    }
    if let Some(ready) = status["ready"].as_bool() {
        return Some(ready);
    }
    status["status"]
        .as_str()
        .map(|s| matches!(s, "Ready" | "Running"))
}

fn write_requests(cluster: &TestCluster) -> u64 {
    cluster
        .counters()
        .snapshot()
        .iter()
        .filter(|((verb, _, _), _)| {
            matches!(
                verb.as_str(),
                "create" | "update" | "patch" | "delete" | "deletecollection"
            )
        })
        .map(|(_, n)| n)
        .sum()
}

/// Inputs some operator reconciles.
pub fn tracked(inputs: &[Input]) -> Vec<usize> {
    inputs
        .iter()
        .enumerate()
        .filter(|(_, i)| operators::reconciled(group_of(i.doc.api_version()), i.doc.kind()))
        .map(|(n, _)| n)
        .collect()
}

/// Waits until settled or `timeout` after `start` (when the operators were started); see the
/// module contract.
pub async fn wait(
    cluster: &TestCluster,
    client: &Client,
    inputs: &[Input],
    window: Duration,
    timeout: Duration,
    start: Instant,
    progress: &Progress,
) -> Result<Outcome> {
    let tracked = tracked(inputs);
    let mut ready_after = BTreeMap::new();
    let mut last = (u64::MAX, u64::MAX);
    let mut last_change = start;
    let mut pending: Vec<String> = Vec::new();
    let mut last_report = start;
    let mut ticker = tokio::time::interval(SAMPLE);
    loop {
        ticker.tick().await;
        let now = Instant::now();
        let seen = (cluster.resource_version(), write_requests(cluster));
        if seen != last {
            last = seen;
            last_change = now;
            pending.clear();
            for &n in &tracked {
                let input = &inputs[n];
                match apply::current(client, input).await? {
                    None => pending.push(format!("{} (deleted)", input.display())),
                    Some(object) => {
                        let value = serde_json::to_value(&object)?;
                        if readiness(&value) == Some(true) {
                            ready_after.entry(n).or_insert(now - start);
                        }
                        let (generation, observed) = apply::generations(&object);
                        if generation.is_none() || generation != observed {
                            pending.push(format!(
                                "{} (generation {}, observed {})",
                                input.display(),
                                generation.map_or_else(|| "-".to_owned(), |g| g.to_string()),
                                observed.map_or_else(|| "none".to_owned(), |g| g.to_string()),
                            ));
                        }
                    }
                }
            }
        }
        let quiet = now - last_change >= window;
        if pending.is_empty() && quiet {
            return Ok(Outcome {
                settled: true,
                pending: Vec::new(),
                ready_after,
                elapsed: now - start,
            });
        }
        if now - start >= timeout {
            if pending.is_empty() {
                pending.push(
                    "every input was reconciled, but the cluster was still changing".to_owned(),
                );
            }
            return Ok(Outcome {
                settled: false,
                pending,
                ready_after,
                elapsed: now - start,
            });
        }
        if now - last_report >= Duration::from_secs(1) {
            last_report = now;
            if pending.is_empty() {
                progress.note(&format!(
                    "waiting for the cluster to stay quiet for {}",
                    crate::progress::human(window)
                ));
            } else {
                progress.note(&format!(
                    "waiting for {} of {} inputs to be reconciled",
                    pending.len(),
                    tracked.len()
                ));
            }
        }
    }
}
