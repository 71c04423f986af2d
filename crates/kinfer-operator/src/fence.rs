//! The write fence: a leader that may no longer lead sends no write, however late its work
//! runs.
//!
//! Why: the controllers stop when the elector steps down, but the elector notices only at its
//! next tick. A process that was paused (a stopped container, a long GC-like stall, a node
//! under memory pressure) wakes with its watch events and its timers due at once, and a
//! reconcile may run before the elector's tick, after a successor took over. The fence
//! closes that gap the way a lease is meant to be used: every write checks the lease's own
//! deadline at the moment it is sent.
//!
//! Contract:
//! - A [`WriteFence`] is open until an instant: [`WriteFence::open`] (no leader election)
//!   always allows writes; [`WriteFence::closed`] allows none until the elector extends it to
//!   the start of its last successful renewal plus the renew deadline
//!   ([`crate::leader::LeaderElector::fencing`]), and closes it when it steps down or releases.
//!   The deadline is measured on the process's monotonic clock, the one the elector measures
//!   its renew deadline on, so a paused process wakes past it.
//! - [`WriteFence::client`] wraps a `kube::Client`: reads (`GET`, `HEAD`, `OPTIONS`: watches
//!   included) always go through; any other request is refused in-process, never sent, when
//!   the fence does not allow writes at the moment the request leaves the client's queue
//!   ([`FenceError`], a `kube::Error::Service`). A write already sent before the deadline may
//!   still reach the server after it: the fence bounds when writes start, not the network.
//! - The elector writes its Lease through its own, unfenced client.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use hyper::{Method, Request, Response};
use kube::Client;
use kube::client::Body;

/// A write refused because this replica may not be leading any more.
#[derive(Debug, thiserror::Error)]
#[error("{method} {path} not sent: this replica's leadership has lapsed")]
pub struct FenceError {
    /// The request's method.
    pub method: Method,
    /// The request's path.
    pub path: String,
}

#[derive(Debug)]
enum State {
    Always,
    Until(Option<Instant>),
}

/// Whether writes may be sent now; see the module contract.
#[derive(Debug, Clone)]
pub struct WriteFence(Arc<Mutex<State>>);

impl WriteFence {
    /// A fence that always allows writes (no leader election).
    pub fn open() -> Self {
        Self(Arc::new(Mutex::new(State::Always)))
    }

    /// A fence that allows no write until [`WriteFence::extend_to`].
    pub fn closed() -> Self {
        Self(Arc::new(Mutex::new(State::Until(None))))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Allows writes until `until` (an elector-driven fence; an open one stays open).
    pub fn extend_to(&self, until: Instant) {
        if let State::Until(t) = &mut *self.state() {
            *t = Some(until);
        }
    }

    /// Allows no more writes (an elector-driven fence; an open one stays open).
    pub fn close(&self) {
        if let State::Until(t) = &mut *self.state() {
            *t = None;
        }
    }

    /// Whether a write may be sent now.
    pub fn allows_writes(&self) -> bool {
        match &*self.state() {
            State::Always => true,
            State::Until(t) => t.is_some_and(|t| Instant::now() < t),
        }
    }

    /// `client` with this fence in front of its writes; see the module contract.
    pub fn client(&self, client: &Client) -> Client {
        let default_namespace = client.default_namespace().to_owned();
        Client::new(
            Fenced {
                inner: client.clone(),
                fence: self.clone(),
            },
            default_namespace,
        )
    }
}

fn is_read(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

#[derive(Clone)]
struct Fenced {
    inner: Client,
    fence: WriteFence,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Answer = Result<Response<Body>, BoxError>;

impl tower_service::Service<Request<Body>> for Fenced {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner client queues and readies each request itself (`Client::send`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if !is_read(request.method()) && !self.fence.allows_writes() {
            let refused = FenceError {
                method: request.method().clone(),
                path: request.uri().path().to_owned(),
            };
            tracing::warn!(error = %refused, "write withheld");
            return Box::pin(std::future::ready(Err(refused.into())));
        }
        let inner = self.inner.clone();
        Box::pin(async move { inner.send(request).await.map_err(Into::into) })
    }
}
