//! A real client nobody here wrote: Debian's `kubectl` against the test cluster served the way
//! `kinfer cluster` serves it ([`kinfer_testkit::serve_until`] with a kubeconfig file).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kinfer_testkit::{RunOptions, serve_until};

const TIMEOUT: Duration = Duration::from_mins(1);

/// Install kubectl through the project's script when missing.
fn ensure_kubectl() {
    let ok = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-test-deps.sh");
        let status = Command::new("bash")
            .arg(script)
            .arg("kubectl")
            .status()
            .expect("running install-test-deps.sh");
        assert!(status.success(), "install-test-deps.sh kubectl failed");
    }
}

struct Env {
    kubeconfig: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<Result<(), kinfer_testkit::Error>>>,
}

impl Env {
    async fn start(tag: &str) -> Self {
        tokio::task::spawn_blocking(ensure_kubectl).await.unwrap();
        let dir = std::env::temp_dir().join(format!("kinfer-kubectl-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        let opts = RunOptions {
            kubeconfig: Some(kubeconfig.clone()),
            ..RunOptions::default()
        };
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_until(opts, Some(ready_tx), async move {
            let _ = stop_rx.await;
        }));
        tokio::time::timeout(TIMEOUT, ready_rx)
            .await
            .unwrap()
            .unwrap();
        Self {
            kubeconfig,
            stop: Some(stop_tx),
            server: Some(server),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.kubeconfig.parent().unwrap())
            .args(args);
        c
    }

    /// Run kubectl with optional stdin; panic with its stderr on failure.
    async fn run(&self, args: &[&str], stdin: Option<&str>) -> String {
        let mut cmd = self.command(args);
        let stdin = stdin.map(str::to_owned);
        let args = args.join(" ");
        tokio::task::spawn_blocking(move || {
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = cmd.spawn().unwrap();
            let mut pipe = child.stdin.take().unwrap();
            if let Some(s) = stdin {
                pipe.write_all(s.as_bytes()).unwrap();
            }
            drop(pipe);
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "kubectl {args} failed:\n{}\n{stdout}",
                String::from_utf8_lossy(&out.stderr)
            );
            stdout
        })
        .await
        .unwrap()
    }

    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(h) = self.server.take() {
            tokio::time::timeout(TIMEOUT, h)
                .await
                .unwrap()
                .unwrap()
                .unwrap();
        }
    }
}

const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: default\ndata:\n  k: \"1\"\n";

const CRD: &str = r"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.test.kinfer.dev
spec:
  group: test.kinfer.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_client_side_apply_and_get_yaml() {
    let env = Env::start("csa").await;
    env.run(&["apply", "-f", "-"], Some(CONFIGMAP)).await;
    env.run(
        &["apply", "-f", "-"],
        Some(&CONFIGMAP.replace("\"1\"", "\"2\"")),
    )
    .await;
    let yaml = env
        .run(&["get", "configmap", "cfg", "-o", "yaml"], None)
        .await;
    assert!(yaml.contains("k: \"2\""), "{yaml}");
    assert!(
        yaml.contains("kubectl.kubernetes.io/last-applied-configuration"),
        "{yaml}"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_apply() {
    let env = Env::start("ssa").await;
    env.run(&["apply", "--server-side", "-f", "-"], Some(CONFIGMAP))
        .await;
    let yaml = env
        .run(
            &[
                "get",
                "configmap",
                "cfg",
                "-o",
                "yaml",
                "--show-managed-fields",
            ],
            None,
        )
        .await;
    assert!(yaml.contains("manager: kubectl"), "{yaml}");
    assert!(yaml.contains("operation: Apply"), "{yaml}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_watch_receives_an_update() {
    let env = Env::start("watch").await;
    env.run(&["apply", "-f", "-"], Some(CONFIGMAP)).await;
    let mut child = env
        .command(&[
            "get",
            "configmap",
            "cfg",
            "-w",
            "-o",
            "jsonpath={.data.k}{\"\\n\"}",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    assert_eq!(
        tokio::time::timeout(TIMEOUT, rx.recv())
            .await
            .unwrap()
            .as_deref(),
        Some("1")
    );
    env.run(
        &[
            "patch",
            "configmap",
            "cfg",
            "--type=merge",
            "-p",
            "{\"data\":{\"k\":\"2\"}}",
        ],
        None,
    )
    .await;
    assert_eq!(
        tokio::time::timeout(TIMEOUT, rx.recv())
            .await
            .unwrap()
            .as_deref(),
        Some("2")
    );
    child.kill().unwrap();
    let _ = child.wait();
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_a_crd_then_an_instance_and_deletes_with_cascade() {
    let env = Env::start("crd").await;
    env.run(&["create", "-f", "-"], Some(CRD)).await;
    env.run(
        &["create", "-f", "-"],
        Some(
            "apiVersion: test.kinfer.dev/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 3}\n",
        ),
    )
    .await;
    let owner_uid = env
        .run(
            &["get", "gadget", "g", "-o", "jsonpath={.metadata.uid}"],
            None,
        )
        .await;
    let child = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child\n  ownerReferences:\n  - {{apiVersion: test.kinfer.dev/v1, kind: Gadget, name: g, uid: {owner_uid}, blockOwnerDeletion: true}}\n"
    );
    env.run(&["create", "-f", "-"], Some(&child)).await;
    assert!(env.run(&["get", "gadgets"], None).await.contains('g'));
    env.run(
        &[
            "delete",
            "gadget",
            "g",
            "--cascade=foreground",
            "--wait=true",
            "--timeout=30s",
        ],
        None,
    )
    .await;
    let left = env.run(&["get", "configmaps", "-o", "name"], None).await;
    assert!(!left.contains("configmap/child"), "{left}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_kustomize_default_applies_the_whole_install() {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/default");
    if !deploy.join("kustomization.yaml").exists() {
        eprintln!("skipped: deploy/default has no kustomization.yaml yet");
        return;
    }
    let env = Env::start("kustomize").await;
    let rendered = env
        .run(&["kustomize", deploy.to_str().unwrap()], None)
        .await;
    let out = env.run(&["apply", "-f", "-"], Some(&rendered)).await;
    assert!(out.contains("created"), "{out}");
    let again = env.run(&["apply", "-f", "-"], Some(&rendered)).await;
    assert!(
        !again.contains("configured"),
        "a second apply changes nothing:\n{again}"
    );
    let crds = env.run(&["get", "crds", "-o", "name"], None).await;
    assert!(!crds.trim().is_empty());
    env.stop().await;
}
