//! The public entry points: [`TestCluster`] for tests, [`test_client`] (the test cluster, or the
//! cluster named by `KINFER_TEST_KUBECONFIG`), and [`run_cluster`] for `kinfer cluster`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::control_plane::ControlPlane;
use crate::error::Error;
use crate::faults::{Counters, Fault};
use crate::simulator::Simulator;
use crate::state::{Options, State};
use crate::write::{self, WriteOpts};

/// An API server running in this process on loopback.
#[derive(Debug)]
pub struct TestCluster {
    state: Arc<State>,
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

/// Fault injection controls.
#[derive(Debug, Clone)]
pub struct FaultHandle {
    state: Arc<State>,
}

impl FaultHandle {
    /// Install a fault rule.
    pub fn inject(&self, fault: Fault) {
        self.state.faults.add(fault);
    }

    /// Remove every rule.
    pub fn clear(&self) {
        self.state.faults.clear();
    }

    /// Remove the rules for `verb` on `resource`, keeping the others
    /// ([`crate::faults::Faults::lift`]).
    pub fn lift(&self, verb: &str, resource: &str) {
        self.state.faults.lift(verb, resource);
    }

    /// End every open watch now (clients re-watch from their last version).
    pub fn cut_watches(&self) {
        self.state.watch_cut.send_modify(|n| *n += 1);
    }

    /// Forget the watch history: resuming from any earlier version answers 410 Gone.
    pub fn expire_history(&self) {
        self.state.store.txn().expire_history();
    }

    /// Restart the pseudo-random sequence deciding percentage rules ([`Fault::percent`]).
    pub fn seed(&self, seed: u64) {
        self.state.faults.seed(seed);
    }

    /// How many requests an injected rule applied to since the cluster started.
    pub fn fired(&self) -> u64 {
        self.state.faults.fired()
    }
}

impl TestCluster {
    /// Start with default options on a random loopback port.
    pub async fn start() -> Result<Self, Error> {
        Self::start_with(Options::default()).await
    }

    /// Start with the workload simulator on.
    pub async fn start_simulated() -> Result<Self, Error> {
        Self::start_with(Options {
            simulate: true,
            ..Options::default()
        })
        .await
    }

