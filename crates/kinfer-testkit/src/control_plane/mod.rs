//! A real Kubernetes control plane for tests and for `cargo xtask control-plane`: etcd,
//! kube-apiserver and kube-controller-manager from the pins in `tools/k8s/go.mod` (built by
//! `scripts/build-k8s.sh`, see [`binaries`]), on free loopback ports.
//!
//! What it runs, and why:
//! - **etcd** 3.6 (watch-list streaming needs it), one member, `--unsafe-no-fsync` (test data).
//! - **kube-apiserver** over TLS with a CA, serving and client certificates made in process
//!   ([`pki`]); `--authorization-mode=RBAC`; the default admission plugins (Pod Security
//!   among them) plus `OwnerReferencesPermissionEnforcement`, so an owner reference with
//!   `blockOwnerDeletion` needs the `*/finalizers` grant as on a hardened cluster; service
//!   account issuer and signing keys; an audit log of every request at the `Metadata` level
//!   ([`audit`]).
//! - **kube-controller-manager** as `system:kube-controller-manager`, each controller under
//!   its own service account, with the controllers a workload needs without kubelets
//!   ([`CONTROLLERS`]); no node lifecycle (no kubelet renews leases, so it would taint and
//!   evict everything).
//!
//! [`ControlPlane::start`] returns once `/readyz` answers and the controller manager has
//! created the `default` ServiceAccount; [`ControlPlane::shared`] starts one per process for
//! the tests of a test binary (a start costs seconds), each test then working in a namespace of
//! its own. Everything stops when the process ends, however it ends ([`process`]).
//!
//! May: build the binaries, start and stop processes, write a run directory under the system's
//! temporary directory, read the audit log. May not: install anything into the cluster beyond
//! what the control plane itself creates (tests install their own CRDs).

pub mod audit;
pub mod binaries;
pub mod pki;
pub mod process;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ServiceAccount;
use serde_json::json;

pub use audit::{AuditLog, Request};

use crate::Error;
use pki::Pki;
use process::{Processes, free_port};

/// The controllers kube-controller-manager runs: what Deployments, Jobs, StatefulSets,
/// Services, claims, namespaces, owner references and service accounts need to behave as on a
/// cluster, without kubelets. Not node lifecycle, node IPAM, routes, services of type
/// LoadBalancer, certificates or autoscaling (no metrics API).
pub const CONTROLLERS: &[&str] = &[
    "namespace-controller",
    "garbage-collector-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "clusterrole-aggregation-controller",
    "root-ca-certificate-publisher-controller",
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "job-controller",
    "cronjob-controller",
    "ttl-after-finished-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "endpointslice-mirroring-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "resourcequota-controller",
    "disruption-controller",
    "pod-garbage-collector-controller",
];

/// How long a start may take once the binaries exist.
const START_BOUND: Duration = Duration::from_mins(2);
/// How often a start checks readiness.
const POLL: Duration = Duration::from_millis(100);
/// The service-account issuer (and API audience) of the control plane.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// Options of [`ControlPlane::start`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Where the audit log goes; by default into the run directory (removed on stop).
    pub audit_log: Option<PathBuf>,
}

/// A running control plane. Stopped by [`ControlPlane::stop`], on drop, or when the process
/// ends.
#[derive(Debug)]
pub struct ControlPlane {
    dir: PathBuf,
    url: String,
    kubeconfig: PathBuf,
    audit: AuditLog,
    processes: Processes,
}

