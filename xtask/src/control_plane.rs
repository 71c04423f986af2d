//! `cargo xtask control-plane --kubeconfig PATH [--audit-log PATH]`: the real control plane the
//! tests run against (`kinfer_testkit::control_plane`), for a person or a check outside the
//! test suite. Builds the binaries first when needed (`scripts/build-k8s.sh`), starts etcd,
//! kube-apiserver and kube-controller-manager on free loopback ports, writes the admin
//! kubeconfig to PATH, prints a line `ready` once `/readyz` answers, and runs until SIGTERM or
//! SIGINT, then stops everything it started. This command line is a contract
//! (docs/development.md).

use std::path::PathBuf;

use anyhow::{Context, Result};
use kinfer_testkit::control_plane::{ControlPlane, Options};
use tokio::signal::unix::{SignalKind, signal};

pub fn run(kubeconfig: PathBuf, audit_log: Option<PathBuf>) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting a runtime")?;
    runtime.block_on(async move {
        let mut term = signal(SignalKind::terminate()).context("SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("SIGINT handler")?;
        let audit_log = audit_log.map(absolute).transpose()?;
        let plane = ControlPlane::start(Options { audit_log })
            .await
            .context("starting the control plane")?;
        plane
            .write_kubeconfig(&kubeconfig)
            .with_context(|| format!("writing {}", kubeconfig.display()))?;
        eprintln!(
            "xtask control-plane: {} (kubeconfig {}, audit log {})",
            plane.url(),
            kubeconfig.display(),
            plane.audit().path().display()
        );
        println!("ready");
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        eprintln!("xtask control-plane: stopping");
        plane.stop();
        Ok(())
    })
}

/// The API server writes the audit log relative to its own working directory: pass it whole.
fn absolute(path: PathBuf) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path);
    }
    Ok(std::env::current_dir()
        .context("the working directory")?
        .join(path))
}
