//! Optional CustomResourceDefinitions: "is CRD X installed, and tell me when that changes".
//!
//! An operator that creates third-party kinds (Gateway API HTTPRoutes, InferencePools,
//! prometheus-operator monitors, Istio DestinationRules) should not fail when one of them is
//! missing: it degrades the component that needs it and applies the rest, and it picks the
//! kind up once the CRD is installed, without a restart. [`CrdWatch`] is that facility,
//! independent of any kind:
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), kinfer_operator::CrdError> {
//! use kinfer_operator::optional_crds::CrdWatch;
//! const ROUTES: &str = "httproutes.gateway.networking.k8s.io";
//! let (_stop_tx, stop) = tokio::sync::watch::channel(false);
//! let crds = CrdWatch::start(&client, &[ROUTES], stop).await?;
//! let routes_served = crds.current().contains(ROUTES);
//! let mut changes = crds.subscribe();
//! // `changes.changed().await` resolves when a watched CRD is installed or removed;
//! // `kinfer_operator::controller::restart_on_change` restarts controllers on it.
//! # let _ = (routes_served, &mut changes);
//! # Ok(())
//! # }
//! ```
//!
//! Contract:
//! - [`CrdWatch::start`] reads the installed set once (one metadata-only LIST of CRDs; a read
//!   error is an error, never "absent"), so the caller starts from a known state, then follows
//!   changes in a background task until `shutdown` turns true (or its sender is dropped).
//! - It lists and streams CRD **metadata only** (`PartialObjectMetadata`: kube's
//!   `metadata_watcher`, spelled `watcher` over `Api<PartialObjectMeta<_>>` since kube 3.1
//!   deprecated the former): a CRD's schema can be megabytes, and every replica of every
//!   operator would otherwise hold and stream all of them.
//! - A CRD counts as installed while it exists and is not being deleted (a CRD with a
//!   `deletionTimestamp` is on its way out: its kind stops being served). Its `Established`
//!   condition is not waited for (only metadata is streamed): a subscriber may hear of a CRD
//!   a moment before its kind is served, so its first requests for the kind can fail and must
//!   be retried (the controllers' watchers and the engine do, with backoff).
//! - Watch errors are logged as a warning at most once a minute, the rest at debug. An
//!   `InitDone` without a preceding `Init` keeps the published set.
//! - Subscribers are notified only when the installed subset of the watched names changes
//!   (CRDs of other names, and updates that do not change presence, notify nobody). After a
//!   watch error the watcher re-lists (kube's default backoff) and the set is rebuilt from the
//!   new listing, so a deletion missed while disconnected is still noticed.
//! - Reads only: nothing here writes.

use std::collections::BTreeSet;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, PartialObjectMeta};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::crds::CrdError;

/// Which of the watched CRDs are installed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstalledCrds(BTreeSet<String>);

impl InstalledCrds {
    /// A set holding `names` (tests, and callers that detect by other means).
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        Self(names.into_iter().map(str::to_owned).collect())
    }

    /// Whether the CRD `name` (`<plural>.<group>`) is installed.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// Whether every CRD of `names` is installed (a component needing several kinds).
    pub fn contains_all(&self, names: &[&str]) -> bool {
        names.iter().all(|n| self.contains(n))
    }

    /// The installed names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

/// Follows whether a fixed set of CRDs is installed; see the module contract.
#[derive(Debug)]
pub struct CrdWatch {
    rx: watch::Receiver<InstalledCrds>,
    task: JoinHandle<()>,
}

/// The names of `items` that are watched and not being deleted.
fn present<'a>(
    watched: &BTreeSet<String>,
    items: impl IntoIterator<Item = &'a PartialObjectMeta<CustomResourceDefinition>>,
) -> BTreeSet<String> {
    items
        .into_iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none())
        .map(ResourceExt::name_any)
        .filter(|n| watched.contains(n))
        .collect()
}

impl CrdWatch {
    /// Reads which of `names` are installed now, then follows changes until `shutdown`.
    pub async fn start(
        client: &Client,
        names: &[&str],
        shutdown: watch::Receiver<bool>,
    ) -> Result<Self, CrdError> {
        let watched: BTreeSet<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let api = Api::<PartialObjectMeta<CustomResourceDefinition>>::all(client.clone());
        let listed = api
            .list(&ListParams::default())
            .await
            .map_err(|source| CrdError::List {
                source: Box::new(source),
            })?;
        let initial = InstalledCrds(present(&watched, &listed.items));
        tracing::info!(installed = ?initial, "optional CRDs detected");
        let (tx, rx) = watch::channel(initial);
        let task = tokio::spawn(follow(api, watched, tx, shutdown));
        Ok(Self { rx, task })
    }

    /// The installed set now.
    pub fn current(&self) -> InstalledCrds {
        self.rx.borrow().clone()
    }

    /// A receiver that sees every change of the installed set.
    pub fn subscribe(&self) -> watch::Receiver<InstalledCrds> {
        self.rx.clone()
    }

    /// Waits for the background task to end (after `shutdown` turned true).
    pub async fn stopped(self) {
        if let Err(e) = self.task.await {
            tracing::warn!(error = %e, "optional CRD watch task failed");
        }
    }
}

