//! End to end through the library entry point the binary calls (`zerfoo_operator::app::run`),
//! in-process against the simulated test cluster: flags parsed as `zerfoo-operator run` parses
//! them, leader election on, a service applied and Ready, then the termination signal: the
//! controllers stop, the Lease is released and `run` returns `Ok`.

use std::time::Duration;

use clap::Parser;
use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::coordination::v1::Lease;
use kinfer_api::zerfoo::ZerfooInferenceService;
use kinfer_testkit::TestCluster;
use kube::{Api, CustomResourceExt};
use tokio::sync::oneshot;
use zerfoo_operator::app::{LEASE_NAME, RunArgs, run};

use crate::common::{NS, WAIT, condition_status, valid_spec, wait_for};

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

fn args(extra: &[&str]) -> RunArgs {
    let base = [
        "run",
        "--metrics-addr",
        "127.0.0.1:0",
        "--health-addr",
        "127.0.0.1:0",
        "--watch-namespace",
        NS,
        "--log-format",
        "json",
    ];
    Cli::try_parse_from(base.iter().chain(extra))
        .expect("flags")
        .run
}

/// SIGTERM: controllers drain and `run` returns `Ok` in time.
async fn stop(
    term: oneshot::Sender<()>,
    operator: tokio::task::JoinHandle<Result<(), kinfer_operator::Error>>,
) {
    term.send(()).expect("operator listening");
    tokio::time::timeout(WAIT, operator)
        .await
        .expect("stops in time")
        .expect("task")
        .expect("clean stop");
}

/// The simulated cluster with the CRDs, and a client as the binary builds it.
async fn simulated() -> (TestCluster, kube::Client) {
    let cluster = TestCluster::start_simulated().await.expect("test cluster");
    cluster
        .install_crds(&[ZerfooInferenceService::crd(), HttpRoute::crd()])
        .expect("crds");
    let client =
        kinfer_operator::client::from_kubeconfig(cluster.kubeconfig().expect("kubeconfig"))
            .await
            .expect("client");
    (cluster, client)
}

#[tokio::test]
async fn run_leads_reconciles_to_ready_and_stops_on_termination() {
    let (_cluster, client) = simulated().await;
    let args = args(&[
        "--leader-elect",
        "--leader-election-namespace",
        NS,
        "--leader-election-identity",
        "zerfoo-operator-0",
        "--default-gateway",
        "infra/public",
    ]);
    assert_eq!(args.common.concurrency, 4);
    let (term, shutdown) = oneshot::channel::<()>();
    let operator = tokio::spawn(run(args, client.clone(), async move {
        let _ = shutdown.await;
    }));

    let services: Api<ZerfooInferenceService> = Api::namespaced(client.clone(), NS);
    let mut spec = valid_spec();
    spec.canary = Some(kinfer_api::zerfoo::CanarySpec {
        model_ref: "llama3-8b-q8".into(),
        weight: 20,
    });
    let mut zis = ZerfooInferenceService::new("e2e", spec);
    zis.metadata.namespace = Some(NS.into());
    services
        .create(&kube::api::PostParams::default(), &zis)
        .await
        .expect("create");
    wait_for(&services, "e2e", |z: Option<&ZerfooInferenceService>| {
        z.is_some_and(|z| condition_status(z, "Ready") == "True")
    })
    .await;
    let ready = services.get("e2e").await.expect("get");
    assert_eq!(condition_status(&ready, "RouteReady"), "True");
    let routes: Api<HttpRoute> = Api::namespaced(client.clone(), NS);
    let route = routes.get("e2e-route").await.expect("route");
    assert_eq!(crate::common::backends(&route).len(), 2);

    let leases: Api<Lease> = Api::namespaced(client.clone(), NS);
    let holder = |l: Lease| l.spec.and_then(|s| s.holder_identity);
    assert_eq!(
        holder(leases.get(LEASE_NAME).await.expect("lease")).as_deref(),
        Some("zerfoo-operator-0")
    );

    // SIGTERM: controllers drain, the Lease is released, run returns Ok.
    stop(term, operator).await;
    assert_eq!(holder(leases.get(LEASE_NAME).await.expect("lease")), None);
}

#[tokio::test]
async fn run_fails_fast_without_the_crd_and_with_incomplete_leader_flags() {
    let cluster = TestCluster::start().await.expect("test cluster");
    let client = cluster.client().expect("client");
    let err = run(args(&[]), client.clone(), std::future::pending())
        .await
        .expect_err("no CRD");
    assert!(
        err.to_string().contains("kubectl apply -k deploy/crds"),
        "{err}"
    );

    cluster
        .install_crds(&[ZerfooInferenceService::crd()])
        .expect("crds");
    let incomplete = args(&[
        "--leader-elect",
        "--leader-election-namespace",
        NS,
        "--leader-election-identity",
        "",
    ]);
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        run(incomplete, client, std::future::pending()),
    )
    .await
    .expect("fails at once")
    .expect_err("no identity");
    assert!(err.to_string().contains("POD_NAME"), "{err}");
}

