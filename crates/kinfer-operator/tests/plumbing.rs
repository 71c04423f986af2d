//! The shared operator plumbing against the in-process test cluster (kinfer-testkit): Lease
//! leader election with two candidates, the leading run of a controller future, the admin
//! server over real sockets, the CRD checks, the optional-CRD watch and the process life
//! cycle. Bounded waits on watch channels, no sleeps.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinfer_operator::leader::{LeaderElector, LeaderError, LeaseSettings};
use kinfer_operator::server::{self, Endpoints, Role};
use kinfer_operator::{
    CommonArgs, CrdError, CrdWatch, FenceError, InstalledCrds, Process, WriteFence, crds,
    run_with_leader_election,
};
use kinfer_testkit::{Fault, TestCluster};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, watch};

const LEASE: &str = "test-operator-leader";
const WAIT: Duration = Duration::from_secs(10);

fn settings(identity: &str) -> LeaseSettings {
    LeaseSettings {
        lease_duration: Duration::from_millis(1500),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(100),
        ..LeaseSettings::new(LEASE, "default", identity)
    }
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get(LEASE)
        .await
        .unwrap()
        .spec
        .unwrap()
        .holder_identity
}

async fn client(cluster: &TestCluster) -> Client {
    kinfer_operator::client::from_kubeconfig(cluster.kubeconfig().unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn only_one_leads_and_the_other_takes_over() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let (stop_tx, stop_rx) = watch::channel(false);

    let (a_tx, mut a_rx) = watch::channel(false);
    let a =
        tokio::spawn(LeaderElector::new(client.clone(), settings("a")).run(a_tx, stop_rx.clone()));
    tokio::time::timeout(WAIT, a_rx.wait_for(|l| *l))
        .await
        .expect("a leads")
        .unwrap();

    let (b_tx, mut b_rx) = watch::channel(false);
    let b =
        tokio::spawn(LeaderElector::new(client.clone(), settings("b")).run(b_tx, stop_rx.clone()));
    // For longer than a lease duration, b stays a follower: a keeps renewing.
    let b_led = tokio::time::timeout(Duration::from_millis(2500), b_rx.wait_for(|l| *l))
        .await
        .is_ok();
    assert!(!b_led, "b must not lead while a renews");
    assert!(*a_rx.borrow());
    assert_eq!(holder(&leases).await.as_deref(), Some("a"));

    // a stops renewing (crashes without releasing); b takes over after the lease expires.
    a.abort();
    tokio::time::timeout(WAIT, b_rx.wait_for(|l| *l))
        .await
        .expect("b takes over")
        .unwrap();
    assert_eq!(holder(&leases).await.as_deref(), Some("b"));
    let lease = leases.get(LEASE).await.unwrap();
    assert_eq!(lease.spec.unwrap().lease_transitions, Some(1));

    // A graceful stop releases the Lease.
    stop_tx.send_replace(true);
    b.await.unwrap().unwrap();
    assert_eq!(holder(&leases).await, None);
}

#[tokio::test]
async fn a_leader_that_cannot_renew_steps_down() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let (_stop_tx, stop_rx) = watch::channel(false);
    let (tx, mut rx) = watch::channel(false);
    let run = tokio::spawn(LeaderElector::new(client, settings("a")).run(tx, stop_rx));
    tokio::time::timeout(WAIT, rx.wait_for(|l| *l))
        .await
        .expect("leads")
        .unwrap();
    cluster
        .faults()
        .inject(Fault::status("update", "leases", 500));
    let result = tokio::time::timeout(WAIT, run)
        .await
        .expect("steps down in time")
        .unwrap();
    assert!(matches!(result, Err(LeaderError::LostLeadership { .. })));
    assert!(!*rx.borrow());
}

/// Every request of the test cluster that writes, answered or refused.
fn writes_sent(cluster: &TestCluster) -> u64 {
    cluster
        .counters()
        .snapshot()
        .iter()
        .filter(|((verb, _, _), _)| kinfer_testkit::is_write(verb))
        .map(|(_, n)| n)
        .sum()
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name, "namespace": "default"}}))
        .unwrap()
}