impl ControlPlane {
    /// The control plane of this process, started on the first call (building the binaries
    /// first if needed). A failed start is remembered: every later call fails with the same
    /// message. Blocking; call it from any thread or runtime.
    pub fn shared() -> Result<&'static ControlPlane, Error> {
        static SHARED: OnceLock<Result<ControlPlane, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| {
                // A runtime of its own, on a thread of its own: the caller may be inside a
                // test's runtime, and nothing of the control plane may depend on that one.
                std::thread::spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| e.to_string())?;
                    runtime
                        .block_on(ControlPlane::start(Options::default()))
                        .map_err(|e| e.to_string())
                })
                .join()
                .unwrap_or_else(|_| Err("starting the control plane panicked".to_owned()))
            })
            .as_ref()
            .map_err(|e| Error::ControlPlane(e.clone()))
    }

    /// [`ControlPlane::shared`] from async code: the blocking start runs off the caller's
    /// runtime.
    pub async fn shared_async() -> Result<&'static ControlPlane, Error> {
        tokio::task::spawn_blocking(Self::shared)
            .await
            .map_err(|e| Error::ControlPlane(e.to_string()))?
    }

    /// Starts a control plane and waits until it is ready.
    pub async fn start(options: Options) -> Result<Self, Error> {
        static N: AtomicU64 = AtomicU64::new(0);
        let bin = binaries::dir()?;
        let dir = std::env::temp_dir().join(format!(
            "kinfer-control-plane-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let processes = Processes::new(&dir)?;
        let audit_path = options
            .audit_log
            .clone()
            .unwrap_or_else(|| dir.join("audit.log"));
        let port = free_port()?;
        let url = format!("https://127.0.0.1:{port}");
        let pki = Pki::generate()?;
        let files = Files::write(&dir, &pki, &url)?;
        let plane = Self {
            dir: dir.clone(),
            url,
            kubeconfig: files.admin_kubeconfig.clone(),
            audit: AuditLog::new(&audit_path),
            processes,
        };
        let started = Instant::now();
        let etcd = plane.start_etcd(&bin)?;
        plane.processes.spawn(
            "kube-apiserver",
            &bin.join("kube-apiserver"),
            &apiserver_args(&files, &etcd, port, &audit_path),
        )?;
        let client = crate::client_from_kubeconfig(&plane.kubeconfig).await?;
        plane.wait_ready(&client, started).await?;
        plane.processes.spawn(
            "kube-controller-manager",
            &bin.join("kube-controller-manager"),
            &controller_manager_args(&files),
        )?;
        plane.wait_default_service_account(&client, started).await?;
        tracing::info!(
            url = %plane.url,
            seconds = started.elapsed().as_secs_f64(),
            "control plane ready"
        );
        Ok(plane)
    }

    fn start_etcd(&self, bin: &Path) -> Result<String, Error> {
        let client_port = free_port()?;
        let peer_port = free_port()?;
        let client_url = format!("http://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let args = [
            "--name=kinfer".to_owned(),
            format!("--data-dir={}", self.dir.join("etcd").display()),
            format!("--listen-client-urls={client_url}"),
            format!("--advertise-client-urls={client_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=kinfer={peer_url}"),
            "--unsafe-no-fsync=true".to_owned(),
            "--log-level=warn".to_owned(),
        ];
        self.processes.spawn("etcd", &bin.join("etcd"), &args)?;
        Ok(client_url)
    }

    async fn wait_ready(&self, client: &kube::Client, started: Instant) -> Result<(), Error> {
        loop {
            let request = hyper::http::Request::get("/readyz")
                .body(Vec::new())
                .map_err(|e| Error::ControlPlane(e.to_string()))?;
            let last = match client.request_text(request).await {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) => body,
                Err(e) => e.to_string(),
            };
            self.check_running(started, &format!("/readyz: {last}"))?;
            tokio::time::sleep(POLL).await;
        }
    }

    async fn wait_default_service_account(
        &self,
        client: &kube::Client,
        started: Instant,
    ) -> Result<(), Error> {
        let accounts: kube::Api<ServiceAccount> = kube::Api::namespaced(client.clone(), "default");
        loop {
            match accounts.get_opt("default").await {
                Ok(Some(_)) => return Ok(()),
                Ok(None) => {}
                Err(e) => tracing::debug!(error = %e, "reading the default ServiceAccount"),
            }
            self.check_running(
                started,
                "the controller manager has not created the default ServiceAccount",
            )?;
            tokio::time::sleep(POLL).await;
        }
    }

    /// Fails when a process has exited or the start has taken too long.
    fn check_running(&self, started: Instant, waiting_for: &str) -> Result<(), Error> {
        if let Some(exited) = self.processes.exited() {
            self.processes.stop();
            return Err(Error::ControlPlane(exited));
        }
        if started.elapsed() > START_BOUND {
            let tails = ["etcd", "kube-apiserver", "kube-controller-manager"]
                .iter()
                .map(|name| format!("--- {name}:\n{}", self.processes.log_tail(name)))
                .collect::<Vec<_>>()
                .join("\n");
            self.processes.stop();
            return Err(Error::ControlPlane(format!(
                "not ready within {START_BOUND:?}: {waiting_for}\n{tails}"
            )));
        }
        Ok(())
    }

    /// The API server's URL (`https://127.0.0.1:<port>`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The admin kubeconfig (`system:masters`).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A new admin client (bound to the caller's runtime).
    pub async fn client(&self) -> Result<kube::Client, Error> {
        crate::client_from_kubeconfig(&self.kubeconfig).await
    }

    /// The pids of etcd, kube-apiserver and kube-controller-manager.
    pub fn pids(&self) -> Vec<u32> {
        self.processes.pids()
    }

    /// The run directory (certificates, keys, kubeconfigs, logs, etcd's data), removed on stop.
    pub fn run_dir(&self) -> &Path {
        &self.dir
    }

    /// The audit log.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// `kubectl` of the same pin, with `--kubeconfig` set to the admin's.
    pub fn kubectl(&self) -> Result<std::process::Command, Error> {
        let mut command = std::process::Command::new(binaries::path("kubectl")?);
        command.arg(format!("--kubeconfig={}", self.kubeconfig.display()));
        Ok(command)
    }

    /// Copies the admin kubeconfig to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), Error> {
        std::fs::copy(&self.kubeconfig, path)?;
        Ok(())
    }

    /// Stops every process and removes the run directory; returns once they are gone.
    pub fn stop(&self) {
        self.processes.stop();
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The files of one start, in the run directory.
struct Files {
    ca: PathBuf,
    serving_cert: PathBuf,
    serving_key: PathBuf,
    sa_key: PathBuf,
    sa_public: PathBuf,
    audit_policy: PathBuf,
    admin_kubeconfig: PathBuf,
    controller_manager_kubeconfig: PathBuf,
}

impl Files {
    fn write(dir: &Path, pki: &Pki, url: &str) -> Result<Self, Error> {
        let put = |name: &str, text: &str| -> Result<PathBuf, Error> {
            let path = dir.join(name);
            std::fs::write(&path, text)?;
            Ok(path)
        };
        Ok(Self {
            ca: put("ca.crt", &pki.ca.cert)?,
            serving_cert: put("apiserver.crt", &pki.serving.cert)?,
            serving_key: put("apiserver.key", &pki.serving.key)?,
            sa_key: put("service-account.key", &pki.service_account_key)?,
            sa_public: put("service-account.pub", &pki.service_account_public)?,
            audit_policy: put("audit-policy.yaml", audit::POLICY)?,
            admin_kubeconfig: put(
                "admin.kubeconfig",
                &kubeconfig(url, pki, &pki.admin, "admin"),
            )?,
            controller_manager_kubeconfig: put(
                "controller-manager.kubeconfig",
                &kubeconfig(url, pki, &pki.controller_manager, "controller-manager"),
            )?,
        })
    }
}

/// A kubeconfig (JSON, which is YAML) for one client certificate.
fn kubeconfig(url: &str, pki: &Pki, user: &pki::Pair, name: &str) -> String {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": "kinfer", "cluster": {
            "server": url,
            "certificate-authority-data": b64(&pki.ca.cert),
        }}],
        "users": [{ "name": name, "user": {
            "client-certificate-data": b64(&user.cert),
            "client-key-data": b64(&user.key),
        }}],
        "contexts": [{ "name": "kinfer", "context": {
            "cluster": "kinfer", "user": name, "namespace": "default",
        }}],
        "current-context": "kinfer",
    });
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

