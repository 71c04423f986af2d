//! End to end through the library entry point the binary calls
//! (`modelservice_operator::app::run`), in-process against the simulated test cluster: flags
//! parsed as `modelservice-operator run` parses them, leader election on, a sample applied and
//! Ready, then the termination signal: the controllers stop, the Lease is released and `run`
//! returns `Ok`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use clap::Parser;
use common::{Harness, TIMEOUT, key, minimal};
use k8s_openapi::api::coordination::v1::Lease;
use kinfer_testkit::TestCluster;
use kube::Api;
use modelservice_operator::app::{LEASE_NAME, RunArgs, run};
use modelservice_operator::{OperatorConfig, OptionalCrds};
use tokio::sync::oneshot;

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
        "--log-format",
        "json",
    ];
    Cli::try_parse_from(base.iter().chain(extra))
        .expect("flags")
        .run
}

#[tokio::test]
async fn run_leads_reconciles_a_sample_to_ready_and_stops_on_termination() {
    let h = Harness::without_operator(&OperatorConfig::default(), OptionalCrds::all()).await;
    let args = args(&[
        "--leader-elect",
        "--leader-election-namespace",
        "default",
        "--leader-election-identity",
        "modelservice-operator-0",
        "--model-size-limit",
        "100Gi",
    ]);
    assert_eq!(args.common.concurrency, 4);
    assert_eq!(
        args.operator_config().unwrap().model_size_limit.as_deref(),
        Some("100Gi")
    );
    let (term, shutdown) = oneshot::channel::<()>();
    let operator = tokio::spawn(run(args, h.client.clone(), async move {
        let _ = shutdown.await;
    }));

    // The upstream sample when the shared reference data is present, else a minimal one.
    let sample = common::sample("model_v1alpha1").unwrap_or_else(|| minimal("sample", "default"));
    let (ns, name) = key(&sample);
    h.create(&sample).await;
    h.wait_ready(&ns, &name).await;
    let decode: k8s_openapi::api::apps::v1::Deployment =
        h.get(&ns, &format!("{name}-decode")).await.expect("decode");
    let volumes = decode.spec.unwrap().template.spec.unwrap().volumes.unwrap();
    let model = volumes.iter().find(|v| v.name == "model").unwrap();
    assert_eq!(
        model
            .empty_dir
            .as_ref()
            .unwrap()
            .size_limit
            .as_ref()
            .unwrap()
            .0,
        "100Gi",
        "the flag reaches the pods"
    );

    let leases: Api<Lease> = Api::namespaced(h.client.clone(), "default");
    let holder = |l: Lease| l.spec.and_then(|s| s.holder_identity);
    assert_eq!(
        holder(leases.get(LEASE_NAME).await.expect("lease")).as_deref(),
        Some("modelservice-operator-0")
    );

    // SIGTERM: controllers drain, the Lease is released, run returns Ok.
    term.send(()).expect("operator listening");
    tokio::time::timeout(TIMEOUT, operator)
        .await
        .expect("stops in time")
        .expect("task")
        .expect("clean stop");
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

    common::install(&cluster, OptionalCrds::default());
    let incomplete = args(&[
        "--leader-elect",
        "--leader-election-namespace",
        "default",
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

    let identity = |flags: &[&str]| args(flags).operator_config().unwrap().pod_identity;
    assert_eq!(
        identity(&[]).map(|i| i.run_as_user),
        Some(65532),
        "an explicit non-root user by default"
    );
    assert_eq!(
        identity(&["--pod-user", "1001"]).map(|i| (i.run_as_user, i.fs_group)),
        Some((1001, 1001))
    );
    assert_eq!(identity(&["--pod-user", "image"]), None);
    for root in ["0", "-1", "nobody"] {
        assert!(
            Cli::try_parse_from(["run", "--pod-user", root]).is_err(),
            "{root}"
        );
    }

    let bad = Cli::try_parse_from(["run", "--model-size-limit", "lots"]);
    assert!(
        bad.is_err(),
        "a size limit that is not a quantity is refused"
    );
}