/// The fence is the Lease's own deadline, checked when a write is sent: an elector that stops
/// ticking (a paused or wedged process) cannot keep it open, and a withheld write never
/// reaches the server, while reads always do.
#[tokio::test]
async fn the_write_fence_sends_writes_only_within_the_renew_deadline() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let fence = WriteFence::closed();
    let maps: Api<ConfigMap> = Api::namespaced(fence.client(&client), "default");
    let pp = PostParams::default();

    // Not leading yet: refused in-process, not sent; reads go through.
    let sent = writes_sent(&cluster);
    let refused = maps.create(&pp, &config_map("early")).await.unwrap_err();
    assert!(
        matches!(&refused, kube::Error::Service(e) if e.downcast_ref::<FenceError>().is_some()),
        "{refused:?}"
    );
    assert_eq!(writes_sent(&cluster), sent, "a withheld write was sent");
    maps.list(&ListParams::default()).await.unwrap();

    // Leading: the elector keeps it open.
    let (_stop_tx, stop_rx) = watch::channel(false);
    let (tx, mut rx) = watch::channel(false);
    let elector = LeaderElector::new(client.clone(), settings("a")).fencing(fence.clone());
    let run = tokio::spawn(elector.run(tx, stop_rx));
    tokio::time::timeout(WAIT, rx.wait_for(|l| *l))
        .await
        .expect("leads")
        .unwrap();
    maps.create(&pp, &config_map("leading")).await.unwrap();

    // The elector stops ticking without stepping down (what a paused process looks like from
    // inside): the fence closes on its own once the renew deadline (1 s) has passed.
    run.abort();
    kinfer_testkit::wait::holds("the renew deadline passes", WAIT, || !fence.allows_writes()).await;
    let sent = writes_sent(&cluster);
    let refused = maps.create(&pp, &config_map("late")).await.unwrap_err();
    assert!(
        refused.to_string().contains("leadership has lapsed"),
        "{refused}"
    );
    assert_eq!(
        writes_sent(&cluster),
        sent,
        "a write left after the deadline"
    );
    assert!(maps.get_opt("late").await.unwrap().is_none());

    // Without leader election the fence is always open.
    let open: Api<ConfigMap> = Api::namespaced(WriteFence::open().client(&client), "default");
    open.create(&pp, &config_map("no-election")).await.unwrap();
}

#[tokio::test]
async fn a_slow_renewal_does_not_stretch_leadership_past_the_renew_deadline() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let settings = LeaseSettings {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(100),
        ..LeaseSettings::new(LEASE, "default", "a")
    };
    let (_stop_tx, stop_rx) = watch::channel(false);
    let (tx, mut rx) = watch::channel(false);
    let run = tokio::spawn(LeaderElector::new(client, settings).run(tx, stop_rx));
    tokio::time::timeout(WAIT, rx.wait_for(|l| *l))
        .await
        .expect("leads")
        .unwrap();

    // Every renewal now takes 1.8 s and succeeds: the next attempt has 0.2 s left of the
    // deadline counted from the start of the slow one, so the leader steps down about 2 s
    // after that start, before a candidate could take over (3 s). Counting from the end of
    // the slow renewal instead would keep it leading for about 3.8 s.
    let slowed = std::time::Instant::now();
    cluster.faults().inject(Fault::latency(
        "update",
        "leases",
        Duration::from_millis(1800),
    ));
    let result = tokio::time::timeout(WAIT, run)
        .await
        .expect("steps down")
        .unwrap();
    let led_for = slowed.elapsed();
    assert!(matches!(result, Err(LeaderError::LostLeadership { .. })));
    assert!(!*rx.borrow());
    assert!(
        led_for < Duration::from_secs(3),
        "led {led_for:?} after renewals slowed down, past the lease duration"
    );
}

/// A controller stand-in: reports that it started, then runs until told to stop, and reports
/// that it saw the stop.
fn controller(
    started: oneshot::Sender<()>,
    stopped: oneshot::Sender<()>,
) -> impl FnOnce(watch::Receiver<bool>) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
    move |mut stop| {
        Box::pin(async move {
            let _ = started.send(());
            let _ = stop.wait_for(|s| *s).await;
            let _ = stopped.send(());
        })
    }
}

