//! Running the controllers only while leading.
//!
//! Contract of [`run_with_leader_election`]:
//! - without an elector the controller runs at once, until `shutdown` resolves;
//! - with one, the elector campaigns in a background task and the controller future is
//!   created and polled only once this candidate leads; `shutdown` before that ends the
//!   campaign (nothing ran, nothing to release);
//! - on `shutdown` the controller is told to stop through the `watch::Receiver<bool>` it was
//!   given (true means stop; it should finish in-flight work and return); once it has
//!   returned, the Lease is released so a successor takes over at once, and the result is
//!   `Ok`;
//! - on loss of leadership the controller future is dropped at once, cancelling its in-flight
//!   reconciles: a successor may lead as soon as this candidate's renew deadline has passed,
//!   and work finishing after that would write beside it. The result is
//!   [`RunError::is_lost_leadership`]: the binary exits, so a restarted process campaigns
//!   afresh with empty caches, as client-go's `OnStoppedLeading` does (a request already sent
//!   when the future is dropped may still reach the server). The elector notices a loss at its
//!   next tick; [`crate::Process::lead`] also puts the controllers' client behind the Lease's
//!   write fence ([`crate::fence`]), so no write leaves after the renew deadline meanwhile;
//! - a controller that returns on its own ends the run too (the Lease is released);
//! - the elector keeps renewing while the controller drains on `shutdown`, so a slow graceful
//!   stop does not lose the Lease to a successor that would then write concurrently.

use std::future::Future;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::leader::{LeaderElector, LeaderError};

/// Why a leading run ended badly.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Leader election failed; [`LeaderError::LostLeadership`] when the Lease was lost.
    #[error(transparent)]
    Leader(#[from] LeaderError),
    /// The election task panicked or was cancelled.
    #[error("leader election task: {0}")]
    ElectionTask(#[source] tokio::task::JoinError),
    /// The elector ended without being asked to and without an error (a bug).
    #[error("leader election ended unexpectedly")]
    ElectionEnded,
}

impl RunError {
    /// Whether leadership was lost (the process should exit and campaign afresh).
    pub fn is_lost_leadership(&self) -> bool {
        matches!(self, Self::Leader(LeaderError::LostLeadership { .. }))
    }
}

enum Campaign {
    Leading,
    Shutdown,
    Ended,
}

async fn join(election: JoinHandle<Result<(), LeaderError>>) -> Result<(), RunError> {
    election
        .await
        .map_err(RunError::ElectionTask)?
        .map_err(RunError::Leader)
}

/// Runs `controller` until `shutdown`, stopping it through its receiver.
async fn run_until<C, F>(shutdown: impl Future<Output = ()>, controller: C)
where
    C: FnOnce(watch::Receiver<bool>) -> F,
    F: Future<Output = ()>,
{
    let (stop_tx, stop_rx) = watch::channel(false);
    let ctl = controller(stop_rx);
    tokio::pin!(ctl);
    tokio::select! {
        () = &mut ctl => return,
        () = shutdown => {}
    }
    stop_tx.send_replace(true);
    ctl.await;
}

/// Runs `controller` while `elector` (if any) leads; see the module contract.
pub async fn run_with_leader_election<C, F>(
    elector: Option<LeaderElector>,
    shutdown: impl Future<Output = ()>,
    controller: C,
) -> Result<(), RunError>
where
    C: FnOnce(watch::Receiver<bool>) -> F,
    F: Future<Output = ()>,
{
    let Some(elector) = elector else {
        run_until(shutdown, controller).await;
        return Ok(());
    };
    let identity = elector.settings().identity.clone();
    let (lead_tx, mut lead_rx) = watch::channel(false);
    let (stop_tx, stop_rx) = watch::channel(false);
    let election = tokio::spawn(elector.run(lead_tx, stop_rx));
    tokio::pin!(shutdown);

    // Campaign. (`wait_for` borrows the channel; only whether it succeeded leaves the select.)
    let campaign = tokio::select! {
        () = &mut shutdown => Campaign::Shutdown,
        r = lead_rx.wait_for(|l| *l) => if r.is_ok() { Campaign::Leading } else { Campaign::Ended },
    };
    let leading = match campaign {
        Campaign::Leading => true,
        Campaign::Shutdown => false,
        Campaign::Ended => {
            // The elector ended (its sender is gone) without leading.
            join(election).await?;
            return Err(RunError::ElectionEnded);
        }
    };
    if !leading {
        tracing::info!(%identity, "terminating before leading");
        stop_tx.send_replace(true);
        return join(election).await;
    }

    // Lead: the controller runs until shutdown, its own end, or loss of leadership.
    tracing::info!(%identity, "leading; starting the controllers");
    let (ctl_tx, ctl_rx) = watch::channel(false);
    let mut ctl = Box::pin(controller(ctl_rx));
    let (finished, lost) = tokio::select! {
        () = &mut ctl => (true, false),
        () = &mut shutdown => (false, false),
        _ = lead_rx.wait_for(|l| !*l) => (false, true),
    };
    if lost {
        // No draining: a successor may already be leading.
        drop(ctl);
        tracing::warn!(%identity, "lost the Lease: the controllers' in-flight work is cancelled");
    } else if !finished {
        ctl_tx.send_replace(true);
        ctl.await;
    }
    tracing::info!(%identity, lost, "controllers stopped");
    stop_tx.send_replace(true);
    let result = join(election).await;
    if lost && result.is_ok() {
        // The elector reports the loss itself; this covers a sender dropped without it.
        return Err(RunError::ElectionEnded);
    }
    result
}
