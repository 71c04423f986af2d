//! The fault matrix for the AIM operator (the Zerfoo operator's is in
//! `crates/kinfer-bench/tests/fault_matrix.rs`, the ModelService operator's in
//! `operators/modelservice-operator/tests/fault_matrix.rs`): the operator in-process, as the
//! binary runs it, against the simulated test cluster with the faults of
//! [`kinfer_testkit::matrix::Case`] injected into its requests, over the small world of
//! [`support::world`] (a cluster model with inline metadata, its two cluster templates
//! discovered by Jobs, an MI300X Node, AIMServices with automatic selection, `Shared` and
//! `Dedicated` caching).
//!
//! For every fault: the catalog is Ready and every service `Running` at its generation with
//! its InferenceService; the children (templates, runtimes, InferenceServices, caches,
//! artifacts, PVCs, Jobs, the download identity, HPAs, routes) have exactly the shape of a
//! fault-free run's, per kind, namespace and controller owner, each with at most one
//! controller reference to a live owner (no duplicates, no orphans); every case checks that
//! its faults fired; and the teardown (faults cleared) leaves no child and nothing held by a
//! finalizer. A 410 on a watch costs exactly one re-list: counted on the resources the
//! operator lists only to start its watches (a fault-free run tells which, and how many
//! watchers each has), once every one of those watchers holds an open watch (before, a
//! reconcile may LIST a kind whose child watch has not listed yet: a start-up fallback, not
//! a re-list); then every watch is cut and two of those resources answer the resumed watch
//! with 410.
//! `Retry-After` has its own test (a throttled status write is retried no sooner than asked).
//! 410 on a LIST's `continue` needs a LIST longer than a page (500): 600 plain Nodes (the
//! operator watches every Node) exist before it starts, so its first Node LIST pages.
//!
//! Each fault is a test of its own (one failing case does not hide the others), sharing one
//! fault-free baseline run. CI runs each fault at 10% over three services (two Shared, one
//! Dedicated); `KINFER_FULL_MATRIX=1` runs 10% and 1% over eight. Besides the shape, each
//! service must choose the template the fault-free run chose: a transient fault must not
//! change what a service serves (a failed read of a discovered template's Jobs must not drop
//! its profile: [`aim_operator::template::discovery::JobSeen::Unreadable`]).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kinfer_testkit::Fault;
use kinfer_testkit::matrix::Case;
use support::world::{AIM, Shape, World, service_spec};
use tokio::sync::OnceCell;

fn full() -> bool {
    std::env::var_os("KINFER_FULL_MATRIX").is_some_and(|v| v == "1")
}

/// The services: every third `Dedicated`, the others `Shared`.
fn services() -> Vec<(String, &'static str)> {
    let n = if full() { 8 } else { 3 };
    (0..n)
        .map(|i| {
            let mode = if i % 3 == 2 { "Dedicated" } else { "Shared" };
            (format!("svc-{i}"), mode)
        })
        .collect()
}

fn names() -> Vec<String> {
    services().into_iter().map(|(n, _)| n).collect()
}

const TIMEOUT: Duration = Duration::from_mins(2);

/// Nodes making the operator's first Node LIST longer than one page.
const PAGING_NODES: usize = 600;

fn create_services(w: &World) {
    for (name, mode) in services() {
        w.service(&name, &service_spec(mode))
            .expect("create service");
    }
}

type Counts = BTreeMap<(String, String, u16), u64>;

fn count(counts: &Counts, verb: &str, resource: &str, code: Option<u16>) -> u64 {
    counts
        .iter()
        .filter(|((v, r, c), _)| v == verb && r == resource && code.is_none_or(|x| x == *c))
        .map(|(_, n)| n)
        .sum()
}

/// What a fault-free run yields: the children's shape, the template each service chose, and
/// per resource the operator lists only to start its watches, how many watchers it has (every
/// LIST of it was followed by one WATCH, and there was none once the services existed).
struct Baseline {
    shape: Shape,
    selections: BTreeMap<String, String>,
    watchers: BTreeMap<String, u64>,
}

/// The baseline, computed once per test binary (the case tests share it).
static BASELINE: OnceCell<Baseline> = OnceCell::const_new();

async fn base() -> &'static Baseline {
    BASELINE.get_or_init(baseline).await
}

