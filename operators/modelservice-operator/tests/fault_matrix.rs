//! The fault matrix for the ModelService operator (the Zerfoo operator's is in
//! `crates/kinfer-bench/tests/fault_matrix.rs`): the operator in-process against the
//! simulated test cluster with each fault of [`Case::ALL`] injected into 10% of its requests
//! (at least half of its watches for the watch faults), and again at 1%; every case at both
//! rates, all of it in CI (about a minute).
//!
//! A ModelService's first reconciles send about 30 requests (13 children read and applied,
//! the cluster RBAC, the token Secret, the status), so at 10% nearly every reconcile meets a
//! fault. That converges in seconds because the engine does not escalate the backoff of a
//! failed reconcile that made progress (a child applied with a new body, a finalizer added or
//! released, a child deleted): it retries after 1 s (or the `Retry-After`) instead of doubling
//! towards the 300 s cap; and a failed read by name of one planned child (500 or 503 on a
//! GET) skips only that child, so the others are still applied and the attempt progresses.
//!
//! For every fault: every ModelService becomes Ready at its generation, owns exactly the
//! children a ModelService owns without faults (one controller reference each: no duplicates,
//! no orphans) and its one metrics-auth ClusterRoleBinding (and no ClusterRole), and once deleted
//! (faults cleared) leaves nothing: no child, no cluster-scoped RBAC, no ModelService held by
//! its finalizer. Every case checks that its faults fired; at three ModelServices no LIST is
//! paged, so `ContinueGone` checks convergence only (as the Zerfoo matrix at CI size).
//! Separately, an operator killed mid-reconcile (no graceful shutdown) and restarted converges
//! with the same guarantees.
//!
//! The test's own reads and writes go in-process (not through the faulty HTTP path), so only
//! the operator sees the faults.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::owned::{self, Kind, controllers, managed};
use common::{Harness, minimal};
use kinfer_testkit::Fault;
use kinfer_testkit::matrix::Case;
use modelservice_operator::OperatorConfig;

const NS: &str = "team-a";
const COUNT: usize = 3;
const BOUND: Duration = Duration::from_secs(150);

