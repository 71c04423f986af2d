//! Leader election on a `coordination.k8s.io/v1` Lease, so only one replica writes.
//!
//! Contract (client-go's algorithm, reduced):
//! - A candidate takes the Lease when it does not exist, has no holder, or its record (holder,
//!   acquire and renew times) has not changed for `lease_duration` as measured on the
//!   candidate's own monotonic clock since it first saw that record (no cross-node clock
//!   comparison). Taking over bumps `leaseTransitions` and sets `acquireTime`.
//! - The leader renews every `retry_period`. Every write is a create or an update carrying the
//!   read `resourceVersion`, so two candidates can never both succeed (409 loses).
//! - A leader that has not renewed for `renew_deadline` (shorter than `lease_duration`, so it
//!   stops before anyone else may start), or that sees another holder, steps down: `run`
//!   reports `false` and returns [`LeaderError::LostLeadership`]; the caller stops writing.
//!   The deadline counts from the start of the last successful renewal (when its renewTime
//!   was taken), and each renewal attempt may take only what is left of it, so a slow
//!   renewal never stretches leadership past `renew_deadline`. With a [`WriteFence`]
//!   ([`LeaderElector::fencing`]) the same deadline is enforced on every write the
//!   controllers send, at the moment it is sent, however late the elector's own tick runs.
//! - On a requested stop the leader releases the Lease (empty holder), so a successor takes
//!   over at once instead of after the lease duration.
//!
//! Binaries do not drive [`LeaderElector::run`] themselves: [`crate::run_with_leader_election`]
//! runs it around the controllers.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::{Api, Client};
use tokio::sync::watch;

use crate::fence::WriteFence;

/// Errors of leader election.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// Reading the Lease failed.
    #[error("read Lease {name}: {source}")]
    ReadLease {
        /// The Lease.
        name: String,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// Writing the Lease failed (other than losing a race).
    #[error("write Lease {name}: {source}")]
    WriteLease {
        /// The Lease.
        name: String,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// The Lease was not renewed within the renew deadline, or another candidate holds it.
    #[error("lost leadership of Lease {name}")]
    LostLeadership {
        /// The Lease.
        name: String,
    },
}

/// Lease name, identity and timings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    /// The Lease's name.
    pub name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// This candidate (the pod name).
    pub identity: String,
    /// How long a record is valid without renewal.
    pub lease_duration: Duration,
    /// How long a leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// Time between attempts.
    pub retry_period: Duration,
}

