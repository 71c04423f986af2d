//! An operator binary as a child process: started with a kubeconfig for the harness' test
//! cluster, its probes and its metrics (plain HTTP: `--metrics-secure=false`) on free loopback
//! ports, waited on until `/readyz` answers,
//! scraped, and stopped with SIGTERM (then SIGKILL if it does not exit in time).
//!
//! Its logs go to a file next to the kubeconfig, so they cost the operator what they would in
//! production (formatting and writing) without flooding the harness' terminal.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::process::{Child, Command};

use crate::prom::{Scrape, http_get};
use crate::rss::{self, Rss};

/// How to start one operator.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The binary.
    pub binary: PathBuf,
    /// Arguments after `run` (the harness adds the endpoint addresses).
    pub args: Vec<String>,
    /// The kubeconfig of the test cluster.
    pub kubeconfig: PathBuf,
    /// Where stdout and stderr go (appended).
    pub log: PathBuf,
}

/// A running operator.
#[derive(Debug)]
pub struct Operator {
    child: Child,
    pid: u32,
    /// `/metrics`, plain HTTP on loopback (the probes' port is only waited on at start).
    metrics: SocketAddr,
}

/// A loopback address nobody listens on right now.
fn free_port() -> Result<SocketAddr> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?)
}

impl Operator {
    /// Starts the binary and waits (bounded by `timeout`) until `/readyz` answers 200.
    pub async fn start(launch: &Launch, timeout: Duration) -> Result<Self> {
        let (health, metrics) = (free_port()?, free_port()?);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&launch.log)
            .with_context(|| format!("opening {}", launch.log.display()))?;
        let mut cmd = Command::new(&launch.binary);
        cmd.arg("run")
            .arg("--metrics-addr")
            .arg(metrics.to_string())
            .arg("--metrics-secure=false")
            .arg("--health-addr")
            .arg(health.to_string())
            .args(&launch.args)
            .env("KUBECONFIG", &launch.kubeconfig)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", launch.binary.display()))?;
        let pid = child.id().context("the operator exited at once")?;
        let mut op = Self {
            child,
            pid,
            metrics,
        };
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = op.child.try_wait()? {
                bail!(
                    "{} exited with {status} before it was ready; see {}",
                    launch.binary.display(),
                    launch.log.display()
                );
            }
            if matches!(http_get(health, "/readyz").await, Ok((200, _))) {
                return Ok(op);
            }
            if Instant::now() > deadline {
                bail!("{} not ready after {timeout:?}", launch.binary.display());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its memory now (zero when it cannot be read).
    pub fn rss(&self) -> Rss {
        rss::read(self.pid).unwrap_or_default()
    }

    /// Its metrics now.
    pub async fn scrape(&self) -> Result<Scrape> {
        Scrape::fetch(self.metrics).await
    }

    /// SIGTERM, then SIGKILL after `grace`; returns whether it stopped on SIGTERM.
    pub async fn stop(mut self, grace: Duration) -> Result<bool> {
        // `kill` from procps: the workspace forbids the unsafe a direct libc call would need.
        let sent = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .status()
            .is_ok_and(|s| s.success());
        if sent && tokio::time::timeout(grace, self.child.wait()).await.is_ok() {
            return Ok(true);
        }
        self.child.kill().await?;
        Ok(false)
    }
}

/// The directory of the running executable: `target/release` when run by `cargo xtask bench`,
/// where the operator binaries are built next to the harness.
pub fn sibling_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    exe.parent()
        .map(Path::to_path_buf)
        .context("the harness executable has no parent directory")
}