/// Every one of the `count` ModelServices Ready at its generation, each owning exactly
/// `expected` children per kind through one controller reference, no managed child without a
/// live owner, and one managed ClusterRoleBinding per ModelService, labelled with a live
/// ModelService as its parent (and no managed ClusterRole: those ship with the install).
fn converged(h: &Harness, count: usize, expected: &BTreeMap<Kind, usize>) -> Result<(), String> {
    let services = h.cluster.objects("model.otterscale.io", "modelservices");
    if services.len() != count {
        return Err(format!("{} ModelServices", services.len()));
    }
    let mut uids = BTreeSet::new();
    let mut names = BTreeSet::new();
    for s in &services {
        let ready = s["status"]["phase"] == "Ready"
            && s["status"]["observedGeneration"] == s["metadata"]["generation"];
        if !ready {
            return Err(format!(
                "{} is {} (generation {}): {}",
                s["metadata"]["name"],
                s["status"]["phase"],
                s["metadata"]["generation"],
                s["status"]
            ));
        }
        uids.insert(s["metadata"]["uid"].as_str().unwrap_or_default().to_owned());
        names.insert(
            s["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    let kinds = owned::namespaced_kinds();
    for (kind, per_owner) in owned::count_by_owner(&h.cluster, NS, &kinds) {
        if let Some(orphan) = per_owner.keys().find(|uid| !uids.contains(*uid)) {
            return Err(format!("{} owned by a missing {orphan}", kind.1));
        }
        let want = expected.get(&kind).copied().unwrap_or(0);
        for uid in &uids {
            let have = per_owner.get(uid).copied().unwrap_or(0);
            if have != want {
                return Err(format!(
                    "{}: {have} owned by {uid}, expected {want}",
                    kind.1
                ));
            }
        }
    }
    for (group, plural) in &kinds {
        for o in h.cluster.objects(group, plural) {
            if o["metadata"]["namespace"] == NS && managed(&o) && controllers(&o).len() != 1 {
                return Err(format!(
                    "{plural} {}: {} controllers",
                    o["metadata"]["name"],
                    controllers(&o).len()
                ));
            }
        }
    }
    for (group, plural) in owned::cluster_rbac_kinds() {
        let want = if plural == "clusterroles" { 0 } else { count };
        let parents: Vec<String> = h
            .cluster
            .objects(&group, &plural)
            .iter()
            .filter(|o| managed(o))
            .map(|o| {
                o["metadata"]["labels"][kinfer_api::labels::PARENT_NAME]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        let distinct: BTreeSet<String> = parents.iter().cloned().collect();
        if parents.len() != want || (want > 0 && distinct != names) {
            return Err(format!(
                "{plural}: parents {parents:?}, expected one for each of {names:?}"
            ));
        }
    }
    Ok(())
}

fn create_all(h: &Harness, count: usize) {
    for i in 0..count {
        let ms = minimal(&format!("ms-{i}"), NS);
        h.cluster
            .create_object("model.otterscale.io/v1alpha1", "modelservices", NS, ms)
            .expect("create ModelService");
    }
}

/// Deletes every ModelService (through the API, faults cleared) and waits until nothing is
/// left.
async fn delete_all(h: &Harness, count: usize, what: &str) {
    h.cluster.faults().clear();
    let api: kube::Api<kinfer_api::modelservice::ModelService> =
        kube::Api::namespaced(h.client.clone(), NS);
    for i in 0..count {
        api.delete(&format!("ms-{i}"), &kube::api::DeleteParams::default())
            .await
            .expect("delete");
    }
    h.until(&format!("{what}: deletion"), BOUND, |h| {
        owned::gone(&h.cluster)
    })
    .await;
}

/// What one ModelService owns without faults, per kind.
async fn baseline() -> BTreeMap<Kind, usize> {
    let h = Harness::start().await;
    create_all(&h, COUNT);
    h.until("baseline", BOUND, |h| {
        let n = h.cluster.objects("model.otterscale.io", "modelservices");
        let ready = n.iter().all(|s| s["status"]["phase"] == "Ready");
        (ready && n.len() == COUNT)
            .then_some(())
            .ok_or_else(|| "not Ready".to_owned())
    })
    .await;
    let mut expected = BTreeMap::new();
    for (kind, per_owner) in owned::count_by_owner(&h.cluster, NS, &owned::namespaced_kinds()) {
        let n: usize = per_owner.values().sum();
        assert_eq!(n % COUNT, 0, "{}: {n} for {COUNT} ModelServices", kind.1);
        expected.insert(kind, n / COUNT);
    }
    assert!(
        expected.values().sum::<usize>() >= 10,
        "a ModelService owns its Deployments, Services, RBAC, pool, route…: {expected:?}"
    );
    converged(&h, COUNT, &expected).expect("the baseline passes its own check");
    expected
}

async fn run_case(case: Case, percent: f64, expected: &BTreeMap<Kind, usize>) {
    let h = Harness::start().await;
    h.cluster.faults().seed(17);
    for f in case.rules(percent) {
        if f.basis_points.is_some_and(|b| b < 10_000) {
            // One sure firing first, so the case tests something however few requests the
            // operator needs to converge.
            h.cluster.faults().inject(Fault {
                basis_points: None,
                times: Some(1),
                ..f.clone()
            });
        }
        h.cluster.faults().inject(f);
    }
    create_all(&h, COUNT);
    let what = format!("{case:?} at {percent}%");
    let started = tokio::time::Instant::now();
    h.until(&what, BOUND, |h| converged(h, COUNT, expected))
        .await;
    let fired = h.cluster.faults().fired();
    if case != Case::ContinueGone {
        assert!(fired > 0, "{what}: no fault fired");
    }
    eprintln!(
        "{what}: converged in {:?}, {fired} faults",
        started.elapsed()
    );
    delete_all(&h, COUNT, &what).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_at_ten_and_one_percent_converges_without_duplicates_orphans_or_leftovers() {
    let expected = baseline().await;
    for case in Case::ALL {
        run_case(case, 10.0, &expected).await;
        run_case(case, 1.0, &expected).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_mid_reconcile_and_restarted_converges_without_duplicates() {
    let expected = baseline().await;
    let count = 6;
    let mut h = Harness::start().await;
    // Slow every answer a little so the kill lands while reconciles are in flight.
    h.cluster.faults().inject(Fault {
        latency: Some(Duration::from_millis(20)),
        ..Fault::any()
    });
    create_all(&h, count);
    h.until("the first Deployment", BOUND, |h| {
        let any = h
            .cluster
            .objects("apps", "deployments")
            .iter()
            .any(|d| d["metadata"]["namespace"] == NS && managed(d));
        any.then_some(()).ok_or_else(|| "none yet".to_owned())
    })
    .await;
    h.kill();
    assert!(
        converged(&h, count, &expected).is_err(),
        "killed too late: everything had converged"
    );
    h.cluster.faults().clear();
    h.run(OperatorConfig::default()).await;
    h.until("after the restart", BOUND, |h| {
        converged(h, count, &expected)
    })
    .await;
    delete_all(&h, count, "after the restart").await;
}