#[tokio::test]
async fn the_controller_runs_only_while_leading_and_hands_over_on_shutdown() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");

    let (a_started_tx, a_started) = oneshot::channel();
    let (a_stopped_tx, mut a_stopped) = oneshot::channel();
    let (a_term, a_shutdown) = oneshot::channel::<()>();
    let a = tokio::spawn(run_with_leader_election(
        Some(LeaderElector::new(client.clone(), settings("a"))),
        async move {
            let _ = a_shutdown.await;
        },
        controller(a_started_tx, a_stopped_tx),
    ));
    tokio::time::timeout(WAIT, a_started)
        .await
        .expect("a's controller starts")
        .unwrap();

    let (b_started_tx, mut b_started) = oneshot::channel();
    let (b_stopped_tx, _b_stopped) = oneshot::channel();
    let (_b_term, b_shutdown) = oneshot::channel::<()>();
    let b = tokio::spawn(run_with_leader_election(
        Some(LeaderElector::new(client.clone(), settings("b"))),
        async move {
            let _ = b_shutdown.await;
        },
        controller(b_started_tx, b_stopped_tx),
    ));
    // b's controller does not start while a leads (longer than a lease duration).
    assert!(
        tokio::time::timeout(Duration::from_millis(2500), &mut b_started)
            .await
            .is_err(),
        "b's controller must not run while a leads"
    );
    assert!(a_stopped.try_recv().is_err(), "a's controller still runs");

    // SIGTERM for a: its controller is stopped, the Lease released, and b takes over at once
    // (well within a lease duration of b's clock, which a release makes unnecessary).
    a_term.send(()).unwrap();
    tokio::time::timeout(WAIT, a)
        .await
        .expect("a ends")
        .unwrap()
        .unwrap();
    a_stopped.await.expect("a's controller was told to stop");
    tokio::time::timeout(WAIT, b_started)
        .await
        .expect("b's controller starts")
        .unwrap();
    assert_eq!(holder(&leases).await.as_deref(), Some("b"));
    b.abort();
}

/// Losing the Lease cancels the controllers' work at once, even work that would never finish
/// on its own (a successor may lead from the renew deadline on), and reports the loss.
#[tokio::test]
async fn losing_the_lease_cancels_the_controller_at_once_and_reports_it() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let (started_tx, started) = oneshot::channel::<()>();
    let (dropped_tx, dropped) = oneshot::channel::<()>();
    let run = tokio::spawn(run_with_leader_election(
        Some(LeaderElector::new(client, settings("a"))),
        std::future::pending(),
        move |_stop| async move {
            // Held until the future is dropped: its channel then closes without a message.
            let _dropped = dropped_tx;
            let _ = started_tx.send(());
            // In-flight work that ignores `stop` and never ends.
            std::future::pending::<()>().await;
        },
    ));
    tokio::time::timeout(WAIT, started)
        .await
        .expect("controller starts")
        .unwrap();
    cluster
        .faults()
        .inject(Fault::status("update", "leases", 500));
    let err = tokio::time::timeout(WAIT, run)
        .await
        .expect("ends in time, without waiting for the work")
        .unwrap()
        .unwrap_err();
    assert!(err.is_lost_leadership(), "{err}");
    assert!(
        dropped.await.is_err(),
        "the controller future was dropped, not drained"
    );
}

#[tokio::test]
async fn without_election_the_controller_runs_until_shutdown() {
    let (started_tx, started) = oneshot::channel();
    let (stopped_tx, stopped) = oneshot::channel();
    let (term, shutdown) = oneshot::channel::<()>();
    let run = tokio::spawn(run_with_leader_election(
        None,
        async move {
            let _ = shutdown.await;
        },
        controller(started_tx, stopped_tx),
    ));
    started.await.unwrap();
    term.send(()).unwrap();
    run.await.unwrap().unwrap();
    stopped.await.expect("the controller was told to stop");
}