    /// Start with options on a random loopback port.
    pub async fn start_with(options: Options) -> Result<Self, Error> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), options).await
    }

    /// Start on a given address.
    pub async fn start_on(addr: SocketAddr, options: Options) -> Result<Self, Error> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let simulate = options.simulate;
        let state = State::new(options);
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            internal_create(
                &state,
                "",
                "v1",
                "namespaces",
                "",
                json!({ "metadata": { "name": ns } }),
            )?;
        }
        let (shutdown, rx) = watch::channel(false);
        let mut tasks = vec![
            tokio::spawn(crate::server::serve(Arc::clone(&state), listener, rx)),
            tokio::spawn(crate::gc::run(Arc::clone(&state))),
        ];
        if simulate {
            tasks.push(tokio::spawn(crate::simulator::run(Arc::clone(&state))));
        }
        tracing::info!(%addr, "test cluster listening");
        Ok(Self {
            state,
            addr,
            shutdown,
            tasks,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A client for this cluster.
    pub fn client(&self) -> Result<kube::Client, Error> {
        let uri: hyper::Uri = self
            .url()
            .parse()
            .map_err(|e: hyper::http::uri::InvalidUri| Error::Kubeconfig(e.to_string()))?;
        let mut config = kube::Config::new(uri);
        "default".clone_into(&mut config.default_namespace);
        Ok(kube::Client::try_from(config)?)
    }

    /// A kubeconfig for this cluster, as YAML.
    pub fn kubeconfig_yaml(&self) -> String {
        self.kubeconfig_yaml_with_user("{}")
    }

    /// A kubeconfig whose client impersonates `user` (`as: <user>`): the cluster counts its
    /// requests under that name ([`Counters::by_client`]), so several processes running one
    /// binary can be told apart. `user` is written as a YAML double-quoted string.
    pub fn kubeconfig_yaml_as(&self, user: &str) -> String {
        let quoted = serde_json::to_string(user).unwrap_or_else(|_| "\"\"".to_owned());
        self.kubeconfig_yaml_with_user(&format!("{{as: {quoted}}}"))
    }

    fn kubeconfig_yaml_with_user(&self, user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kinfer-testkit\n  cluster:\n    server: {}\ncontexts:\n- name: kinfer-testkit\n  context:\n    cluster: kinfer-testkit\n    user: kinfer-testkit\n    namespace: default\ncurrent-context: kinfer-testkit\nusers:\n- name: kinfer-testkit\n  user: {user}\npreferences: {{}}\n",
            self.url()
        )
    }

    /// A kubeconfig for this cluster.
    pub fn kubeconfig(&self) -> Result<kube::config::Kubeconfig, Error> {
        kube::config::Kubeconfig::from_yaml(&self.kubeconfig_yaml())
            .map_err(|e| Error::Kubeconfig(e.to_string()))
    }

    /// Create (or replace the spec of) CRDs; their kinds are served when this returns.
    pub fn install_crds(&self, crds: &[CustomResourceDefinition]) -> Result<(), Error> {
        for crd in crds {
            let v = serde_json::to_value(crd).map_err(|e| Error::Manifest {
                path: "crd".to_owned(),
                message: e.to_string(),
            })?;
            self.install_crd_value(v)?;
        }
        Ok(())
    }

    /// Create or update one CRD given as JSON.
    pub fn install_crd_value(&self, v: Value) -> Result<(), Error> {
        install_crd(&self.state, v)
    }

    /// Fault injection.
    pub fn faults(&self) -> FaultHandle {
        FaultHandle {
            state: Arc::clone(&self.state),
        }
    }

    /// Request counters.
    pub fn counters(&self) -> &Counters {
        &self.state.counters
    }

    /// Simulator settings (hold objects back, job outcomes, log hook).
    pub fn simulator(&self) -> &Simulator {
        &self.state.simulator
    }

    /// Hold back simulated progress of one object (`plural` such as `deployments`).
    pub fn hold(&self, plural: &str, namespace: &str, name: &str) {
        self.state.simulator.hold(plural, namespace, name, true);
    }

    /// Release a held object; the simulator catches up at once.
    pub fn release(&self, plural: &str, namespace: &str, name: &str) {
        self.state.simulator.hold(plural, namespace, name, false);
        let found: Vec<_> = {
            let txn = self.state.store.txn();
            txn.buckets()
                .filter(|(b, _)| b.1 == plural)
                .filter_map(|(b, m)| {
                    m.get(&(namespace.to_owned(), name.to_owned()))
                        .map(|o| (b.clone(), o.clone()))
                })
                .collect()
        };
        if self.state.options.simulate {
            for (b, o) in found {
                crate::simulator::workloads::reconcile(&self.state, &b, &o);
            }
        }
    }

    /// Every stored object of the resource `plural` in `group` (all namespaces), read in-process:
    /// no request is made nor counted, so a benchmark can poll without disturbing the counters
    /// it measures.
    pub fn objects(&self, group: &str, plural: &str) -> Vec<Arc<Value>> {
        let bucket = (group.to_owned(), plural.to_owned());
        self.state
            .store
            .txn()
            .range_arc(&bucket, None, None)
            .cloned()
            .collect()
    }

    /// Create an object in-process (field manager `kinfer-testkit`), with the same validation,
    /// defaults and watch events as a request, but not counted as one.
    pub fn create_object(
        &self,
        api_version: &str,
        plural: &str,
        namespace: &str,
        object: Value,
    ) -> Result<Value, Error> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        internal_create(&self.state, group, version, plural, namespace, object)
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.state.store.txn().current_rv()
    }

    /// Stop serving; open connections are closed.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let _ = self.shutdown.send(true);
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn internal_create(
    state: &State,
    group: &str,
    version: &str,
    plural: &str,
    ns: &str,
    v: Value,
) -> Result<Value, Error> {
    let def = state
        .registry()
        .get(group, version, plural)
        .cloned()
        .ok_or_else(|| Error::Kubeconfig(format!("no resource {plural}")))?;
    let opts = WriteOpts {
        field_manager: Some("kinfer-testkit".to_owned()),
        ..WriteOpts::default()
    };
    Ok(write::create(state, &def, ns, v, &opts)?)
}