impl LeaseSettings {
    /// client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry period.
    pub fn new(name: &str, namespace: &str, identity: &str) -> Self {
        Self {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            identity: identity.to_owned(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// The outcome of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// We hold the Lease (acquired or renewed).
    Leading,
    /// Someone else holds a valid Lease.
    HeldByOther,
    /// We lost a write race; try again later.
    Conflict,
}

/// The record fields whose change proves the holder is alive.
type Record = (Option<String>, Option<MicroTime>, Option<MicroTime>);

fn record(spec: &LeaseSpec) -> Record {
    (
        spec.holder_identity.clone(),
        spec.acquire_time.clone(),
        spec.renew_time.clone(),
    )
}

/// One candidate.
#[derive(Debug)]
pub struct LeaderElector {
    api: Api<Lease>,
    settings: LeaseSettings,
    observed: Option<(Record, Instant)>,
    metrics: Option<kinfer_state::metrics::Metrics>,
    fence: Option<WriteFence>,
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

impl LeaderElector {
    /// A candidate for the Lease in `settings`.
    pub fn new(client: Client, settings: LeaseSettings) -> Self {
        Self {
            api: Api::namespaced(client, &settings.namespace),
            settings,
            observed: None,
            metrics: None,
            fence: None,
        }
    }

    /// Keep `fence` open exactly while this candidate may lead: until the start of its last
    /// successful renewal plus the renew deadline, closed when it steps down or releases
    /// ([`crate::fence`]).
    #[must_use]
    pub fn fencing(mut self, fence: WriteFence) -> Self {
        fence.close();
        self.fence = Some(fence);
        self
    }

    /// Report leadership in `metrics` (`leader_election_master_status{name=<lease>}`: 1 while
    /// leading, else 0).
    #[must_use]
    pub fn reporting(mut self, metrics: &kinfer_state::metrics::Metrics) -> Self {
        metrics.leading(&self.settings.name, false);
        self.metrics = Some(metrics.clone());
        self
    }

    /// Tells `leading` (and the metrics) whether this candidate leads.
    fn announce(&self, leading: &watch::Sender<bool>, is_leader: bool) {
        if let (Some(fence), false) = (&self.fence, is_leader) {
            fence.close();
        }
        if let Some(m) = &self.metrics {
            m.leading(&self.settings.name, is_leader);
        }
        leading.send_replace(is_leader);
    }

    /// The settings.
    pub fn settings(&self) -> &LeaseSettings {
        &self.settings
    }

    fn observe(&mut self, spec: &LeaseSpec) -> Instant {
        let r = record(spec);
        match &self.observed {
            Some((seen, at)) if *seen == r => *at,
            _ => {
                let now = Instant::now();
                self.observed = Some((r, now));
                now
            }
        }
    }

    fn write_error(&self, source: kube::Error) -> LeaderError {
        LeaderError::WriteLease {
            name: self.settings.name.clone(),
            source: Box::new(source),
        }
    }

    fn duration_seconds(&self) -> i32 {
        i32::try_from(self.settings.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    /// One attempt to acquire or renew; see the module contract.
    pub async fn try_acquire_or_renew(&mut self) -> Result<Attempt, LeaderError> {
        let s = &self.settings;
        let now = MicroTime(Timestamp::now());
        let current = self
            .api
            .get_opt(&s.name)
            .await
            .map_err(|source| LeaderError::ReadLease {
                name: s.name.clone(),
                source: Box::new(source),
            })?;
        let Some(mut lease) = current else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(s.name.clone()),
                    namespace: Some(s.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(s.identity.clone()),
                    lease_duration_seconds: Some(self.duration_seconds()),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(&created.spec.unwrap_or_default());
                    Ok(Attempt::Leading)
                }
                Err(e) if is_conflict(&e) => Ok(Attempt::Conflict),
                Err(e) => Err(self.write_error(e)),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let seen_at = self.observe(&spec);
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let ours = holder.as_deref() == Some(self.settings.identity.as_str());
        let valid_for = spec
            .lease_duration_seconds
            .and_then(|d| u64::try_from(d).ok())
            .map_or(self.settings.lease_duration, Duration::from_secs);
        if !ours && holder.is_some() && seen_at.elapsed() < valid_for {
            return Ok(Attempt::HeldByOther);
        }
        let mut next = spec.clone();
        next.holder_identity = Some(self.settings.identity.clone());
        next.lease_duration_seconds = Some(self.duration_seconds());
        next.renew_time = Some(now.clone());
        if !ours {
            next.acquire_time = Some(now);
            next.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        lease.spec = Some(next);
        match self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                self.observe(&updated.spec.unwrap_or_default());
                Ok(Attempt::Leading)
            }
            Err(e) if is_conflict(&e) => Ok(Attempt::Conflict),
            Err(e) => Err(self.write_error(e)),
        }
    }

    /// Gives the Lease up if we hold it (empty holder), so a successor need not wait.
    pub async fn release(&mut self) -> Result<(), LeaderError> {
        let name = self.settings.name.clone();
        let Some(mut lease) =
            self.api
                .get_opt(&name)
                .await
                .map_err(|source| LeaderError::ReadLease {
                    name: name.clone(),
                    source: Box::new(source),
                })?
        else {
            return Ok(());
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        lease.spec = Some(spec);
        match self
            .api
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_conflict(&e) => Ok(()),
            Err(e) => Err(self.write_error(e)),
        }
    }

    /// Campaigns until `stop` turns true (then releases) or leadership is lost (then errors);
    /// `leading` carries whether this candidate currently leads.
    pub async fn run(
        mut self,
        leading: watch::Sender<bool>,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), LeaderError> {
        let mut tick = tokio::time::interval(self.settings.retry_period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_renew = Instant::now();
        let mut is_leader = false;
        loop {
            let stopping = tokio::select! {
                _ = tick.tick() => false,
                // A dropped sender also means stop.
                r = stop.wait_for(|s| *s) => { drop(r); true }
            };
            if stopping {
                if is_leader {
                    self.announce(&leading, false);
                    if let Err(e) = self.release().await {
                        tracing::warn!(error = %e, "releasing the Lease failed");
                    }
                }
                return Ok(());
            }
            let started = Instant::now();
            // While leading, an attempt may take only what is left of the renew deadline
            // since the start of the last successful one (the renewTime others saw): a slow
            // renewal must not stretch leadership past it.
            let budget = if is_leader {
                match self
                    .settings
                    .renew_deadline
                    .checked_sub(started.duration_since(last_renew))
                {
                    Some(left) if !left.is_zero() => left,
                    _ => return self.step_down(&leading),
                }
            } else {
                self.settings.renew_deadline
            };
            let attempt = tokio::time::timeout(budget, self.try_acquire_or_renew()).await;
            let attempt = match attempt {
                Ok(Ok(a)) => a,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "leader election attempt failed");
                    Attempt::Conflict
                }
                Err(_) => {
                    tracing::warn!("leader election attempt timed out");
                    Attempt::Conflict
                }
            };
            match attempt {
                Attempt::Leading => {
                    last_renew = started;
                    if let Some(fence) = &self.fence {
                        fence.extend_to(started + self.settings.renew_deadline);
                    }
                    if !is_leader {
                        is_leader = true;
                        tracing::info!(identity = %self.settings.identity, lease = %self.settings.name, "acquired leadership");
                        self.announce(&leading, true);
                    }
                }
                Attempt::HeldByOther if is_leader => return self.step_down(&leading),
                Attempt::Conflict
                    if is_leader && last_renew.elapsed() >= self.settings.renew_deadline =>
                {
                    return self.step_down(&leading);
                }
                _ => {}
            }
        }
    }

    fn step_down(&self, leading: &watch::Sender<bool>) -> Result<(), LeaderError> {
        tracing::error!(identity = %self.settings.identity, lease = %self.settings.name, "lost leadership; stepping down");
        self.announce(leading, false);
        Err(LeaderError::LostLeadership {
            name: self.settings.name.clone(),
        })
    }
}
