//! Leader election with the real binary: two replicas of `zerfoo-operator run
//! --leader-elect` against the in-process test cluster, each with a kubeconfig impersonating
//! its own user, so the cluster counts every request by replica
//! ([`kinfer_testkit::Counters::by_client`]).
//!
//! Asserted: the replica holding the Lease reconciles a service to Ready while the other sends
//! no write at all (and does not even watch the children); after the leader is killed
//! (SIGKILL: no release of the Lease, the worst case), the other takes the Lease over within
//! 20 s of the kill (asserted on the Lease's holder) and then converges a service created
//! after the kill within 30 s of the takeover. The two bounds are separate on purpose: with
//! client-go's timings (15 s lease, 2 s retry) the takeover alone lands 14–18 s after the kill
//! (the follower sees the last renewal up to 2 s late and polls every 2 s), which would leave
//! a debug binary only ~2 s to start its controllers, list and reconcile under one shared
//! bound. Both times are printed. Every wait is a bounded poll of the cluster's state, never a
//! sleep standing in for a condition.
//!
//! A paused leader (SIGSTOP, as a frozen container or a stalled node would leave it) loses the
//! Lease to the other; the other is then paused too, a service is created, and the old leader
//! resumed: it wakes past its renew deadline with a service to reconcile and must send no write
//! at all (its writes are fenced by the Lease's deadline, `kinfer_operator::fence`) and exit
//! non-zero; the new leader, resumed, converges the service.
//!
//! The replicas are killed when the test ends (panic included, [`Replicas`]); a test process
//! that is itself SIGKILLed leaves them running until their parent's cluster goes away
//! (`PR_SET_PDEATHSIG` needs `unsafe` `pre_exec`, which the workspace forbids).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gateway_api::httproutes::HttpRoute;
use kinfer_api::zerfoo::ZerfooInferenceService;
use kinfer_testkit::TestCluster;
use kinfer_testkit::operator::controlled_by;
use kube::CustomResourceExt;
use serde_json::json;
use zerfoo_operator::app::LEASE_NAME as LEASE;

const NS: &str = "default";
const GROUP: &str = "zerfoo.feza.ai";
const PLURAL: &str = "zerfooinferenceservices";
const REPLICAS: [&str; 2] = ["replica-a", "replica-b"];