fn install_crd(state: &State, mut v: Value) -> Result<(), Error> {
    let name = v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let group = "apiextensions.k8s.io";
    let def = state
        .registry()
        .get(group, "v1", "customresourcedefinitions")
        .cloned();
    let Some(def) = def else {
        return Err(Error::Kubeconfig("no CRD resource".to_owned()));
    };
    let opts = WriteOpts {
        field_manager: Some("kinfer-testkit".to_owned()),
        ..WriteOpts::default()
    };
    let existing = crate::read::get(state, &def, "", &name).ok();
    match existing {
        Some(old) => {
            v["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
            write::update(state, &def, "", &name, None, v, &opts)?;
        }
        None => {
            write::create(state, &def, "", v, &opts)?;
        }
    }
    Ok(())
}

/// Where a test's cluster comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The in-process cluster ([`TestCluster`]), a new one per test.
    Embedded,
    /// The real control plane of this process ([`ControlPlane::shared`]), built and started on
    /// first use; tests share it and isolate themselves in namespaces of their own.
    ControlPlane,
    /// The cluster of a kubeconfig file.
    Kubeconfig(PathBuf),
}

impl Source {
    /// `KINFER_TEST_KUBECONFIG=PATH` names a cluster, `KINFER_TEST_CLUSTER=control-plane` asks
    /// for the real control plane (`embedded`, or unset, for the in-process one).
    pub fn from_env() -> Result<Self, Error> {
        if let Some(path) = std::env::var_os("KINFER_TEST_KUBECONFIG") {
            return Ok(Self::Kubeconfig(PathBuf::from(path)));
        }
        match std::env::var("KINFER_TEST_CLUSTER").as_deref() {
            Err(_) | Ok("" | "embedded") => Ok(Self::Embedded),
            Ok("control-plane") => Ok(Self::ControlPlane),
            Ok(other) => Err(Error::Kubeconfig(format!(
                "KINFER_TEST_CLUSTER={other}: expected embedded or control-plane"
            ))),
        }
    }

    /// Whether tests share this cluster with others (so each works in a namespace of its own
    /// and names cluster-scoped objects uniquely).
    pub fn is_shared(&self) -> bool {
        !matches!(self, Self::Embedded)
    }
}

/// A cluster for a test, from a [`Source`].
pub struct TestEnv {
    client: kube::Client,
    cluster: Option<TestCluster>,
    kubeconfig: Option<PathBuf>,
    control_plane: Option<&'static ControlPlane>,
}

impl std::fmt::Debug for TestEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestEnv")
            .field("cluster", &self.cluster)
            .field("kubeconfig", &self.kubeconfig)
            .finish_non_exhaustive()
    }
}

impl TestEnv {
    /// The client.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The in-process cluster, when not running against an external one.
    pub fn cluster(&self) -> Option<&TestCluster> {
        self.cluster.as_ref()
    }

    /// The real control plane, when running on it (its audit log, its kubectl).
    pub fn control_plane(&self) -> Option<&'static ControlPlane> {
        self.control_plane
    }

    /// The kubeconfig of the external cluster (or the control plane), when running against one.
    pub fn kubeconfig_path(&self) -> Option<&std::path::Path> {
        self.kubeconfig.as_deref()
    }

    /// Another client for the same cluster whose default namespace is `namespace` (for tests
    /// that isolate themselves in a namespace of their own on a shared cluster).
    pub async fn client_in(&self, namespace: &str) -> Result<kube::Client, Error> {
        let mut config = match (&self.cluster, &self.kubeconfig) {
            (Some(c), _) => {
                let uri: hyper::Uri = c
                    .url()
                    .parse()
                    .map_err(|e: hyper::http::uri::InvalidUri| Error::Kubeconfig(e.to_string()))?;
                kube::Config::new(uri)
            }
            (None, Some(path)) => config_from_kubeconfig(path).await?,
            (None, None) => return Err(Error::Kubeconfig("no cluster".to_owned())),
        };
        namespace.clone_into(&mut config.default_namespace);
        Ok(kube::Client::try_from(config)?)
    }
}

/// The one helper every test takes its cluster from: the [`Source`] the environment names
/// ([`Source::from_env`]; the in-process cluster by default).
pub async fn test_client() -> Result<TestEnv, Error> {
    test_client_on(Source::from_env()?).await
}

/// A cluster from `source`.
pub async fn test_client_on(source: Source) -> Result<TestEnv, Error> {
    match source {
        Source::Kubeconfig(path) => {
            let client = client_from_kubeconfig(&path).await?;
            Ok(TestEnv {
                client,
                cluster: None,
                kubeconfig: Some(path),
                control_plane: None,
            })
        }
        Source::ControlPlane => {
            let plane = ControlPlane::shared_async().await?;
            Ok(TestEnv {
                client: plane.client().await?,
                cluster: None,
                kubeconfig: Some(plane.kubeconfig().to_owned()),
                control_plane: Some(plane),
            })
        }
        Source::Embedded => {
            let cluster = TestCluster::start().await?;
            Ok(TestEnv {
                client: cluster.client()?,
                cluster: Some(cluster),
                kubeconfig: None,
                control_plane: None,
            })
        }
    }
}