#[tokio::test]
async fn shutdown_before_leading_ends_the_campaign() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    // Someone else holds a fresh Lease, so this candidate cannot lead.
    let (_hold_stop, hold_stop_rx) = watch::channel(false);
    let (hold_tx, mut hold_rx) = watch::channel(false);
    let _holder = tokio::spawn(
        LeaderElector::new(client.clone(), settings("other")).run(hold_tx, hold_stop_rx),
    );
    hold_rx.wait_for(|l| *l).await.unwrap();

    let (started_tx, mut started) = oneshot::channel();
    let (stopped_tx, _stopped) = oneshot::channel();
    let result = run_with_leader_election(
        Some(LeaderElector::new(client, settings("late"))),
        std::future::ready(()),
        controller(started_tx, stopped_tx),
    )
    .await;
    result.unwrap();
    assert!(started.try_recv().is_err(), "the controller never ran");
}

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    (status, response)
}

/// `/healthz` fails while work is queued and no reconcile starts or finishes for the limit, and
/// recovers with the next reconcile; an idle process is healthy however long it idles.
#[tokio::test]
async fn healthz_fails_when_queued_work_sees_no_reconcile() {
    let metrics = kinfer_state::metrics::Metrics::new();
    let endpoints = Endpoints::new(metrics.clone()).with_wedged_after(Duration::ZERO);
    let (_stop_tx, stop_rx) = watch::channel(false);
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let addr = server::spawn(&[(any, Role::Health)], &endpoints, &stop_rx)
        .await
        .unwrap()[0];
    // Nothing queued: healthy, even with a zero limit.
    assert_eq!(get(addr, "/healthz").await.0, 200);
    // One object queued, no reconcile since: wedged.
    let queued = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(1));
    let depth = std::sync::Arc::clone(&queued);
    metrics.queue_depth("toy", move || {
        Some(depth.load(std::sync::atomic::Ordering::Relaxed))
    });
    let (status, body) = get(addr, "/healthz").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("wedged"), "{body}");
    // With a limit not reached yet, a reconcile just started: healthy.
    let patient = Endpoints::new(metrics.clone()).with_wedged_after(Duration::from_mins(10));
    let addr = server::spawn(&[(any, Role::Health)], &patient, &stop_rx)
        .await
        .unwrap()[0];
    metrics.controller("toy").started();
    assert_eq!(get(addr, "/healthz").await.0, 200);
    // The queue drained: healthy again under the zero limit too.
    queued.store(0, std::sync::atomic::Ordering::Relaxed);
    let zero = Endpoints::new(metrics.clone()).with_wedged_after(Duration::ZERO);
    let addr = server::spawn(&[(any, Role::Health)], &zero, &stop_rx)
        .await
        .unwrap()[0];
    assert_eq!(get(addr, "/healthz").await.0, 200);
}

/// The health listener serves the probes only, a plain metrics listener `/metrics` only.
#[tokio::test]
async fn each_listener_serves_its_own_endpoints() {
    let endpoints = Endpoints::default();
    let (stop_tx, stop_rx) = watch::channel(false);
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let addrs = server::spawn(
        &[(any, Role::Health), (any, Role::PlainMetrics)],
        &endpoints,
        &stop_rx,
    )
    .await
    .unwrap();
    let (health, metrics) = (addrs[0], addrs[1]);
    assert_eq!(get(health, "/healthz").await.0, 200);
    assert_eq!(get(health, "/readyz").await.0, 503);
    endpoints.set_ready();
    assert_eq!(get(health, "/readyz").await.0, 200);
    assert_eq!(get(health, "/metrics").await.0, 404);
    let (status, body) = get(metrics, "/metrics").await;
    assert_eq!(status, 200);
    assert!(body.contains("application/openmetrics-text"), "{body}");
    assert!(body.contains("# EOF"), "{body}");
    for path in ["/healthz", "/readyz", "/other"] {
        assert_eq!(get(metrics, path).await.0, 404, "{path}");
    }
    stop_tx.send_replace(true);

    // A taken address fails before anything is served.
    let busy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = server::spawn(
        &[(busy.local_addr().unwrap(), Role::Health)],
        &endpoints,
        &watch::channel(false).1,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("bind"), "{err}");
}

