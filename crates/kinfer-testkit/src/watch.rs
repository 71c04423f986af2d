//! WATCH: a chunked stream of `{"type": ..., "object": ...}` lines.
//!
//! Contract: without a resourceVersion (or with "0") the stream starts with ADDED for every
//! current object; from version N it replays the kept history after N, or sends one ERROR
//! event carrying a 410 `Expired` Status when N is older than the history window. Selectors
//! turn modifications into ADDED/DELETED when an object starts/stops matching. BOOKMARKs are sent
//! periodically when `allowWatchBookmarks=true` (never ahead of events not yet sent);
//! `sendInitialEvents=true` ends the initial events with the `k8s.io/initial-events-end`
//! bookmark. The stream ends at `timeoutSeconds`, when the client goes away, when the cluster
//! cuts watches, or when the watcher falls too far behind.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::error::ApiError;
use crate::read::present;
use crate::resources::ResourceDef;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::{State, namespace_of};
use crate::store::{Event, EventType};

/// Watch parameters.
#[derive(Debug, Default)]
pub struct WatchOpts {
    /// Namespace filter.
    pub namespace: Option<String>,
    /// Label selector.
    pub labels: LabelSelector,
    /// Field selector.
    pub fields: FieldSelector,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: bool,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut s = json!({ "type": kind, "object": object }).to_string();
    s.push('\n');
    Bytes::from(s)
}

struct Filter<'a> {
    def: &'a ResourceDef,
    opts: &'a WatchOpts,
}

impl Filter<'_> {
    fn matches(&self, o: &Value) -> bool {
        self.opts
            .namespace
            .as_deref()
            .is_none_or(|n| !self.def.namespaced || namespace_of(o) == n)
            && self.opts.labels.matches(o)
            && self.opts.fields.matches(o)
    }

    /// One event line with the object as served under this watch's version (serialised from
    /// the shared object, without a copy, when it is stored in that version).
    fn line(&self, kind: &str, o: &Value) -> Bytes {
        if o["apiVersion"].as_str() == Some(self.def.api_version().as_str()) {
            let mut s = format!("{{\"type\":\"{kind}\",\"object\":");
            s.push_str(&o.to_string());
            s.push_str("}\n");
            Bytes::from(s)
        } else {
            line(kind, &present(self.def, o.clone()))
        }
    }

    fn render(&self, e: &Event) -> Option<Bytes> {
        if e.bucket != self.def.bucket() {
            return None;
        }
        let now = self.matches(&e.object);
        let kind = match e.kind {
            EventType::Added if now => "ADDED",
            EventType::Deleted if now => "DELETED",
            EventType::Modified => {
                let before = e.old.as_ref().is_some_and(|o| self.matches(o));
                match (before, now) {
                    (true, true) => "MODIFIED",
                    (false, true) => "ADDED",
                    (true, false) => "DELETED",
                    (false, false) => return None,
                }
            }
            _ => return None,
        };
        Some(self.line(kind, &e.object))
    }
}

/// Start a watch; the returned receiver yields the body chunks.
pub fn start(state: Arc<State>, def: ResourceDef, opts: WatchOpts) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel(256);
    // Subscribed before the stream is handed out, so a cut right after the client sees the
    // watch open is never missed.
    let cut = state.watch_cut.subscribe();
    tokio::spawn(async move {
        run(&state, &def, &opts, &tx, cut).await;
    });
    rx
}

/// A watch stream holding one `ERROR` event with a 410 `Expired` Status, as the real server
/// answers a watch from a compacted version (used for injected 410s).
pub fn expired(message: &str) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel(1);
    // The channel is empty and has room for one: this cannot fail.
    let _ = tx.try_send(line("ERROR", &ApiError::gone(message).to_status()));
    rx
}

/// What a watch starts with: past events to render, or current objects to send as ADDED.
enum Initial {
    Events(Vec<Arc<Event>>),
    Objects(Vec<Arc<Value>>),
}

