//! The shared operator plumbing against the in-process test cluster (kinfer-testkit): Lease
//! leader election with two candidates, the leading run of a controller future, the admin
//! server over real sockets, and the CRD checks. Bounded waits on watch channels, no sleeps.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kinfer_operator::leader::{LeaderElector, LeaderError, LeaseSettings};
use kinfer_operator::server::{self, Endpoints};
use kinfer_operator::{CrdError, crds, run_with_leader_election};
use kinfer_testkit::{Fault, TestCluster};
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

#[tokio::test]
async fn losing_the_lease_stops_the_controller_and_reports_it() {
    let cluster = TestCluster::start().await.unwrap();
    let client = client(&cluster).await;
    let (started_tx, started) = oneshot::channel();
    let (stopped_tx, stopped) = oneshot::channel();
    let run = tokio::spawn(run_with_leader_election(
        Some(LeaderElector::new(client, settings("a"))),
        std::future::pending(),
        controller(started_tx, stopped_tx),
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
        .expect("ends in time")
        .unwrap()
        .unwrap_err();
    assert!(err.is_lost_leadership(), "{err}");
    stopped.await.expect("the controller was told to stop");
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

#[tokio::test]
async fn the_admin_server_serves_metrics_and_probes_on_every_address() {
    let endpoints = Endpoints::default();
    let (stop_tx, stop_rx) = watch::channel(false);
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let addrs = server::spawn(&[any, any], &endpoints, &stop_rx)
        .await
        .unwrap();
    assert_eq!(addrs.len(), 2);
    for addr in &addrs {
        assert_eq!(get(*addr, "/healthz").await.0, 200);
        assert_eq!(get(*addr, "/readyz").await.0, 503);
    }
    endpoints.set_ready();
    for addr in &addrs {
        assert_eq!(get(*addr, "/readyz").await.0, 200);
        let (status, body) = get(*addr, "/metrics").await;
        assert_eq!(status, 200);
        assert!(body.contains("application/openmetrics-text"), "{body}");
        assert!(body.contains("# EOF"), "{body}");
        assert_eq!(get(*addr, "/other").await.0, 404);
    }
    stop_tx.send_replace(true);

    // A taken address fails before anything is served.
    let busy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let err = server::spawn(
        &[busy.local_addr().unwrap()],
        &endpoints,
        &watch::channel(false).1,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("bind"), "{err}");
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
        other @ CrdError::Read { .. } => panic!("{other}"),
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
