//! What one reconcile did, for tests, logs and benchmarks.

use kube::runtime::controller::Action;

use crate::category::CategorizedError;
use crate::status::OverallStatus;

/// What one reconcile did (for tests, logs and benchmarks).
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// What the controller runtime should do next.
    pub action: Action,
    /// The derived overall status (`None` when skipped or being deleted).
    pub status: Option<OverallStatus>,
    /// Applies sent.
    pub applied: usize,
    /// Deletes sent.
    pub deleted: usize,
    /// Whether status was patched.
    pub status_written: bool,
    /// Events published.
    pub events: usize,
    /// Finalizer patches sent (added or removed).
    pub finalizers_written: usize,
    /// Whether this reconcile made progress: a finalizer written, a child applied with a body
    /// other than the one last applied to it, or a child deleted. A failed reconcile that
    /// progressed does not grow the backoff (see the engine's contract, step 6).
    pub progressed: bool,
    /// Errors seen (components, listing, plan, apply, status), each once.
    pub errors: Vec<CategorizedError>,
    /// Skipped because paused or malformed, held ([`Self::held`]) or outdated
    /// ([`Self::stale`]).
    pub skipped: bool,
    /// Skipped without a request because the object is held until a server's `Retry-After`
    /// has passed; the action requeues for the rest of the hold.
    pub held: bool,
    /// Not reconciled because the copy given is outdated by a finalizer patch: ours succeeded
    /// from it (the cache has not caught up yet), or was refused with 409 (someone else changed
    /// the object). Nothing is planned, counted as a failure, nor sent after that; the action
    /// requeues until the fresh copy is due (see [`super::finalize`]'s "Outdated copies").
    pub stale: bool,
}

impl Report {
    pub(super) fn skipped(action: Action) -> Self {
        Self {
            action,
            status: None,
            applied: 0,
            deleted: 0,
            status_written: false,
            events: 0,
            finalizers_written: 0,
            progressed: false,
            errors: Vec::new(),
            skipped: true,
            held: false,
            stale: false,
        }
    }

    /// Total writes sent (applies, deletes, status, events, finalizer patches).
    pub fn writes(&self) -> usize {
        self.applied
            + self.deleted
            + usize::from(self.status_written)
            + self.events
            + self.finalizers_written
    }
}
