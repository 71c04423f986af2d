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
//! - [`optional_crds`]: [`CrdWatch`], "is CRD X installed, notify me on change" for
//!   third-party kinds an operator degrades without (metadata-only watch);
//! - [`controller`]: [`Controllers`], one `kube::runtime::Controller` per watched namespace on
//!   the kinfer reconcile engine with children watched by label, and [`restart_on_change`]
//!   for controllers that depend on a watched input (the optional CRDs);
//! - [`process`]: [`Process`], the order of a binary's `run`: endpoints, start-up checks,
//!   ready, leader election, controllers, graceful stop;
//! - [`fence`]: [`WriteFence`], which keeps a replica whose Lease has lapsed from sending any
//!   write.
//!
//! A binary's library `run` (tests call it in-process with a test cluster's client and a
//! channel; `main` with [`client::infer`] and [`signal::termination`]) then reads:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # async fn demo<P>(common: kinfer_operator::CommonArgs, client: kube::Client,
//! #     pipeline_for: impl Fn(bool) -> P) -> Result<(), kinfer_operator::Error>
//! # where P: kinfer_state::Pipeline,
//! #       P::Object: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
//! # {
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kinfer_operator::{
//!     ControllerOptions, Controllers, CrdWatch, Process, crds, restart_on_change, signal,
//! };
//! const ROUTES: &str = "httproutes.gateway.networking.k8s.io";
//! let process = Process::start(&common, &client).await?;
//! crds::require(&client, &["widgets.example.com"], "kubectl apply -k deploy/crds").await?;
//! let optional = CrdWatch::start(&client, &[ROUTES], process.stopping()).await?;
//! let metrics = process.metrics();
//! let options = ControllerOptions::from_args(&common);
//! process
//!     // `client` here is the caller's behind the Lease's write fence: build every writer on it.
//!     .lead(&common, &client, "widget-operator-leader", signal::termination(), |client, stop| {
//!         let controllers = Controllers::new(client.clone(), "kinfer-widget", options);
//!         let engine_client = client;
//!         restart_on_change(optional.subscribe(), |crds| crds.contains(ROUTES), stop, move |routes, stop| {
//!             let engine = Arc::new(kinfer_state::Engine::new(
//!                 pipeline_for(routes),
//!                 engine_client.clone(),
//!                 kinfer_state::EngineConfig::new(kinfer_state::LabelScheme {
//!                     domain: "example.com".into(),
//!                     controller: "widget".into(),
//!                     manager: "kinfer-widget".into(),
//!                 }),
//!                 metrics.clone(),
//!             ));
//!             let controllers = controllers.clone();
//!             async move {
//!                 controllers
//!                     .run(engine, |c, scope| scope.owns::<Deployment, _>(c), stop)
//!                     .await;
//!             }
//!         })
//!     })
//!     .await
//! # }
//! ```

#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::expect_used, clippy::unwrap_used))]

pub mod args;
pub mod client;
pub mod controller;
pub mod crds;
pub mod fence;
pub mod leader;
pub mod metrics_auth;
pub mod optional_crds;
pub mod process;
pub mod run;
pub mod server;
pub mod signal;
pub mod telemetry;
pub mod tls;

pub use args::{ArgsError, CommonArgs, LogFormat};
pub use client::ClientError;
pub use controller::{ControllerOptions, Controllers, Scope, restart_on_change};
pub use crds::CrdError;
pub use fence::{FenceError, WriteFence};
pub use leader::{Attempt, LeaderElector, LeaderError, LeaseSettings};
pub use optional_crds::{CrdWatch, InstalledCrds};
pub use process::Process;
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