/// Plain-HTTP metrics only on a loopback address; metrics and probes on two addresses.
#[tokio::test]
async fn the_listener_flags_refuse_open_plain_metrics_and_one_shared_address() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let mut common = leader_args(None);
    common.metrics_secure = false;
    common.metrics_addr = "0.0.0.0:8080".parse().unwrap();
    let err = server::listeners(&common, &client).unwrap_err().to_string();
    assert!(err.contains("loopback"), "{err}");
    common.metrics_addr = "127.0.0.1:8080".parse().unwrap();
    let roles = server::listeners(&common, &client).unwrap();
    assert!(matches!(roles[1], (_, Role::PlainMetrics)));
    common.health_addr = common.metrics_addr;
    let err = server::listeners(&common, &client).unwrap_err().to_string();
    assert!(err.contains("both"), "{err}");
    common.metrics_secure = true;
    common.health_addr = "127.0.0.1:0".parse().unwrap();
    let roles = server::listeners(&common, &client).unwrap();
    assert!(matches!(roles[1], (_, Role::SecureMetrics { .. })));
}

#[tokio::test]
async fn crd_checks_report_every_missing_crd_with_the_hint() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    assert!(
        !crds::installed(&client, "widgets.example.com")
            .await
            .unwrap()
    );
    let err = crds::require(
        &client,
        &["widgets.example.com", "gadgets.example.com"],
        "`kubectl apply -k deploy/crds`",
    )
    .await
    .unwrap_err();
    match &err {
        CrdError::Missing { names, .. } => {
            assert_eq!(names, &["widgets.example.com", "gadgets.example.com"]);
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("kubectl apply -k deploy/crds"));
    crds::require(&client, &[], "none").await.unwrap();

    cluster
        .faults()
        .inject(Fault::status("get", "customresourcedefinitions", 500));
    let err = crds::installed(&client, "widgets.example.com")
        .await
        .unwrap_err();
    assert!(matches!(err, CrdError::Read { .. }), "{err}");
}

fn widget_crd(plural: &str) -> CustomResourceDefinition {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": plural, "singular": "widget"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn the_crd_watch_reports_installs_and_removals_of_watched_crds() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    cluster.install_crds(&[widget_crd("gadgets")]).unwrap();
    let (stop_tx, stop_rx) = watch::channel(false);
    let names = ["widgets.example.com", "gadgets.example.com"];
    let crds = CrdWatch::start(&client, &names, stop_rx).await.unwrap();
    assert_eq!(
        crds.current(),
        InstalledCrds::from_names(["gadgets.example.com"])
    );
    let mut changes = crds.subscribe();

    cluster.install_crds(&[widget_crd("widgets")]).unwrap();
    tokio::time::timeout(
        WAIT,
        changes.wait_for(|c| c.contains("widgets.example.com")),
    )
    .await
    .expect("install noticed")
    .unwrap();
    assert!(crds.current().contains_all(&names));

    Api::<CustomResourceDefinition>::all(client.clone())
        .delete("gadgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::timeout(
        WAIT,
        changes.wait_for(|c| !c.contains("gadgets.example.com")),
    )
    .await
    .expect("removal noticed")
    .unwrap();
    assert_eq!(
        crds.current(),
        InstalledCrds::from_names(["widgets.example.com"])
    );

    stop_tx.send_replace(true);
    tokio::time::timeout(WAIT, crds.stopped())
        .await
        .expect("the watch stops");
}

#[tokio::test]
async fn the_crd_watch_relists_after_a_watch_error_and_notices_a_missed_deletion() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    cluster
        .install_crds(&[widget_crd("gadgets"), widget_crd("widgets")])
        .unwrap();
    // Every watch of CRDs fails with 410 Gone: no watch event is ever delivered, so a change is
    // seen only through the watcher's re-list after the error.
    cluster
        .faults()
        .inject(Fault::watch_gone("customresourcedefinitions"));
    let (stop_tx, stop_rx) = watch::channel(false);
    let names = ["widgets.example.com", "gadgets.example.com"];
    let crds = CrdWatch::start(&client, &names, stop_rx).await.unwrap();
    assert!(crds.current().contains_all(&names));
    let mut changes = crds.subscribe();
    Api::<CustomResourceDefinition>::all(client.clone())
        .delete("gadgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::timeout(
        WAIT,
        changes.wait_for(|c| !c.contains("gadgets.example.com")),
    )
    .await
    .expect("deletion noticed by a re-list")
    .unwrap();
    assert_eq!(
        crds.current(),
        InstalledCrds::from_names(["widgets.example.com"])
    );
    assert!(
        cluster.faults().fired() > 0,
        "the watch error path was taken"
    );
    stop_tx.send_replace(true);
    tokio::time::timeout(WAIT, crds.stopped())
        .await
        .expect("the watch stops");
}

