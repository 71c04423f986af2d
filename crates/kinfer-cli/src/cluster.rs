//! `kinfer cluster [--listen 127.0.0.1:PORT] [--kubeconfig PATH] [--crds DIR]... [--simulate]`
//!
//! Runs the in-process test cluster (kinfer-testkit) as a standalone API server until SIGTERM
//! or ctrl-c, and writes a kubeconfig for kubectl and the operator binaries. It has no
//! authentication, so it only ever listens on a loopback address.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

/// Arguments of `kinfer cluster`.
#[derive(clap::Args, Debug)]
pub struct ClusterArgs {
    /// Loopback address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "kinfer-cluster.kubeconfig")]
    pub kubeconfig: PathBuf,
    /// A directory (or file) of CRD manifests to install at start, e.g. `deploy/crds`.
    /// Repeatable.
    #[arg(long = "crds", value_name = "DIR")]
    pub crds: Vec<PathBuf>,
    /// Run the workload simulator: Deployments become available, Jobs run, routes are
    /// accepted.
    #[arg(long)]
    pub simulate: bool,
}

/// Serves until a termination signal.
pub fn run(args: ClusterArgs) -> Result<()> {
    if !args.listen.ip().is_loopback() {
        bail!(
            "--listen {}: the test cluster has no authentication and listens on loopback only",
            args.listen
        );
    }
    let options = kinfer_testkit::RunOptions {
        listen: args.listen,
        kubeconfig: Some(args.kubeconfig.clone()),
        crds: args.crds,
        simulate: args.simulate,
    };
    let kubeconfig = args.kubeconfig.display().to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let (ready, url) = tokio::sync::oneshot::channel();
        let announce = tokio::spawn(async move {
            if let Ok(url) = url.await {
                // The line scripts and tests wait for: the server answers from here on.
                eprintln!("kinfer cluster: serving {url}; export KUBECONFIG={kubeconfig}");
            }
        });
        let served = kinfer_testkit::run_cluster(options, Some(ready)).await;
        let _ = announce.await;
        served.context("test cluster")
    })
}
