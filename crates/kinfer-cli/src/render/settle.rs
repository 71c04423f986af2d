//! Waiting until nothing is left to reconcile.
//!
//! Definition (what "settled" means for `kinfer render`): the render cluster is *settled* at
//! time `t` when all hold:
//! 1. every input of a kind an operator reconciles ([`super::operators::reconciled`]) exists
//!    and reports `status.observedGeneration == metadata.generation` (its latest spec has been
//!    reconciled at least once);
//! 2. every object of those kinds, inputs and the objects the operators create alike (such as
//!    AIM templates generated from a model), reports `observedGeneration == generation` and
//!    none says it waits on a timed retry ([`super::verdict::Verdict::Retrying`]: an
//!    `InfrastructureError` or `DiscoveryThrottled` condition, or a `Progressing`, `Starting`
//!    or `Degraded` phase): the operator's work queue still holds it, due later;
//! 3. during the quiet window `[t - window, t]` the cluster stored no change (its global
//!    resourceVersion did not move) and received no write request of any outcome (create,
//!    update, patch, delete: a refused or no-op write still means a controller is working).
//!
//! All three are read from the test cluster itself ([`kinfer_testkit::TestCluster::resource_version`],
//! its request counters, a list of every reconciled kind), sampled every [`SAMPLE`] (the lists
//! only when something changed); the window (`--settle`,
//! default 1 s) bounds how long a controller may think between two writes. A controller whose
//! only queued work is a periodic resync that writes nothing (steady state) does not keep the
//! cluster unsettled. Not settled by `deadline` → [`Outcome::settled`] is false and
//! [`Outcome::pending`] says what was still pending: inputs not yet observed, inputs waiting on
//! a retry (with their reason), or "the cluster was still changing".
//! The first time each input reports Ready is recorded for the demo's timing column.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::Result;
use kinfer_testkit::TestCluster;
use kube::Client;
use serde_json::Value;

use super::apply::Input;
use super::operators;
use super::output::{is_object_of, list_all};
use super::validate::group_of;
use super::verdict::{Verdict, judge};
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

/// `Kind ns/name` or `Kind name` of a listed object.
fn shown(value: &Value) -> String {
    let kind = value["kind"].as_str().unwrap_or_default();
    let name = value["metadata"]["name"].as_str().unwrap_or_default();
    match value["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Waits until settled or `deadline`; `start` is when the operators were started. See the
/// module contract.
pub async fn wait(
    cluster: &TestCluster,
    client: &Client,
    inputs: &[Input],
    window: Duration,
    deadline: Instant,
    start: Instant,
    progress: &Progress,
) -> Result<Outcome> {
    let tracked = tracked(inputs);
    let resources = operators::reconciled_resources();
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
            let mut found = BTreeSet::new();
            for resource in &resources {
                for value in list_all(client, resource).await? {
                    let shown = shown(&value);
                    if let Some(&n) = tracked.iter().find(|&&n| is_object_of(&value, &inputs[n])) {
                        found.insert(n);
                        if readiness(&value) == Some(true) {
                            ready_after.entry(n).or_insert(now - start);
                        }
                    }
                    let generation = value["metadata"]["generation"].as_i64();
                    let observed = value["status"]["observedGeneration"].as_i64();
                    if let Verdict::Retrying(why) = judge(&value) {
                        pending.push(format!("{shown} (waiting on a retry: {why})"));
                    } else if generation.is_none() || generation != observed {
                        pending.push(format!(
                            "{shown} (generation {}, observed {})",
                            generation.map_or_else(|| "-".to_owned(), |g| g.to_string()),
                            observed.map_or_else(|| "none".to_owned(), |g| g.to_string()),
                        ));
                    }
                }
            }
            for &n in tracked.iter().filter(|n| !found.contains(n)) {
                pending.push(format!("{} (deleted)", inputs[n].display()));
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
        if now >= deadline {
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

#[cfg(test)]
mod tests {
    use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
    use kube::discovery::ApiResource;
    use serde_json::json;

    use super::*;
    use crate::render::input::Document;

    fn condition(status: &str, reason: &str) -> Value {
        json!({ "type": "Ready", "status": status, "reason": reason, "message": "m",
                "lastTransitionTime": "2024-01-01T00:00:00Z" })
    }

    /// The settle rule end to end on a real (test) API server, without operators: an input
    /// reconciled at its generation but reporting an infrastructure error is still pending;
    /// once it reports Ready the cluster settles.
    #[tokio::test]
    async fn an_input_waiting_on_a_retry_keeps_render_unsettled() {
        let cluster = TestCluster::start().await.unwrap();
        cluster.install_crds(&kinfer_api::crds::all()).unwrap();
        let client = cluster.client().unwrap();
        let resource = ApiResource::erase::<kinfer_api::zerfoo::ZerfooInferenceService>(&());
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
        let value = json!({ "apiVersion": "zerfoo.feza.ai/v1", "kind": "ZerfooInferenceService",
            "metadata": { "name": "z", "namespace": "default" },
            "spec": { "modelRef": "m", "replicas": 1 } });
        let object: DynamicObject = serde_json::from_value(value.clone()).unwrap();
        let created = api.create(&PostParams::default(), &object).await.unwrap();
        let generation = created.metadata.generation.unwrap();
        let set_status = |reason: &'static str, status: &'static str| {
            let api = api.clone();
            async move {
                let patch = json!({ "status": { "observedGeneration": generation,
                    "conditions": [condition(status, reason),
                        { "type": "DependenciesReachable", "status": status, "reason": reason,
                          "message": "m", "lastTransitionTime": "2024-01-01T00:00:00Z" }] } });
                api.patch_status("z", &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap();
            }
        };
        set_status("InfrastructureError", "False").await;
        let inputs = vec![Input {
            doc: Document {
                file: "z.yaml".into(),
                index: 1,
                value,
            },
            resource,
            namespaced: true,
        }];
        let progress = Progress::new(true);
        let window = Duration::from_millis(200);
        let start = Instant::now();
        let deadline = start + Duration::from_millis(1500);
        let outcome = wait(
            &cluster, &client, &inputs, window, deadline, start, &progress,
        )
        .await
        .unwrap();
        assert!(!outcome.settled, "settled while waiting on a retry");
        assert_eq!(outcome.pending.len(), 1, "{:?}", outcome.pending);
        assert!(
            outcome.pending[0].contains("waiting on a retry: InfrastructureError"),
            "{:?}",
            outcome.pending
        );

        set_status("AllComponentsReady", "True").await;
        let start = Instant::now();
        let deadline = start + Duration::from_secs(10);
        let outcome = wait(
            &cluster, &client, &inputs, window, deadline, start, &progress,
        )
        .await
        .unwrap();
        assert!(outcome.settled, "{:?}", outcome.pending);
        assert!(outcome.ready_after.contains_key(&0));
    }
}