async fn baseline() -> Baseline {
    let started_at = Instant::now();
    let mut w = World::start().await;
    w.run_operator().await;
    // The watchers' initial LISTs, before anything but the catalog exists.
    w.wait_until("the first template", TIMEOUT, |w| {
        (!w.objects(AIM, "aimclusterservicetemplates").is_empty())
            .then_some(())
            .ok_or_else(|| "no template yet".to_owned())
    })
    .await;
    let started = w.cluster.counters().snapshot();
    create_services(&w);
    let names = names();
    w.wait_until("baseline", TIMEOUT, |w| {
        w.catalog_ready()?;
        w.running(&names)
    })
    .await;
    let shape = w.shape().expect("baseline shape");
    let selections = w.selections();
    let done = w.cluster.counters().snapshot();
    let mut watchers = BTreeMap::new();
    let resources: BTreeSet<&String> = started.keys().map(|(_, r, _)| r).collect();
    for r in resources {
        let at_start = count(&started, "list", r, None);
        if at_start > 0
            && count(&done, "list", r, None) == at_start
            && count(&done, "watch", r, None) == at_start
        {
            watchers.insert(r.clone(), at_start);
        }
    }
    assert!(
        watchers.len() >= 2,
        "the baseline found fewer than two watch-only resources: {watchers:?}"
    );
    assert!(
        shape
            .keys()
            .any(|(p, _, k, _)| p == "inferenceservices" && k == "AIMService"),
        "the baseline has InferenceServices: {shape:?}"
    );
    assert!(
        shape
            .keys()
            .any(|(p, _, k, _)| p == "aimtemplatecaches" && k == "AIMService"),
        "the baseline has a Dedicated cache: {shape:?}"
    );
    assert!(
        shape
            .keys()
            .any(|(p, _, k, _)| p == "aimtemplatecaches" && k == "-"),
        "the baseline has a Shared cache: {shape:?}"
    );
    w.teardown(TIMEOUT).await;
    eprintln!(
        "baseline in {:?}: {} children, watchers of watch-only resources {watchers:?}",
        started_at.elapsed(),
        shape.values().sum::<usize>()
    );
    Baseline {
        shape,
        selections,
        watchers,
    }
}

async fn run_case(case: Case, percent: f64) {
    let base = base().await;
    let started_at = Instant::now();
    let what = format!("{case:?} at {percent}%");
    let mut w = World::start().await;
    w.cluster.faults().seed(11);
    let paged = case == Case::ContinueGone;
    if paged {
        for i in 0..PAGING_NODES {
            w.node(&format!("cpu-{i:03}"), None);
        }
        create_services(&w);
    }
    for f in case.rules(percent) {
        if f.basis_points.is_some_and(|b| b < 10_000) {
            // One sure firing first, so the case tests something however few matching
            // requests the operator sends at this share (1% of a few hundred may be none).
            w.cluster.faults().inject(Fault {
                basis_points: None,
                times: Some(1),
                ..f.clone()
            });
        }
        w.cluster.faults().inject(f);
    }
    w.run_operator().await;
    if !paged {
        create_services(&w);
    }
    let names = names();
    w.wait_until(&what, TIMEOUT, |w| {
        w.converged(&names, &base.shape, &base.selections)
    })
    .await;
    assert!(w.cluster.faults().fired() > 0, "{what}: no fault fired");
    let counts = w.cluster.counters().snapshot();
    match case {
        Case::WatchGone => one_relist_per_gone_watch(&w, base, &what, &names).await,
        Case::ContinueGone => {
            let gone: u64 = counts
                .iter()
                .filter(|((v, _, c), _)| v == "list" && *c == 410)
                .map(|(_, n)| n)
                .sum();
            assert!(gone > 0, "{what}: no paged LIST was failed");
        }
        _ => {}
    }
    assert!(w.operator_alive(), "{what}: the operator's task ended");
    w.teardown(TIMEOUT).await;
    eprintln!(
        "{what}: converged and torn down in {:?}",
        started_at.elapsed()
    );
}

/// The watchers of each watch-only resource ([`Baseline::watchers`]) that hold an open watch
/// (answered 200) in `counts`, minus those in `since`.
fn open_watches(counts: &Counts, since: &Counts, resource: &str) -> u64 {
    count(counts, "watch", resource, Some(200)) - count(since, "watch", resource, Some(200))
}

/// Waits until every watcher of every watch-only resource holds an open watch counted after
/// `since`: each has then listed and recorded that list (its index or store answers from then
/// on: no start-up fallback LIST), and none is between a 410 and its re-list.
async fn all_watching(w: &World, base: &Baseline, since: &Counts, what: &str) {
    w.wait_until(what, TIMEOUT, |w| {
        let counts = w.cluster.counters().snapshot();
        for (resource, watchers) in &base.watchers {
            let open = open_watches(&counts, since, resource);
            if open < *watchers {
                return Err(format!("{open} of {watchers} watches of {resource} open"));
            }
        }
        Ok(())
    })
    .await;
}