#[tokio::test]
async fn routes_follow_the_gateway_api_crd_installed_and_removed_at_runtime() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use zerfoo_operator::controller::HTTPROUTE_CRD;

    let cluster = TestCluster::start_simulated().await.expect("test cluster");
    cluster
        .install_crds(&[ZerfooInferenceService::crd()])
        .expect("crds");
    let client =
        kinfer_operator::client::from_kubeconfig(cluster.kubeconfig().expect("kubeconfig"))
            .await
            .expect("client");
    let (term, shutdown) = oneshot::channel::<()>();
    let operator = tokio::spawn(run(
        args(&["--default-gateway", "infra/public"]),
        client.clone(),
        async move {
            let _ = shutdown.await;
        },
    ));
    let services: Api<ZerfooInferenceService> = Api::namespaced(client.clone(), NS);
    let mut zis = ZerfooInferenceService::new("gw", valid_spec());
    zis.metadata.namespace = Some(NS.into());
    services
        .create(&kube::api::PostParams::default(), &zis)
        .await
        .expect("create");

    // No Gateway API: the route component says why; everything else serves.
    let route_is = |status: &'static str| {
        move |z: Option<&ZerfooInferenceService>| {
            z.is_some_and(|z| {
                condition_status(z, "RouteReady") == status
                    && condition_status(z, "PrimaryReady") == "True"
            })
        }
    };
    wait_for(&services, "gw", route_is("False")).await;
    let missing = services.get("gw").await.expect("get");
    let cond = crate::common::condition(&missing, "RouteReady").unwrap();
    assert!(cond.message.contains("HTTPRoutes"), "{cond:?}");

    // Installed while the operator runs: the route appears, without a restart of the process.
    cluster
        .install_crds(&[HttpRoute::crd()])
        .expect("route crd");
    wait_for(&services, "gw", route_is("True")).await;
    let routes: Api<HttpRoute> = Api::namespaced(client.clone(), NS);
    assert!(routes.get("gw-route").await.is_ok());

    // Removed again: degraded with the same reason, the rest keeps serving.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete(HTTPROUTE_CRD, &kube::api::DeleteParams::default())
        .await
        .expect("delete crd");
    wait_for(&services, "gw", route_is("False")).await;

    stop(term, operator).await;
}

/// `GET path` on `127.0.0.1:port`: (status, body). Blocking I/O off the runtime, which serves
/// the request.
async fn http_get(port: u16, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    let response = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.write_all(request.as_bytes()).expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        response
    })
    .await
    .expect("request");
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The sum of the samples of metric `name` (every label set) in an OpenMetrics text.
fn sample_sum(text: &str, name: &str) -> Option<f64> {
    let values: Vec<f64> = text
        .lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// The metrics endpoint carries controller-runtime's names beside kinfer's, so dashboards and
/// alerts written for Go operators work: every name has a sample, and the counters moved with
/// a reconcile.
#[tokio::test]
async fn metrics_carry_the_controller_runtime_names_and_move() {
    let (_cluster, client) = simulated().await;
    // A free port for the metrics server (the flag takes an address, not a listener).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let metrics_addr = format!("127.0.0.1:{port}");
    let args = Cli::try_parse_from([
        "run",
        "--metrics-addr",
        metrics_addr.as_str(),
        "--metrics-secure=false",
        "--health-addr",
        "127.0.0.1:0",
        "--watch-namespace",
        NS,
        "--leader-elect",
        "--leader-election-namespace",
        NS,
        "--leader-election-identity",
        "zerfoo-operator-0",
    ])
    .expect("flags")
    .run;
    let (term, shutdown) = oneshot::channel::<()>();
    let operator = tokio::spawn(run(args, client.clone(), async move {
        let _ = shutdown.await;
    }));
    let services: Api<ZerfooInferenceService> = Api::namespaced(client.clone(), NS);
    let mut zis = ZerfooInferenceService::new("scraped", valid_spec());
    zis.metadata.namespace = Some(NS.into());
    services
        .create(&kube::api::PostParams::default(), &zis)
        .await
        .expect("create");
    wait_for(
        &services,
        "scraped",
        |z: Option<&ZerfooInferenceService>| {
            z.is_some_and(|z| condition_status(z, "Ready") == "True")
        },
    )
    .await;

    let (status, text) = http_get(port, "/metrics").await;
    assert_eq!(status, 200, "{text}");
    for name in [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_count",
        "controller_runtime_active_workers",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_count",
        "leader_election_master_status",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_start_time_seconds",
        "kinfer_reconciles_total",
    ] {
        assert!(
            sample_sum(&text, name).is_some(),
            "no {name} sample:\n{text}"
        );
    }
    let moved = |name: &str| sample_sum(&text, name).unwrap_or_default();
    assert!(moved("controller_runtime_reconcile_total") >= 1.0, "{text}");
    assert!(
        (moved("controller_runtime_reconcile_total") - moved("kinfer_reconciles_total")).abs()
            < 0.5,
        "one reconcile, two names"
    );
    assert!(moved("controller_runtime_reconcile_time_seconds_count") >= 1.0);
    assert!(moved("workqueue_adds_total") >= 1.0, "{text}");
    assert!(
        (moved("leader_election_master_status") - 1.0).abs() < 0.5,
        "leading"
    );
    assert!(moved("process_resident_memory_bytes") > 1e6, "{text}");
    assert!(moved("process_open_fds") >= 3.0);
    let start = moved("process_start_time_seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_secs_f64();
    assert!(
        start <= now + 1.0 && start > now - 3600.0,
        "start {start}, now {now}"
    );

    // Every metric the shipped alerts and dashboard query is exported.
    let monitoring =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/monitoring");
    for file in ["prometheus_rule.yaml", "grafana-dashboard.json"] {
        let queries = std::fs::read_to_string(monitoring.join(file)).expect("monitoring file");
        let used: std::collections::BTreeSet<&str> = queries
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .filter(|t| {
                [
                    "kinfer_",
                    "controller_runtime_",
                    "workqueue_",
                    "leader_election_",
                    "process_",
                ]
                .iter()
                .any(|p| t.starts_with(p))
            })
            .collect();
        assert!(used.len() >= 4, "{file}: {used:?}");
        for name in used {
            assert!(
                sample_sum(&text, name).is_some(),
                "{file} queries {name}, which the operator does not export"
            );
        }
    }

    stop(term, operator).await;
}