fn apiserver_args(files: &Files, etcd: &str, port: u16, audit_log: &Path) -> Vec<String> {
    let p = |p: &Path| p.display().to_string();
    vec![
        format!("--etcd-servers={etcd}"),
        "--bind-address=127.0.0.1".to_owned(),
        "--advertise-address=127.0.0.1".to_owned(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", p(&files.serving_cert)),
        format!("--tls-private-key-file={}", p(&files.serving_key)),
        format!("--client-ca-file={}", p(&files.ca)),
        "--authorization-mode=RBAC".to_owned(),
        "--enable-admission-plugins=OwnerReferencesPermissionEnforcement".to_owned(),
        format!("--service-account-issuer={ISSUER}"),
        format!("--api-audiences={ISSUER}"),
        format!("--service-account-key-file={}", p(&files.sa_public)),
        format!("--service-account-signing-key-file={}", p(&files.sa_key)),
        "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
        // The `kubernetes` Service's endpoints would be 127.0.0.1, which Endpoints refuse.
        "--endpoint-reconciler-type=none".to_owned(),
        format!("--audit-policy-file={}", p(&files.audit_policy)),
        format!("--audit-log-path={}", audit_log.display()),
        "--audit-log-format=json".to_owned(),
        "--audit-log-mode=blocking".to_owned(),
        "--profiling=false".to_owned(),
    ]
}

fn controller_manager_args(files: &Files) -> Vec<String> {
    let p = |p: &Path| p.display().to_string();
    vec![
        format!("--kubeconfig={}", p(&files.controller_manager_kubeconfig)),
        "--use-service-account-credentials=true".to_owned(),
        format!("--controllers={}", CONTROLLERS.join(",")),
        format!("--service-account-private-key-file={}", p(&files.sa_key)),
        format!("--root-ca-file={}", p(&files.ca)),
        "--leader-elect=false".to_owned(),
        "--secure-port=0".to_owned(),
        "--kube-api-qps=200".to_owned(),
        "--kube-api-burst=400".to_owned(),
        "--cluster-name=kinfer".to_owned(),
    ]
}