/// After the 410s at start-up: once every watcher holds an open watch, every watch is cut and
/// two watch-only resources answer the resumed watch with 410; each 410 must cost exactly one
/// LIST (a watch resumed without one costs none), and the world stays converged.
async fn one_relist_per_gone_watch(w: &World, base: &Baseline, what: &str, names: &[String]) {
    all_watching(w, base, &Counts::new(), &format!("{what}: all watching")).await;
    // Clear the start-up rules (they may have firings left): the 410s below are the only ones.
    w.cluster.faults().clear();
    let before = w.cluster.counters().snapshot();
    let sure_gone: Vec<&String> = base.watchers.keys().take(2).collect();
    for resource in &sure_gone {
        w.cluster
            .faults()
            .inject(Fault::watch_gone(resource).times(1));
    }
    w.cluster.faults().cut_watches();
    all_watching(w, base, &before, &format!("{what}: watching again")).await;
    let counts = w.cluster.counters().snapshot();
    let since = |verb: &str, resource: &str, code: Option<u16>| {
        count(&counts, verb, resource, code) - count(&before, verb, resource, code)
    };
    for resource in base.watchers.keys() {
        let gone = since("watch", resource, Some(410));
        let lists = since("list", resource, None);
        assert_eq!(
            lists, gone,
            "{what}: {lists} LISTs of {resource} after its watches were cut, for {gone} 410s"
        );
        if sure_gone.contains(&resource) {
            assert_eq!(
                gone, 1,
                "{what}: the 410 on {resource}'s watch did not fire"
            );
        }
    }
    w.wait_until(&format!("{what}: after the re-lists"), TIMEOUT, |w| {
        w.converged(names, &base.shape, &base.selections)
    })
    .await;
}

/// One test per fault, at 10% (and 1% with `KINFER_FULL_MATRIX=1`).
macro_rules! fault_case {
    ($name:ident, $case:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            run_case($case, 10.0).await;
            if full() {
                run_case($case, 1.0).await;
            }
        }
    };
}

fault_case!(throttled_with_retry_after_converges, Case::Throttle);
fault_case!(internal_errors_converge, Case::InternalError);
fault_case!(unavailable_converges, Case::Unavailable);
fault_case!(conflicts_on_write_converge, Case::ConflictOnWrite);
fault_case!(cut_watches_converge, Case::WatchCut);
fault_case!(gone_watches_converge_with_one_relist_each, Case::WatchGone);
fault_case!(gone_continue_tokens_converge, Case::ContinueGone);
fault_case!(one_second_latency_converges, Case::Latency);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_mid_reconcile_and_restarted_converges_without_duplicates() {
    let base = base().await;
    let mut w = World::start().await;
    // Slow every answer a little so the kill lands while reconciles are in flight.
    w.cluster.faults().inject(Fault {
        latency: Some(Duration::from_millis(20)),
        ..Fault::any()
    });
    w.run_operator().await;
    create_services(&w);
    let names = names();
    w.wait_until("the first template cache", TIMEOUT, |w| {
        (!w.objects(AIM, "aimtemplatecaches").is_empty())
            .then_some(())
            .ok_or_else(|| "no template cache yet".to_owned())
    })
    .await;
    w.kill_operator();
    assert!(
        w.converged(&names, &base.shape, &base.selections).is_err(),
        "killed too late: everything had converged"
    );
    w.cluster.faults().clear();
    w.run_operator().await;
    w.wait_until("after the restart", TIMEOUT, |w| {
        w.converged(&names, &base.shape, &base.selections)
    })
    .await;
    w.teardown(TIMEOUT).await;
}

/// `Retry-After` is honoured by every reconcile of a service, not only by its requeue,
/// although the watch events of what it just applied trigger the next one at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_status_write_is_retried_no_sooner_than_retry_after() {
    let base = base().await;
    let mut w = World::start().await;
    w.run_operator().await;
    w.wait_until("the catalog", TIMEOUT, World::catalog_ready)
        .await;
    // svc-0's status writes are throttled for the next three tries, asking for 2 s each.
    w.cluster.faults().inject(
        Fault::throttle("patch", "aimservices/status", 2)
            .named("svc-0")
            .times(3),
    );
    let started = Instant::now();
    create_services(&w);
    let svc0 = vec!["svc-0".to_owned()];
    w.wait_until("svc-0 despite the 429s", TIMEOUT, |w| w.running(&svc0))
        .await;
    let elapsed = started.elapsed();
    let counts = w.cluster.counters().snapshot();
    let throttled = count(&counts, "patch", "aimservices/status", Some(429));
    assert_eq!(throttled, 3, "the 429s were not all hit");
    // Three 429s asking for 2 s each: at least 6 s before the write that went through.
    assert!(
        elapsed >= Duration::from_secs(6),
        "svc-0 Running after {elapsed:?}: Retry-After was not honoured"
    );
    let names = names();
    w.wait_until("the others", TIMEOUT, |w| {
        w.converged(&names, &base.shape, &base.selections)
    })
    .await;
    w.teardown(TIMEOUT).await;
}
