//! The HTTP endpoints: `/metrics` (OpenMetrics), `/healthz` (the controllers make progress)
//! and `/readyz` (startup checks passed).
//!
//! Contract: a small HTTP/1.1 server on hyper. Each listener has a [`Role`]: the health
//! listener serves `/healthz` and `/readyz` over plain HTTP (the kubelet's probes); the
//! metrics listener serves `/metrics` only, over HTTPS to scrapers the API server
//! authenticates and authorizes ([`crate::metrics_auth`], [`crate::tls`]; 401 without a valid
//! token, 403 without `get` on `/metrics`, 500 when a review fails), or over plain HTTP when
//! the binary was told to (`--metrics-secure=false`, on a loopback address only:
//! [`listeners`] refuses any other). Anything else is 404; a TLS handshake must finish within
//! [`HANDSHAKE_TIMEOUT`]. `/readyz` answers 503 until [`Endpoints::set_ready`] (the binary
//! calls it once its start-up checks passed). `/healthz` answers 503 when the controllers are
//! wedged: work has been queued with no reconcile starting or finishing for
//! [`Endpoints::wedged_after`]
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

use crate::metrics_auth::{Access, MetricsAuth};

/// How long a client may take to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a listener serves; see the module contract.
#[derive(Debug, Clone)]
pub enum Role {
    /// `/healthz` and `/readyz`, plain HTTP.
    Health,
    /// `/metrics`, plain HTTP, to anyone who can connect (bind a loopback address).
    PlainMetrics,
    /// `/metrics` over HTTPS, to scrapers the API server authorizes.
    SecureMetrics {
        /// The serving certificate.
        tls: Arc<rustls::ServerConfig>,
        /// The token and access reviews.
        auth: MetricsAuth,
    },
}

impl Role {
    fn name(&self) -> &'static str {
        match self {
            Self::Health => "/healthz and /readyz",
            Self::PlainMetrics => "/metrics over HTTP",
            Self::SecureMetrics { .. } => "/metrics over HTTPS",
        }
    }
}

/// Errors of the endpoint server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// `--metrics-secure=false` with an address other hosts can reach.
    #[error(
        "--metrics-secure=false serves /metrics to anyone who can connect: bind a loopback --metrics-addr (127.0.0.1:8080), not {0}"
    )]
    PlainMetricsNotLoopback(SocketAddr),
    /// The metrics and health listeners on one address.
    #[error("--metrics-addr and --health-addr are both {0}: they serve different endpoints")]
    SameAddress(SocketAddr),
    /// No serving certificate for the metrics listener.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
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

fn not_found() -> (StatusCode, &'static str, String) {
    (StatusCode::NOT_FOUND, "text/plain", "not found".to_owned())
}

/// The answer of the health listener.
fn health(endpoints: &Endpoints, path: &str) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
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
        _ => not_found(),
    };
    response(status, content_type, body)
}

/// The answer of a metrics listener; `auth` reviews the caller when secure.
async fn metrics(
    endpoints: &Endpoints,
    auth: Option<&MetricsAuth>,
    req: &Request<Incoming>,
) -> Response<Full<Bytes>> {
    if req.uri().path() != "/metrics" {
        let (status, content_type, body) = not_found();
        return response(status, content_type, body);
    }
    let access = match auth {
        Some(auth) => {
            let header = req.headers().get(hyper::header::AUTHORIZATION);
            auth.check(header.map(hyper::header::HeaderValue::as_bytes))
                .await
        }
        None => Access::Allowed,
    };
    let (status, body) = match access {
        Access::Allowed => {
            return response(StatusCode::OK, OPENMETRICS, endpoints.metrics.encode());
        }
        Access::Unauthenticated => (StatusCode::UNAUTHORIZED, "Unauthorized"),
        Access::Forbidden => (StatusCode::FORBIDDEN, "Forbidden"),
        Access::Unavailable => (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error"),
    };
    response(status, "text/plain", body.to_owned())
}

fn response(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, v);
    }
    response
}

/// The listeners of the common flags: health on `--health-addr`, metrics on `--metrics-addr`,
/// secure unless `--metrics-secure=false` (then on a loopback address only), its scrapers
/// reviewed through `client`; see the module contract.
pub fn listeners(
    common: &crate::CommonArgs,
    client: &kube::Client,
) -> Result<Vec<(SocketAddr, Role)>, ServerError> {
    let (metrics_addr, health_addr) = (common.metrics_addr, common.health_addr);
    if metrics_addr == health_addr && metrics_addr.port() != 0 {
        return Err(ServerError::SameAddress(metrics_addr));
    }
    let metrics = if common.metrics_secure {
        Role::SecureMetrics {
            tls: crate::tls::serving_config(common.metrics_cert_dir.as_deref())?,
            auth: MetricsAuth::new(client.clone()),
        }
    } else if metrics_addr.ip().is_loopback() {
        Role::PlainMetrics
    } else {
        return Err(ServerError::PlainMetricsNotLoopback(metrics_addr));
    };
    Ok(vec![(health_addr, Role::Health), (metrics_addr, metrics)])
}

/// Binds `addr`.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServerError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })
}

/// Binds every address of `listeners` and serves its role on each in a background task until
/// `shutdown` turns true; returns the bound addresses in order (port 0 becomes the chosen
/// port). Fails before serving anything when an address cannot be bound.
pub async fn spawn(
    listeners: &[(SocketAddr, Role)],
    endpoints: &Endpoints,
    shutdown: &watch::Receiver<bool>,
) -> Result<Vec<SocketAddr>, ServerError> {
    let mut bound = Vec::with_capacity(listeners.len());
    for (addr, role) in listeners {
        let listener = bind(*addr).await?;
        let local = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: *addr,
            source,
        })?;
        bound.push((listener, local, role.clone()));
    }
    Ok(bound
        .into_iter()
        .map(|(listener, local, role)| {
            tracing::info!(addr = %local, "serving {}", role.name());
            tokio::spawn(serve(listener, role, endpoints.clone(), shutdown.clone()));
            local
        })
        .collect())
}

/// Serves `role` on `listener` until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    role: Role,
    endpoints: Endpoints,
    mut shutdown: watch::Receiver<bool>,
) {
    let acceptor = match &role {
        Role::SecureMetrics { tls, .. } => Some(tokio_rustls::TlsAcceptor::from(Arc::clone(tls))),
        _ => None,
    };
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
        let role = role.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let endpoints = endpoints.clone();
                let role = role.clone();
                async move {
                    Ok::<_, Infallible>(match &role {
                        Role::Health => health(&endpoints, req.uri().path()),
                        Role::PlainMetrics => metrics(&endpoints, None, &req).await,
                        Role::SecureMetrics { auth, .. } => {
                            metrics(&endpoints, Some(auth), &req).await
                        }
                    })
                }
            });
            let served = match acceptor {
                None => {
                    http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                }
                Some(acceptor) => {
                    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
                        .await
                    {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!("TLS handshake timed out");
                            return;
                        }
                    };
                    http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await
                }
            };
            if let Err(e) = served {
                tracing::debug!(error = %e, "connection closed with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_health_listener_serves_only_the_probes() {
        let e = Endpoints::default();
        assert_eq!(health(&e, "/healthz").status(), StatusCode::OK);
        assert_eq!(
            health(&e, "/readyz").status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
        e.set_ready();
        assert!(e.is_ready());
        assert_eq!(health(&e, "/readyz").status(), StatusCode::OK);
        assert_eq!(health(&e, "/metrics").status(), StatusCode::NOT_FOUND);
        assert_eq!(health(&e, "/nope").status(), StatusCode::NOT_FOUND);
    }
}
