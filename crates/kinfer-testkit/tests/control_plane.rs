//! The real control plane harness itself: TLS with client certificates, RBAC, the audit log,
//! the controller manager at work, and nothing left running when the test process is killed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kinfer_testkit::control_plane::ControlPlane;
use kube::api::{Api, PostParams};
use serde_json::json;

async fn plane() -> &'static ControlPlane {
    ControlPlane::shared_async().await.unwrap()
}

async fn create_namespace(client: &kube::Client, name: &str) {
    let nss: Api<Namespace> = Api::all(client.clone());
    let body = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    nss.create(&PostParams::default(), &body).await.unwrap();
}

#[tokio::test]
async fn serves_the_pinned_version_over_tls_to_the_admin() {
    let plane = plane().await;
    assert!(plane.url().starts_with("https://127.0.0.1:"));
    let client = plane.client().await.unwrap();
    let v = client.apiserver_version().await.unwrap();
    assert_eq!(v.git_version, "v1.34.4");
}

#[tokio::test]
async fn rbac_refuses_an_identity_without_grants() {
    let plane = plane().await;
    let mut config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(plane.kubeconfig()).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    config.auth_info.impersonate = Some("system:serviceaccount:default:nobody".to_owned());
    let nobody = kube::Client::try_from(config).unwrap();
    let err = Api::<ConfigMap>::namespaced(nobody, "default")
        .list(&kube::api::ListParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 403),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_audit_log_counts_requests_per_user_verb_and_resource() {
    let plane = plane().await;
    let client = plane.client().await.unwrap();
    let ns = "audit-count";
    create_namespace(&client, ns).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, ns);
    for name in ["a", "b", "c"] {
        let body = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        cms.create(&PostParams::default(), &body).await.unwrap();
    }
    // The log is written before the answer (blocking mode): no waiting.
    let creates = plane
        .audit()
        .requests()
        .unwrap()
        .into_iter()
        .filter(|r| {
            r.user == "kinfer-admin"
                && r.verb == "create"
                && r.resource == "configmaps"
                && r.namespace == ns
        })
        .count();
    assert_eq!(creates, 3);
}

#[tokio::test]
async fn the_controller_manager_runs_the_service_account_and_root_ca_controllers() {
    let plane = plane().await;
    let client = plane.client().await.unwrap();
    let ns = "controllers-at-work";
    create_namespace(&client, ns).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let cms: Api<ConfigMap> = Api::namespaced(client, ns);
    tokio::time::timeout(Duration::from_secs(30), async {
        kube::runtime::wait::await_condition(accounts, "default", |o: Option<&ServiceAccount>| {
            o.is_some()
        })
        .await
        .unwrap();
        kube::runtime::wait::await_condition(cms, "kube-root-ca.crt", |o: Option<&ConfigMap>| {
            o.is_some()
        })
        .await
        .unwrap();
    })
    .await
    .expect("the namespace's default ServiceAccount and root CA ConfigMap");
}

/// Alive: neither gone nor a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.contains(") Z ") && !s.contains(") X "))
}

#[test]
#[ignore = "a helper process of a_killed_test_process_leaves_nothing_running"]
fn helper_holds_a_control_plane_until_killed() {
    if std::env::var_os("KINFER_HOLD_CONTROL_PLANE").is_none() {
        return;
    }
    let plane = ControlPlane::shared().unwrap();
    let pids: Vec<String> = plane.pids().iter().map(u32::to_string).collect();
    println!("READY {} {}", plane.run_dir().display(), pids.join(","));
    // Block until the parent kills this process (it never writes to standard input).
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

#[tokio::test]
async fn a_killed_test_process_leaves_nothing_running() {
    let mut helper = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "helper_holds_a_control_plane_until_killed",
            "--nocapture",
        ])
        .env("KINFER_HOLD_CONTROL_PLANE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = helper.stdout.take().unwrap();
    let ready = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find(|l| l.starts_with("READY "))
    })
    .await
    .unwrap()
    .expect("the helper started a control plane");
    let mut words = ready.split_whitespace().skip(1);
    let dir = std::path::PathBuf::from(words.next().unwrap());
    let pids: Vec<u32> = words
        .next()
        .unwrap()
        .split(',')
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(
        pids.len(),
        3,
        "etcd, kube-apiserver, kube-controller-manager"
    );
    assert!(pids.iter().all(|p| alive(*p)));
    assert!(dir.exists());
    helper.kill().unwrap(); // SIGKILL: no destructor, no exit handler runs
    helper.wait().unwrap();
    // The watchdog sends SIGTERM at once and SIGKILL after ten seconds.
    kinfer_testkit::wait::holds(
        "every process of the killed helper's control plane stopped, its directory removed",
        Duration::from_secs(30),
        || pids.iter().all(|p| !alive(*p)) && !dir.exists(),
    )
    .await;
}