async fn run(
    state: &State,
    def: &ResourceDef,
    opts: &WatchOpts,
    tx: &mpsc::Sender<Bytes>,
    mut cut: tokio::sync::watch::Receiver<u64>,
) {
    let filter = Filter { def, opts };
    let from = opts
        .resource_version
        .as_deref()
        .filter(|v| !v.is_empty() && *v != "0")
        .map(str::parse::<u64>);
    // Under the lock only the history is read and the objects cloned; rendering happens after.
    let start = {
        let txn = state.store.txn();
        let current = txn.current_rv();
        match from {
            Some(Ok(rv)) if !opts.send_initial_events => match txn.watch_from(&def.bucket(), rv) {
                Ok((past, rx)) => Ok((Initial::Events(past), rx, current)),
                Err(expired) => Err(ApiError::gone(format!(
                    "too old resource version: {rv} ({})",
                    expired.oldest
                ))),
            },
            Some(Err(_)) => Err(ApiError::bad_request("invalid resourceVersion")),
            _ => {
                let ns = opts.namespace.as_deref().filter(|_| def.namespaced);
                let objs = txn
                    .range_arc(&def.bucket(), ns, None)
                    .filter(|o| filter.matches(o))
                    .cloned()
                    .collect();
                Ok((Initial::Objects(objs), txn.subscribe(), current))
            }
        }
    };
    let (initial, mut rx, mut last_rv) = match start {
        Ok(s) => s,
        Err(e) => {
            let _ = tx.send(line("ERROR", &e.to_status())).await;
            return;
        }
    };
    let chunks: Vec<Bytes> = match initial {
        Initial::Events(past) => past.iter().filter_map(|e| filter.render(e)).collect(),
        Initial::Objects(objs) => objs.iter().map(|o| filter.line("ADDED", o)).collect(),
    };
    for chunk in chunks {
        if tx.send(chunk).await.is_err() {
            return;
        }
    }
    if opts.send_initial_events {
        let b = bookmark(def, last_rv, true);
        if tx.send(b).await.is_err() {
            return;
        }
    }
    let deadline = opts.timeout.map(|t| tokio::time::Instant::now() + t);
    // `interval` panics on zero: the shortest period is one millisecond.
    let period = state
        .options
        .bookmark_interval
        .max(Duration::from_millis(1));
    let mut ticker = tokio::time::interval(period);
    ticker.tick().await;
    loop {
        let timeout = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ev = rx.recv() => match ev {
                Ok(e) => {
                    last_rv = last_rv.max(e.rv);
                    if let Some(chunk) = filter.render(&e)
                        && tx.send(chunk).await.is_err()
                    {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
            },
            _ = ticker.tick(), if opts.bookmarks => {
                if tx.send(bookmark(def, last_rv, false)).await.is_err() {
                    return;
                }
            }
            () = timeout => return,
            _ = cut.changed() => return,
            () = tx.closed() => return,
        }
    }
}

fn bookmark(def: &ResourceDef, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({ "resourceVersion": rv.to_string() });
    if initial_end {
        meta["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
    }
    line(
        "BOOKMARK",
        &json!({ "kind": def.kind, "apiVersion": def.api_version(), "metadata": meta }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Options;

    /// On a current-thread runtime the spawned watch task has not run yet when `start` returns,
    /// which is exactly when a client may already see the stream open and cut it.
    #[tokio::test(flavor = "current_thread")]
    async fn a_cut_right_after_start_ends_the_watch() {
        let state = State::new(Options::default());
        let def = state
            .registry()
            .get("", "v1", "configmaps")
            .cloned()
            .unwrap_or_else(|| unreachable!("configmaps are built in"));
        let opts = WatchOpts {
            resource_version: Some(state.store.txn().current_rv().to_string()),
            ..WatchOpts::default()
        };
        let mut rx = start(Arc::clone(&state), def, opts);
        state.watch_cut.send_modify(|n| *n += 1);
        let end = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
        assert!(matches!(end, Ok(None)), "the cut was missed");
    }
}