/// The operator replicas; killed when the test ends, however it ends.
struct Replicas(BTreeMap<&'static str, Child>);

impl Drop for Replicas {
    fn drop(&mut self) {
        for child in self.0.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A directory of `test`'s files (kubeconfigs, logs) under cargo's test scratch space.
fn work_dir(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("leader-election-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("work dir");
    dir
}

/// Starts `zerfoo-operator run --leader-elect` as `identity`, impersonating the user of the
/// same name; its output goes to `<dir>/<identity>.log`.
fn start_replica(cluster: &TestCluster, dir: &std::path::Path, identity: &str) -> Child {
    let kubeconfig = dir.join(format!("{identity}.kubeconfig"));
    std::fs::write(&kubeconfig, cluster.kubeconfig_yaml_as(identity)).expect("kubeconfig");
    let log = std::fs::File::create(dir.join(format!("{identity}.log"))).expect("log");
    Command::new(env!("CARGO_BIN_EXE_zerfoo-operator"))
        .args([
            "run",
            "--leader-elect",
            "--leader-election-namespace",
            NS,
            "--leader-election-identity",
            identity,
            "--metrics-addr",
            "127.0.0.1:0",
            "--health-addr",
            "127.0.0.1:0",
            "--watch-namespace",
            NS,
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("starting zerfoo-operator")
}

/// The Lease's holder, if any.
fn holder(cluster: &TestCluster) -> Option<String> {
    cluster
        .objects("coordination.k8s.io", "leases")
        .iter()
        .find(|l| l["metadata"]["name"] == LEASE && l["metadata"]["namespace"] == NS)
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
        .filter(|h| !h.is_empty())
}

fn create_service(cluster: &TestCluster, name: &str) {
    cluster
        .create_object(
            "zerfoo.feza.ai/v1",
            PLURAL,
            NS,
            json!({
                "apiVersion": "zerfoo.feza.ai/v1",
                "kind": "ZerfooInferenceService",
                "metadata": { "name": name, "namespace": NS },
                "spec": { "modelRef": "llama3-8b-q4", "replicas": 1,
                          "resources": { "cpu": "1", "memory": "2Gi" } }
            }),
        )
        .expect("create service");
}

/// `Ok` when `name` is Ready at its generation and its Deployment is controlled by it.
fn converged(cluster: &TestCluster, name: &str) -> Result<(), String> {
    let services = cluster.objects(GROUP, PLURAL);
    let s = services
        .iter()
        .find(|s| s["metadata"]["name"] == name)
        .ok_or_else(|| format!("{name} is gone"))?;
    let generation = s["metadata"]["generation"].as_i64();
    if s["status"]["observedGeneration"].as_i64() != generation || s["status"]["ready"] != true {
        return Err(format!("{name}: status {}", s["status"]));
    }
    let uid = s["metadata"]["uid"].as_str().unwrap_or_default();
    let deployment = format!("{name}-primary");
    let owned = cluster
        .objects("apps", "deployments")
        .iter()
        .any(|d| d["metadata"]["name"] == deployment.as_str() && controlled_by(d, uid));
    if owned {
        Ok(())
    } else {
        Err(format!(
            "{name}: no Deployment {deployment} controlled by it"
        ))
    }
}

/// Polls `cond` until it holds ([`kinfer_testkit::wait::until`]); panics with `what`, the
/// last complaint and the replicas' log paths once `timeout` has passed since `since`.
/// Returns the time from `since` to when it held.
async fn wait_until(
    what: &str,
    since: Instant,
    timeout: Duration,
    dir: &std::path::Path,
    cond: impl FnMut() -> Result<(), String>,
) -> Duration {
    let what = format!(
        "{what} ({timeout:?} from its start; logs in {})",
        dir.display()
    );
    kinfer_testkit::wait::until(&what, timeout.saturating_sub(since.elapsed()), cond).await;
    since.elapsed()
}

/// Requests of `client` other than those on the Lease and discovery, by (verb, resource).
fn requests_beyond_the_lease(cluster: &TestCluster, client: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for ((verb, resource, _), n) in cluster
        .counters()
        .by_client()
        .get(client)
        .into_iter()
        .flatten()
    {
        if resource != "leases" && verb != "discovery" {
            *out.entry(format!("{verb} {resource}")).or_default() += n;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_writes_and_a_killed_leader_is_replaced_within_20_s() {
    let cluster = TestCluster::start_simulated().await.expect("test cluster");
    cluster
        .install_crds(&[ZerfooInferenceService::crd(), HttpRoute::crd()])
        .expect("crds");
    let dir = work_dir("kill");
    let mut replicas = Replicas(
        REPLICAS
            .iter()
            .map(|id| (*id, start_replica(&cluster, &dir, id)))
            .collect(),
    );

    // One of them leads and reconciles a service to Ready.
    create_service(&cluster, "svc-a");
    let started = Instant::now();
    wait_until("a leader", started, Duration::from_mins(1), &dir, || {
        holder(&cluster)
            .map(|_| ())
            .ok_or_else(|| "no holder".to_owned())
    })
    .await;
    wait_until("svc-a Ready", started, Duration::from_mins(1), &dir, || {
        converged(&cluster, "svc-a")
    })
    .await;
    let leader = holder(&cluster).expect("holder");
    let follower = *REPLICAS
        .iter()
        .find(|r| **r != leader)
        .unwrap_or_else(|| panic!("the Lease is held by {leader}, no replica of ours"));
    let leader: &'static str = REPLICAS.iter().find(|r| **r == leader).expect("replica");
    // A few more renewals (one every 2 s) so the follower has campaigned while it waits.
    let lease_gets = |c: &TestCluster| {
        c.counters()
            .by_client()
            .get(follower)
            .and_then(|m| m.get(&("get".into(), "leases".into(), 200)).copied())
            .unwrap_or(0)
    };
    let before = lease_gets(&cluster);
    wait_until(
        "the follower reading the Lease twice more",
        Instant::now(),
        Duration::from_secs(20),
        &dir,
        || {
            if lease_gets(&cluster) >= before + 2 {
                Ok(())
            } else {
                Err("no further Lease read".to_owned())
            }
        },
    )
    .await;

    let counters = cluster.counters();
    assert!(
        counters.client_writes(leader) >= 5,
        "the leader {leader} wrote only {} times: it cannot have reconciled svc-a",
        counters.client_writes(leader)
    );
    assert_eq!(
        counters.client_writes(follower),
        0,
        "the follower {follower} wrote: {:?}",
        counters.by_client().get(follower)
    );
    let beyond = requests_beyond_the_lease(&cluster, follower);
    assert!(
        beyond
            .keys()
            .all(|k| k.ends_with("customresourcedefinitions")),
        "the follower {follower} touched more than the Lease and the CRDs: {beyond:?}"
    );

    // Kill the leader without letting it release the Lease; the other takes over and
    // converges a service it has never seen.
    let mut killed = replicas.0.remove(leader).expect("leader process");
    let kill = Instant::now();
    killed.kill().expect("kill the leader");
    killed.wait().expect("reap the leader");
    let writes_before = cluster.counters().client_writes(follower);
    create_service(&cluster, "svc-b");
    let takeover = wait_until(
        "the takeover",
        kill,
        Duration::from_secs(20),
        &dir,
        || match holder(&cluster) {
            Some(h) if h == follower => Ok(()),
            other => Err(format!("holder {other:?}")),
        },
    )
    .await;
    let took_over = Instant::now();
    let ready = wait_until(
        "svc-b Ready under the new leader",
        took_over,
        Duration::from_secs(30),
        &dir,
        || converged(&cluster, "svc-b"),
    )
    .await;
    eprintln!(
        "takeover {takeover:?} after the kill; svc-b Ready {ready:?} after the takeover \
         ({:?} after the kill)",
        kill.elapsed()
    );
    assert!(
        cluster.counters().client_writes(follower) > writes_before,
        "svc-b converged but the new leader {follower} wrote nothing"
    );
    converged(&cluster, "svc-a").expect("svc-a still Ready");
    let lease = cluster
        .objects("coordination.k8s.io", "leases")
        .into_iter()
        .find(|l| l["metadata"]["name"] == LEASE)
        .expect("lease");
    assert!(
        lease["spec"]["leaseTransitions"].as_i64() >= Some(1),
        "{lease}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `client` sent beyond the Lease, answered or not.
fn writes_beyond_the_lease(cluster: &TestCluster, client: &str) -> u64 {
    cluster
        .counters()
        .by_client()
        .get(client)
        .into_iter()
        .flatten()
        .filter(|((verb, resource, _), _)| resource != "leases" && kinfer_testkit::is_write(verb))
        .map(|(_, n)| n)
        .sum()
}

/// Sends SIGSTOP or SIGCONT (`signal`: `STOP`, `CONT`) to `child` with kill(1).
fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill(1)");
    assert!(status.success(), "kill -{signal} {}", child.id());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_wakes_past_its_deadline_writes_nothing_and_exits() {
    const PAUSED: [&str; 2] = ["pause-a", "pause-b"];
    let cluster = TestCluster::start_simulated().await.expect("test cluster");
    cluster
        .install_crds(&[ZerfooInferenceService::crd(), HttpRoute::crd()])
        .expect("crds");
    let dir = work_dir("pause");
    let mut replicas = Replicas(
        PAUSED
            .iter()
            .map(|id| (*id, start_replica(&cluster, &dir, id)))
            .collect(),
    );
    create_service(&cluster, "svc-a");
    let started = Instant::now();
    wait_until("svc-a Ready", started, Duration::from_mins(1), &dir, || {
        converged(&cluster, "svc-a")
    })
    .await;
    let leader = holder(&cluster).expect("holder");
    let leader: &'static str = PAUSED
        .iter()
        .find(|r| **r == leader)
        .unwrap_or_else(|| panic!("the Lease is held by {leader}, no replica of ours"));
    let successor: &'static str = PAUSED.iter().find(|r| **r != leader).expect("other");

    // The leader freezes; the other takes the Lease once it has gone unrenewed for the lease
    // duration (15 s), well past the leader's renew deadline (10 s).
    signal(&replicas.0[leader], "STOP");
    let paused = Instant::now();
    wait_until(
        "the takeover",
        paused,
        Duration::from_secs(30),
        &dir,
        || match holder(&cluster) {
            Some(h) if h == successor => Ok(()),
            other => Err(format!("holder {other:?}")),
        },
    )
    .await;
    // The successor freezes too, so the old leader alone can act on what comes next.
    signal(&replicas.0[successor], "STOP");
    create_service(&cluster, "svc-c");
    let before = writes_beyond_the_lease(&cluster, leader);

    // The old leader wakes with svc-c to reconcile, after its deadline: it sends no write and
    // exits non-zero (a restarted process would campaign afresh).
    signal(&replicas.0[leader], "CONT");
    let woke = Instant::now();
    let mut exited = None;
    wait_until(
        "the old leader exits",
        woke,
        Duration::from_secs(30),
        &dir,
        || {
            let child = replicas.0.get_mut(leader).expect("old leader");
            match child.try_wait().expect("try_wait") {
                Some(status) => {
                    exited = Some(status);
                    Ok(())
                }
                None => Err("still running".to_owned()),
            }
        },
    )
    .await;
    let status = exited.expect("exit status");
    assert!(!status.success(), "the old leader exited with {status}");
    assert_eq!(
        writes_beyond_the_lease(&cluster, leader),
        before,
        "the old leader wrote after its renew deadline: {:?}",
        cluster.counters().by_client().get(leader)
    );
    assert!(
        converged(&cluster, "svc-c").is_err(),
        "svc-c converged while the only running replica had lost the Lease"
    );

    // The new leader, resumed, converges it.
    signal(&replicas.0[successor], "CONT");
    wait_until(
        "svc-c Ready under the new leader",
        Instant::now(),
        Duration::from_secs(30),
        &dir,
        || converged(&cluster, "svc-c"),
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}