async fn config_from_kubeconfig(path: &std::path::Path) -> Result<kube::Config, Error> {
    let kc =
        kube::config::Kubeconfig::read_from(path).map_err(|e| Error::Kubeconfig(e.to_string()))?;
    kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| Error::Kubeconfig(e.to_string()))
}

/// A client for the current context of a kubeconfig file.
pub async fn client_from_kubeconfig(path: &std::path::Path) -> Result<kube::Client, Error> {
    Ok(kube::Client::try_from(config_from_kubeconfig(path).await?)?)
}

/// Options of `kinfer cluster`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Listen address (default 127.0.0.1:6443... any loopback port).
    pub listen: SocketAddr,
    /// Where to write the kubeconfig.
    pub kubeconfig: Option<PathBuf>,
    /// Directories (or files) of CRD YAML manifests to install at start.
    pub crds: Vec<PathBuf>,
    /// Run the workload simulator.
    pub simulate: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            kubeconfig: None,
            crds: Vec::new(),
            simulate: false,
        }
    }
}

/// The files named by `paths`, in order, each directory expanded recursively (entries in path
/// order) to its files that `keep` keeps. A directory that cannot be read is returned with its
/// error.
pub fn files_under(
    paths: &[PathBuf],
    keep: impl Fn(&std::path::Path) -> bool,
) -> Result<Vec<PathBuf>, (PathBuf, std::io::Error)> {
    fn walk(
        dir: &std::path::Path,
        keep: &dyn Fn(&std::path::Path) -> bool,
        out: &mut Vec<PathBuf>,
    ) -> Result<(), (PathBuf, std::io::Error)> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| (dir.to_path_buf(), e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            if entry.is_dir() {
                walk(&entry, keep, out)?;
            } else if keep(&entry) {
                out.push(entry);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &keep, &mut out)?;
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

/// Parse every CRD document in the YAML files of `paths` (directories are read recursively,
/// in path order; non-CRD documents such as a `kustomization.yaml` are skipped).
pub fn load_crds(paths: &[PathBuf]) -> Result<Vec<Value>, Error> {
    let files = files_under(paths, |f| {
        f.extension().is_some_and(|x| x == "yaml" || x == "yml")
    })
    .map_err(|(_, e)| e)?;
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| Error::Manifest {
            path: f.display().to_string(),
            message: e.to_string(),
        })?;
        out.extend(
            docs.into_iter()
                .filter(|d| d["kind"] == "CustomResourceDefinition"),
        );
    }
    Ok(out)
}

/// Run a cluster until SIGTERM or ctrl-c: install CRDs, write the kubeconfig, serve.
/// `ready` receives the URL once serving.
///
/// The signal handlers are installed before the server starts, so a signal sent as soon as
/// `ready` fires stops the cluster cleanly instead of killing the process.
pub async fn run_cluster(
    opts: RunOptions,
    ready: Option<tokio::sync::oneshot::Sender<String>>,
) -> Result<(), Error> {
    let signal = termination_signal()?;
    serve_until(opts, ready, signal).await
}

/// Like [`run_cluster`], stopping when `stop` completes; `ready` receives the URL once serving.
pub async fn serve_until(
    opts: RunOptions,
    ready: Option<tokio::sync::oneshot::Sender<String>>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    let crds = load_crds(&opts.crds)?;
    let cluster = TestCluster::start_on(
        opts.listen,
        Options {
            simulate: opts.simulate,
            ..Options::default()
        },
    )
    .await?;
    for c in crds {
        cluster.install_crd_value(c)?;
    }
    if let Some(path) = &opts.kubeconfig {
        tokio::fs::write(path, cluster.kubeconfig_yaml()).await?;
    }
    tracing::info!(url = %cluster.url(), "kinfer cluster serving");
    if let Some(r) = ready {
        let _ = r.send(cluster.url());
    }
    stop.await;
    cluster.shutdown();
    Ok(())
}

/// A future completing on SIGTERM or ctrl-c, with its handlers installed now.
#[cfg(unix)]
fn termination_signal() -> Result<impl std::future::Future<Output = ()>, Error> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}

/// A future completing on ctrl-c.
#[cfg(not(unix))]
fn termination_signal() -> Result<impl std::future::Future<Output = ()>, Error> {
    Ok(async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "waiting for ctrl-c failed; stopping");
        }
    })
}