#[tokio::test]
async fn the_crd_watch_fails_to_start_when_crds_cannot_be_listed() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    cluster
        .faults()
        .inject(Fault::status("list", "customresourcedefinitions", 500));
    let err = CrdWatch::start(&client, &["widgets.example.com"], watch::channel(false).1)
        .await
        .unwrap_err();
    assert!(matches!(err, CrdError::List { .. }), "{err}");
}

/// Flags of a leader-electing operator on loopback with any port, the Lease in `namespace`.
fn leader_args(namespace: Option<&str>) -> CommonArgs {
    CommonArgs {
        metrics_addr: "127.0.0.1:0".parse().unwrap(),
        metrics_secure: false,
        metrics_cert_dir: None,
        health_addr: "127.0.0.1:0".parse().unwrap(),
        leader_elect: true,
        leader_election_id: None,
        leader_election_namespace: namespace.map(str::to_owned),
        leader_election_identity: Some("op-0".into()),
        lease_duration: std::time::Duration::from_secs(15),
        renew_deadline: std::time::Duration::from_secs(10),
        retry_period: std::time::Duration::from_secs(2),
        watch_namespaces: Vec::new(),
        log_format: kinfer_operator::LogFormat::Text,
        concurrency: 1,
        debounce_ms: 0,
        wedged_after: kinfer_operator::server::WEDGED_AFTER,
    }
}

#[tokio::test]
async fn a_process_is_ready_after_its_checks_leads_and_stops_everything_after() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let common = leader_args(Some("default"));
    let process = Process::start(&common, &client).await.unwrap();
    let addr = process.addrs()[0];
    assert_eq!(get(addr, "/healthz").await.0, 200);
    assert_eq!(
        get(addr, "/readyz").await.0,
        503,
        "not ready during start-up checks"
    );
    let mut stopping = process.stopping();

    let (term, shutdown) = oneshot::channel::<()>();
    let (running_tx, running_rx) = oneshot::channel::<()>();
    let lead = tokio::spawn(async move {
        process
            .lead(
                &common,
                &client,
                LEASE,
                async move {
                    let _ = shutdown.await;
                },
                |_client, mut stop| async move {
                    running_tx.send(()).unwrap();
                    let _ = stop.wait_for(|s| *s).await;
                },
            )
            .await
    });
    tokio::time::timeout(WAIT, running_rx)
        .await
        .expect("controllers run")
        .unwrap();
    assert_eq!(get(addr, "/readyz").await.0, 200);
    assert!(!*stopping.borrow());
    let leases: Api<Lease> = Api::namespaced(cluster.client().unwrap(), "default");
    assert_eq!(holder(&leases).await.as_deref(), Some("op-0"));

    term.send(()).unwrap();
    tokio::time::timeout(WAIT, lead)
        .await
        .expect("stops")
        .unwrap()
        .expect("clean stop");
    tokio::time::timeout(WAIT, stopping.wait_for(|s| *s))
        .await
        .expect("background tasks told to stop")
        .unwrap();
    assert_eq!(holder(&leases).await, None, "the Lease is released");
}

#[tokio::test]
async fn a_process_with_incomplete_leader_flags_fails_before_running_anything() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let common = leader_args(None);
    let process = Process::start(&common, &client).await.unwrap();
    let stopping = process.stopping();
    let err = process
        .lead(
            &common,
            &client,
            LEASE,
            std::future::pending(),
            |_, _| async {
                panic!("the controllers must not run");
            },
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("POD_NAMESPACE"), "{err}");
    assert!(*stopping.borrow(), "the endpoints and tasks are stopped");
}
