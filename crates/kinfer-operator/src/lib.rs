//! # kinfer-operator
//!
//! The shared plumbing of kinfer's operator binaries (`zerfoo-operator`,
//! `modelservice-operator`, `aim-operator`): everything a binary needs around its controllers,
//! and nothing about any kind.
//!
//! - [`args`]: [`CommonArgs`], the flags every operator takes (`--metrics-addr`,
//!   `--health-addr`, `--leader-elect` and the Lease's name, namespace and identity,
//!   `--watch-namespace` (repeatable), `--log-format text|json`, `--concurrency`), flattened
//!   into each binary's own `clap` arguments;
//! - [`telemetry`]: tracing initialisation (`RUST_LOG` filter, text or JSON);
//! - [`client`]: a `kube::Client` from kubeconfig or in-cluster config with kube's own retry
//!   layer off, so the reconcile engine's per-object backoff decides;
//! - [`crds`]: the start-up check that required CRDs are installed (fails with an install hint)
//!   and the probe for optional ones;
//! - [`server`]: `/metrics` (OpenMetrics), `/healthz`, `/readyz`;
//! - [`leader`]: Lease-based leader election (client-go's algorithm);
//! - [`run`]: [`run_with_leader_election`], which runs a controller future only while leading,
//!   stops it gracefully on shutdown (then releases the Lease) and on leadership loss (then
//!   reports [`RunError::is_lost_leadership`], and the binary exits to campaign afresh);
//! - [`signal`]: a future resolving on SIGTERM or Ctrl-C.
//!
//! A binary's `run` then reads:
//!
//! ```no_run
//! # async fn demo(common: kinfer_operator::CommonArgs) -> Result<(), kinfer_operator::Error> {
//! use kinfer_operator::{client, crds, run_with_leader_election, server, signal, telemetry};
//! telemetry::init_tracing(common.log_format)?;
//! let endpoints = server::Endpoints::default();
//! let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
//! server::spawn(&common.admin_addrs(), &endpoints, &stop_rx).await?;
//! let client = client::infer().await?;
//! crds::require(&client, &["widgets.example.com"], "kubectl apply -k deploy/crds").await?;
//! endpoints.set_ready();
//! let elector = common.leader_elector(&client, "widget-operator-leader")?;
//! let result = run_with_leader_election(elector, signal::termination(), |stop| async move {
//!     // run the controllers until `stop` turns true
//!     # drop(stop);
//! })
//! .await;
//! stop_tx.send_replace(true);
//! result?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::expect_used, clippy::unwrap_used))]

pub mod args;
pub mod client;
pub mod crds;
pub mod leader;
pub mod run;
pub mod server;
pub mod signal;
pub mod telemetry;

pub use args::{ArgsError, CommonArgs, LogFormat};
pub use client::ClientError;
pub use crds::CrdError;
pub use leader::{Attempt, LeaderElector, LeaderError, LeaseSettings};
pub use run::{RunError, run_with_leader_election};
pub use server::{Endpoints, ServerError};
pub use telemetry::TracingError;

/// Any error of this crate, for binaries and operator libraries that want one type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad or incomplete flags.
    #[error(transparent)]
    Args(#[from] ArgsError),
    /// Tracing could not be initialised.
    #[error(transparent)]
    Tracing(#[from] TracingError),
    /// The client could not be built.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A CRD check failed.
    #[error(transparent)]
    Crd(#[from] CrdError),
    /// An endpoint could not be served.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// Leader election or the leading run failed (including loss of leadership).
    #[error(transparent)]
    Run(#[from] RunError),
}