/// Applies one watch event to `current` (the published set) and `relisting` (the set being
/// rebuilt during a re-list); returns the new set when it changed.
fn step(
    watched: &BTreeSet<String>,
    current: &InstalledCrds,
    relisting: &mut Option<BTreeSet<String>>,
    event: watcher::Event<PartialObjectMeta<CustomResourceDefinition>>,
) -> Option<InstalledCrds> {
    let mut next = current.0.clone();
    match event {
        watcher::Event::Init => {
            *relisting = Some(BTreeSet::new());
            return None;
        }
        watcher::Event::InitApply(m) => {
            if let Some(set) = relisting.as_mut() {
                set.extend(present(watched, [&m]));
            }
            return None;
        }
        // An InitDone without a preceding Init (not sent by kube's watcher, but not ruled out
        // by its types) keeps the current set: publishing an empty one would restart the
        // controllers without those kinds.
        watcher::Event::InitDone => match relisting.take() {
            Some(set) => next = set,
            None => return None,
        },
        watcher::Event::Apply(m) => {
            let name = m.name_any();
            if !watched.contains(&name) {
                return None;
            }
            if m.metadata.deletion_timestamp.is_none() {
                next.insert(name);
            } else {
                next.remove(&name);
            }
        }
        watcher::Event::Delete(m) => {
            next.remove(&m.name_any());
        }
    }
    (next != current.0).then_some(InstalledCrds(next))
}

async fn follow(
    api: Api<PartialObjectMeta<CustomResourceDefinition>>,
    watched: BTreeSet<String>,
    tx: watch::Sender<InstalledCrds>,
    mut shutdown: watch::Receiver<bool>,
) {
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut relisting = None;
    let mut errors = crate::controller::WarnLimiter::default();
    loop {
        let event = tokio::select! {
            e = stream.next() => e,
            // A dropped sender also means stop.
            _ = shutdown.wait_for(|s| *s) => return,
        };
        let event = match event {
            Some(Ok(e)) => e,
            Some(Err(e)) => {
                if errors.allow() {
                    tracing::warn!(error = %e, "CRD watch error; retrying (further errors within a minute are logged at debug)");
                } else {
                    tracing::debug!(error = %e, "CRD watch error; retrying");
                }
                continue;
            }
            None => return,
        };
        let current = tx.borrow().clone();
        if let Some(next) = step(&watched, &current, &mut relisting, event) {
            tracing::info!(before = ?current, after = ?next, "optional CRDs changed");
            tx.send_replace(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn meta(name: &str, deleting: bool) -> PartialObjectMeta<CustomResourceDefinition> {
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                deletion_timestamp: deleting.then_some(Time(Timestamp::UNIX_EPOCH)),
                ..ObjectMeta::default()
            },
            _phantom: std::marker::PhantomData,
        }
    }

    #[test]
    fn only_watched_presence_changes_are_published() {
        let watched: BTreeSet<String> = ["a.x", "b.x"].map(str::to_owned).into();
        let none = InstalledCrds::default();
        let mut relist = None;
        let ev = watcher::Event::Apply;
        assert_eq!(
            step(&watched, &none, &mut relist, ev(meta("other.y", false))),
            None
        );
        let a = step(&watched, &none, &mut relist, ev(meta("a.x", false))).unwrap();
        assert!(a.contains("a.x") && !a.contains("b.x"));
        // An update of an installed CRD changes nothing.
        assert_eq!(
            step(&watched, &a, &mut relist, ev(meta("a.x", false))),
            None
        );
        // Terminating counts as gone; so does a delete.
        assert_eq!(
            step(&watched, &a, &mut relist, ev(meta("a.x", true))),
            Some(none.clone())
        );
        assert_eq!(
            step(
                &watched,
                &a,
                &mut relist,
                watcher::Event::Delete(meta("a.x", false))
            ),
            Some(none.clone())
        );
    }

    #[test]
    fn a_relist_rebuilds_the_set_and_notices_missed_deletions() {
        let watched: BTreeSet<String> = ["a.x", "b.x"].map(str::to_owned).into();
        let both = InstalledCrds::from_names(["a.x", "b.x"]);
        assert!(both.contains_all(&["a.x", "b.x"]));
        let mut relist = None;
        assert_eq!(
            step(&watched, &both, &mut relist, watcher::Event::Init),
            None
        );
        assert_eq!(
            step(
                &watched,
                &both,
                &mut relist,
                watcher::Event::InitApply(meta("b.x", false))
            ),
            None
        );
        let after = step(&watched, &both, &mut relist, watcher::Event::InitDone).unwrap();
        assert_eq!(after.names().collect::<Vec<_>>(), ["b.x"]);
        assert!(relist.is_none());
    }

    #[test]
    fn an_init_done_without_init_keeps_the_current_set() {
        let watched: BTreeSet<String> = ["a.x", "b.x"].map(str::to_owned).into();
        let both = InstalledCrds::from_names(["a.x", "b.x"]);
        let mut relist = None;
        assert_eq!(
            step(&watched, &both, &mut relist, watcher::Event::InitDone),
            None
        );
        assert!(relist.is_none());
    }
}
