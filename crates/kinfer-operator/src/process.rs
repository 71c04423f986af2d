//! The life of an operator process around its controllers: endpoints up first, start-up
//! checks, ready, leader election, controllers, graceful stop.
//!
//! Every kinfer operator's `run` reads the same way with [`Process`]:
//!
//! ```no_run
//! # async fn demo(common: kinfer_operator::CommonArgs, client: kube::Client) -> Result<(), kinfer_operator::Error> {
//! use kinfer_operator::{Process, crds, signal};
//! let process = Process::start(&common, &client).await?; // /metrics, /healthz; /readyz 503
//! crds::require(&client, &["widgets.example.com"], "kubectl apply -k deploy/crds").await?;
//! // ... optional CRDs (with `process.stopping()`), pipeline, engine (with `process.metrics()`)
//! process
//!     .lead(&common, &client, "widget-operator-leader", signal::termination(), |client, stop| async move {
//!         // run the controllers with `client` (writes fenced by the Lease) until `stop` turns true
//!         # drop((client, stop));
//!     })
//!     .await
//! # }
//! ```
//!
//! Contract:
//! - [`Process::start`] binds the endpoints (`--health-addr`, `--metrics-addr`:
//!   [`crate::server::listeners`]) before anything talks to the API server (the metrics
//!   listener reviews its scrapers through the client only when one calls), so a hanging
//!   start-up check is visible (`/healthz` 200, `/readyz` 503); a bind failure is an error.
//! - [`Process::lead`] marks the process ready (the caller has passed its start-up checks),
//!   then runs the controllers, with the caller's client behind the write fence
//!   ([`crate::fence`]: no write leaves the process once the renew deadline has passed),
//!   while this replica holds the Lease (at once without
//!   `--leader-elect`; [`crate::run_with_leader_election`]) until `shutdown` resolves; the
//!   Lease is released, the endpoints and background tasks stop, `Ok`. Losing the Lease
//!   returns the loss ([`crate::RunError::is_lost_leadership`]): the binary exits non-zero and
//!   a restarted process campaigns afresh. Incomplete leader-election flags fail before
//!   anything runs.
//! - Background tasks the caller starts (e.g. [`crate::optional_crds::CrdWatch`]) take
//!   [`Process::stopping`]; it turns true when `lead` returns or the `Process` is dropped
//!   (so an early start-up error stops them and the endpoints too).
//! - Tracing is the caller's (it is process-global; [`crate::telemetry::init_tracing`]).

use std::future::Future;
use std::net::SocketAddr;

use kinfer_state::metrics::Metrics;
use kube::Client;
use tokio::sync::watch;

use crate::args::CommonArgs;
use crate::fence::WriteFence;
use crate::run::run_with_leader_election;
use crate::server::{self, Endpoints, ServerError};

/// A running operator process; see the module contract.
#[derive(Debug)]
pub struct Process {
    endpoints: Endpoints,
    addrs: Vec<SocketAddr>,
    stop: watch::Sender<bool>,
}

impl Process {
    /// Serves the endpoints of the common flags (not ready yet); `client` reviews metrics
    /// scrapers ([`server::listeners`]).
    pub async fn start(common: &CommonArgs, client: &Client) -> Result<Self, ServerError> {
        let endpoints = Endpoints::new(Metrics::new()).with_wedged_after(common.wedged_after);
        let (stop, stopping) = watch::channel(false);
        let listeners = server::listeners(common, client)?;
        let addrs = server::spawn(&listeners, &endpoints, &stopping).await?;
        Ok(Self {
            endpoints,
            addrs,
            stop,
        })
    }

    /// The metrics registry `/metrics` serves.
    pub fn metrics(&self) -> Metrics {
        self.endpoints.metrics.clone()
    }

    /// The bound addresses, health then metrics (port 0 resolved).
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Turns true when the process stops; for the caller's background tasks.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Ready, then the controllers while leading until `shutdown`; see the module contract.
    /// `controllers` gets `client` behind the write fence ([`crate::fence`]) and the stop
    /// signal.
    pub async fn lead<C, F>(
        self,
        common: &CommonArgs,
        client: &Client,
        default_lease: &str,
        shutdown: impl Future<Output = ()>,
        controllers: C,
    ) -> Result<(), crate::Error>
    where
        C: FnOnce(Client, watch::Receiver<bool>) -> F,
        F: Future<Output = ()>,
    {
        let elector = common.leader_elector(client, default_lease)?;
        let fence = if elector.is_some() {
            WriteFence::closed()
        } else {
            WriteFence::open()
        };
        let elector = elector.map(|e| e.reporting(&self.endpoints.metrics).fencing(fence.clone()));
        let fenced = fence.client(client);
        self.endpoints.set_ready();
        let result =
            run_with_leader_election(elector, shutdown, move |stop| controllers(fenced, stop))
                .await;
        drop(self);
        Ok(result?)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}
