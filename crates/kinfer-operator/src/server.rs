//! The HTTP endpoints: `/metrics` (OpenMetrics), `/healthz` (the controllers make progress)
//! and `/readyz` (startup checks passed).
//!
//! Contract: a small HTTP/1.1 server on hyper; every listener serves all three paths (the
//! binary opens one on `--metrics-addr` and one on `--health-addr`, [`spawn`]); anything else
//! is 404. `/readyz` answers 503 until [`Endpoints::set_ready`] (the binary calls it once its
//! start-up checks passed). `/healthz` answers 503 when the controllers are wedged: work has
//! been queued with no reconcile starting or finishing for [`Endpoints::wedged_after`]
//! ([`Metrics::stalled_for`]; an idle operator, and a standby replica, are healthy), so the
//! kubelet restarts a process whose controllers stopped. It stops accepting when `shutdown`
//! turns true (or its sender is dropped). It never touches the API server.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use kinfer_state::metrics::Metrics;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Errors of the endpoint server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address could not be bound.
    #[error("bind {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// How long queued work may wait with no reconcile starting or finishing before `/healthz`
/// fails, by default: longer than the longest hold the engine honours (a server's
/// `Retry-After`, at most 5 minutes).
pub const WEDGED_AFTER: std::time::Duration = std::time::Duration::from_mins(10);

/// What the endpoints report.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The metrics registry.
    pub metrics: Metrics,
    /// Set once the startup checks passed.
    pub ready: Arc<AtomicBool>,
    /// `/healthz` fails when queued work has seen no reconcile for this long.
    pub wedged_after: std::time::Duration,
}

impl Default for Endpoints {
    fn default() -> Self {
        Self::new(Metrics::default())
    }
}

impl Endpoints {
    /// Endpoints over `metrics`, not ready yet.
    pub fn new(metrics: Metrics) -> Self {
        Self {
            metrics,
            ready: Arc::default(),
            wedged_after: WEDGED_AFTER,
        }
    }

    /// Fail `/healthz` after `after` of queued work without a reconcile.
    #[must_use]
    pub fn with_wedged_after(mut self, after: std::time::Duration) -> Self {
        self.wedged_after = after;
        self
    }

    /// Marks the process ready (`/readyz` answers 200 from now on).
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    /// Whether [`Self::set_ready`] was called.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

fn respond(endpoints: &Endpoints, path: &str) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/metrics" => (StatusCode::OK, OPENMETRICS, endpoints.metrics.encode()),
        "/healthz" => match endpoints.metrics.stalled_for() {
            Some(stalled) if stalled >= endpoints.wedged_after => (
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                format!(
                    "wedged: work queued and no reconcile for {}s",
                    stalled.as_secs()
                ),
            ),
            _ => (StatusCode::OK, "text/plain", "ok".to_owned()),
        },
        "/readyz" if endpoints.ready.load(Ordering::Relaxed) => {
            (StatusCode::OK, "text/plain", "ok".to_owned())
        }
        "/readyz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "starting".to_owned(),
        ),
        _ => (StatusCode::NOT_FOUND, "text/plain", "not found".to_owned()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, v);
    }
    response
}

/// Binds `addr`.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServerError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })
}

/// Binds every address in `addrs` and serves the endpoints on each in a background task until
/// `shutdown` turns true; returns the bound addresses (port 0 becomes the chosen port). Fails
/// before serving anything when an address cannot be bound.
pub async fn spawn(
    addrs: &[SocketAddr],
    endpoints: &Endpoints,
    shutdown: &watch::Receiver<bool>,
) -> Result<Vec<SocketAddr>, ServerError> {
    let mut listeners = Vec::with_capacity(addrs.len());
    for &addr in addrs {
        let listener = bind(addr).await?;
        let local = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        listeners.push((listener, local));
    }
    Ok(listeners
        .into_iter()
        .map(|(listener, local)| {
            tracing::info!(addr = %local, "serving /metrics, /healthz and /readyz");
            tokio::spawn(serve(listener, endpoints.clone(), shutdown.clone()));
            local
        })
        .collect())
}

/// Serves the endpoints on `listener` until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    endpoints: Endpoints,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            // A dropped sender also means stop.
            _ = shutdown.wait_for(|s| *s) => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let endpoints = endpoints.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let response = respond(&endpoints, req.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "connection closed with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let e = Endpoints::default();
        assert_eq!(respond(&e, "/healthz").status(), StatusCode::OK);
        assert_eq!(
            respond(&e, "/readyz").status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        e.set_ready();
        assert!(e.is_ready());
        assert_eq!(respond(&e, "/readyz").status(), StatusCode::OK);
        assert_eq!(respond(&e, "/metrics").status(), StatusCode::OK);
        assert_eq!(respond(&e, "/nope").status(), StatusCode::NOT_FOUND);
    }
}
