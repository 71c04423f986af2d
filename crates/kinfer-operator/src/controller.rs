//! Running an operator's controllers on the kinfer reconcile engine.
//!
//! Every kinfer operator wires its pipeline into `kube::runtime::Controller` the same way; this
//! module is that wiring, so an operator only says which kinds it watches:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # async fn demo<P>(engine: Arc<kinfer_state::Engine<P>>, client: kube::Client, common: kinfer_operator::CommonArgs)
//! # where P: kinfer_state::Pipeline,
//! #       P::Object: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
//! # {
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::Service;
//! use kinfer_operator::controller::{ControllerOptions, Controllers};
//! let (_stop_tx, stop) = tokio::sync::watch::channel(false);
//! let options = ControllerOptions::from_args(&common);
//! Controllers::new(client, "kinfer-widget", options)
//!     .run(engine, |c, scope| scope.owns::<Service, _>(scope.owns::<Deployment, _>(c)), stop)
//!     .await;
//! # }
//! ```
//!
//! Contract:
//! - [`Controllers::run`] runs one controller per watched namespace (all namespaces when none
//!   is given) over `DeserializeGuard<K>` of the pipeline's kind, so one malformed object
//!   cannot wedge it; each reconcile is the engine's ([`kinfer_state::engine::reconcile`]),
//!   which decides every requeue itself. At most `concurrency` reconciles run at once per
//!   controller, each after `debounce` without a new trigger for its object
//!   ([`ControllerOptions::debounce`]). Operators that wire controllers themselves get the
//!   same controller from [`controller_for`].
//! - Child kinds registered with [`Scope::owns`] are watched only through the engine's marker
//!   label `kinfer.dev/managed-by=<manager>` (the API server filters, so the operator neither
//!   streams nor caches anyone else's objects of that kind); a change or deletion of a child
//!   reconciles its owner, so drift is repaired. Other watches (cluster-scoped objects that
//!   cannot carry an owner reference) are added in the same closure with
//!   `Controller::watches` and [`Scope::marked`].
//! - Every watch this module builds backs off on its own after an error (client-go's 800 ms
//!   doubling to 30 s), and the controller's merged trigger stream pauses only briefly after
//!   one ([`trigger_backoff`], 100 ms doubling to 2 s, reset by the next event): with
//!   kube-runtime's default there (800 ms doubling to 30 s with jitter, reset by the next
//!   event or 120 s after its last delay), the 410s of every watch after a compaction arrive
//!   as consecutive errors of the one merged stream, escalating one shared delay that stalled
//!   all reconciles for 35-45 s.
//! - Every trigger is recorded as it arrives ([`kinfer_state::Triggers`]: the object's own
//!   events and its children's), so the engine observes the wait from the first pending
//!   trigger to the reconcile (`kinfer_reconcile_queue_wait_seconds`); the engine's memory of an
//!   object is dropped on its delete event ([`kinfer_state::Engine::forget`]), after a
//!   reconcile that finds it gone from the controller's cache (a delete during the reconcile),
//!   and after a re-list of the watch for every object of the watched namespace the list no
//!   longer has (a delete missed while the watch was down; [`kinfer_state::Engine::retain`]).
//! - The reconciled objects are cached with `managedFields` cut to what the engine reads of
//!   them ([`kinfer_state::Engine::trim_for_cache`]).
//! - Watch errors of a controller are logged as a warning at most once a minute
//!   ([`WarnLimiter`]), the rest at debug; reconcile errors are the engine's to report.
//! - Everything stops gracefully when `shutdown` turns true (or its sender is dropped):
//!   in-flight reconciles finish, then `run` returns.
//! - [`restart_on_change`] never starts after `shutdown` turned true: it checks before every
//!   start, and shutdown wins over a simultaneous input change.
//! - [`restart_on_change`] runs controllers built for one value of a watched input (for
//!   example the set of installed optional CRDs, [`crate::optional_crds::CrdWatch`]) and, when
//!   that value changes, stops them gracefully and starts them again for the new value: the
//!   engine reads a pipeline's child kinds once, so a new kind means a new engine, and the
//!   restart lists every object again, so each is reconciled against the new value.

use std::collections::HashSet;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::NamespaceResourceScope;
use kinfer_state::labels::MANAGED_BY;
use kinfer_state::{Engine, ObjectKey, Pipeline, Triggers};
use kube::core::DeserializeGuard;
use kube::core::PartialObjectMeta;
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::Event;
use kube::runtime::{Controller, WatchStreamExt, controller, reflector, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use crate::args::CommonArgs;

/// How the controllers of an operator run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerOptions {
    /// Namespaces to watch; all when empty.
    pub namespaces: Vec<String>,
    /// Reconciles running at once per controller.
    pub concurrency: u16,
    /// Quiet time after a trigger before the reconcile (kube-runtime's trailing-edge
    /// debounce; zero for none): 50 ms turned a new Zerfoo service's 2.1 status writes and
    /// 4.3 reads into 2 and 3 (one read per new child), for ~70 ms more event-to-reconcile.
    pub debounce: Duration,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            namespaces: Vec::new(),
            concurrency: 4,
            debounce: Duration::from_millis(50),
        }
    }
}

impl ControllerOptions {
    /// From `--watch-namespace`, `--concurrency` and `--debounce-ms`.
    pub fn from_args(common: &CommonArgs) -> Self {
        Self {
            namespaces: common.watch_namespaces.clone(),
            concurrency: common.concurrency,
            debounce: Duration::from_millis(common.debounce_ms),
        }
    }
}

/// The controller of a pipeline's kind `K`.
pub type GuardedController<K> = Controller<DeserializeGuard<K>>;

/// What one controller watches: its namespace (or all), the client and the field manager,
/// handed to the operator's wiring closure.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    client: &'a Client,
    namespace: Option<&'a str>,
    manager: &'a str,
    triggers: Option<&'a Triggers>,
}

impl std::fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("namespace", &self.namespace)
            .field("manager", &self.manager)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Controllers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controllers")
            .field("manager", &self.manager)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<'a> Scope<'a> {
    /// A scope (for operators that build a `Controller` themselves).
    pub fn new(client: &'a Client, namespace: Option<&'a str>, manager: &'a str) -> Self {
        Self {
            client,
            namespace,
            manager,
            triggers: None,
        }
    }

    /// This scope recording the triggers of its owned watches in `triggers` (the engine's
    /// queue-wait metric; [`Controllers::run`] does this).
    #[must_use]
    pub fn with_triggers(mut self, triggers: &'a Triggers) -> Self {
        self.triggers = Some(triggers);
        self
    }

    /// `events` (a watch of owned objects) recording each as a trigger of its owners, when
    /// this scope records triggers ([`Self::with_triggers`]); pass owned watches an operator
    /// builds itself through it before `Controller::owns_stream_with`.
    pub fn trigger_owners<Child, S>(
        &self,
        events: S,
    ) -> impl Stream<Item = Result<Child, watcher::Error>> + Send + 'static
    where
        Child: Resource,
        S: Stream<Item = Result<Child, watcher::Error>> + Send + 'static,
    {
        let triggers = self.triggers.cloned();
        events.inspect_ok(move |child| {
            if let Some(t) = &triggers {
                t.owners_of(child.meta());
            }
        })
    }

    /// The client.
    pub fn client(&self) -> &Client {
        self.client
    }

    /// The watched namespace; `None` for all.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace
    }

    /// An API of a namespaced kind in this scope's namespace (all namespaces when `None`).
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match self.namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }

    /// A watch configuration selecting only objects carrying the engine's marker
    /// `kinfer.dev/managed-by=<manager>`: the API server filters, so the operator streams and
    /// caches only its own objects of the kind.
    pub fn marked(&self) -> watcher::Config {
        watcher::Config::default().labels(&marker_selector(self.manager))
    }

    /// `c` also watching its children of kind `Child` (by the marker label, see
    /// [`Self::marked`]; metadata only, with its own backoff); a child event reconciles the
    /// owner named by its owner reference.
    pub fn owns<Child, K>(&self, c: Controller<K>) -> Controller<K>
    where
        Child: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Debug
            + Send
            + Sync
            + 'static,
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::DynamicType: Debug + Clone + Eq + std::hash::Hash + Unpin,
    {
        let events = watcher(self.api::<PartialObjectMeta<Child>>(), self.marked())
            .default_backoff()
            .touched_objects();
        c.owns_stream(self.trigger_owners(events))
    }
}

/// The label selector of the engine's marker `kinfer.dev/managed-by=<manager>`: what
/// [`Scope::marked`] watches, and what an operator lists its own cluster-scoped objects by.
pub fn marker_selector(manager: &str) -> String {
    format!("{MANAGED_BY}={manager}")
}

/// The controllers of one operator; see the module contract.
#[derive(Clone)]
pub struct Controllers {
    client: Client,
    manager: String,
    options: ControllerOptions,
}

impl Controllers {
    /// Controllers of the operator whose field manager (and `kinfer.dev/managed-by` value) is
    /// `manager`.
    pub fn new(client: Client, manager: &str, options: ControllerOptions) -> Self {
        Self {
            client,
            manager: manager.to_owned(),
            options,
        }
    }

    /// The namespaces, `None` standing for all.
    fn namespaces(&self) -> Vec<Option<String>> {
        if self.options.namespaces.is_empty() {
            vec![None]
        } else {
            self.options.namespaces.iter().cloned().map(Some).collect()
        }
    }

    /// Runs `engine`'s pipeline until `shutdown` turns true; `wire` adds the watched kinds to
    /// each namespace's controller.
    pub async fn run<P, W>(&self, engine: Arc<Engine<P>>, wire: W, shutdown: watch::Receiver<bool>)
    where
        P: Pipeline,
        P::Object: Resource<Scope = NamespaceResourceScope>,
        W: Fn(GuardedController<P::Object>, &Scope<'_>) -> GuardedController<P::Object>,
    {
        let namespaces = self.namespaces();
        let triggers = engine.triggers();
        futures::future::join_all(namespaces.iter().map(|ns| {
            let scope =
                Scope::new(&self.client, ns.as_deref(), &self.manager).with_triggers(&triggers);
            let controller = controller_for(&scope, &engine, &self.options);
            run_one(
                wire(controller, &scope),
                Arc::clone(&engine),
                ns.clone(),
                shutdown.clone(),
            )
        }))
        .await;
    }
}

/// The controller of `engine`'s kind in `scope` as [`Controllers::run`] builds it, for
/// operators that wire controllers themselves: on a watch of its own (see the module contract:
/// its backoff, the triggers it records, the delete events it forwards, what it caches), with
/// the short [`trigger_backoff`] and `options`' concurrency and debounce (the namespaces are
/// the scope's). Pass the scope [`Scope::with_triggers`]`(&engine.triggers())` so owned
/// watches record triggers too.
pub fn controller_for<P>(
    scope: &Scope<'_>,
    engine: &Arc<Engine<P>>,
    options: &ControllerOptions,
) -> GuardedController<P::Object>
where
    P: Pipeline,
    P::Object: Resource<Scope = NamespaceResourceScope>,
{
    let (reader, writer) = reflector::store();
    let triggers = engine.triggers();
    let trim = Arc::clone(engine);
    let engine = Arc::clone(engine);
    let namespace = scope.namespace().map(str::to_owned);
    // The keys of the list in progress (`Init` .. `InitDone`).
    let mut listed: Option<HashSet<ObjectKey>> = None;
    let events = watcher(
        scope.api::<DeserializeGuard<P::Object>>(),
        watcher::Config::default(),
    )
    .default_backoff()
    .modify(move |obj| trim.trim_for_cache(obj.meta_mut()))
    .inspect_ok(move |event| match event {
        Event::Apply(obj) => triggers.object(obj.meta()),
        Event::InitApply(obj) => {
            triggers.object(obj.meta());
            listed
                .get_or_insert_default()
                .insert(Engine::<P>::key_of(obj));
        }
        Event::Delete(obj) => engine.forget(&Engine::<P>::key_of(obj)),
        Event::Init => listed = Some(HashSet::new()),
        Event::InitDone => {
            // Objects deleted while the watch was down are absent from the new list: their
            // delete event never comes, so forget what this scope remembers beyond the list.
            let listed = listed.take().unwrap_or_default();
            let dropped = engine.retain(|k| {
                listed.contains(k)
                    || namespace
                        .as_deref()
                        .is_some_and(|ns| k.namespace.as_deref() != Some(ns))
            });
            if dropped > 0 {
                tracing::debug!(dropped, "forgot objects deleted while the watch was down");
            }
        }
    });
    Controller::for_stream(reflector(writer, events).applied_objects(), reader)
        // 0 would mean unbounded to kube; the flag refuses it, a caller's value is clamped.
        .with_config(
            controller::Config::default()
                .concurrency(options.concurrency.max(1))
                .debounce(options.debounce),
        )
        .trigger_backoff(trigger_backoff())
}

/// The pause of a controller's merged trigger stream after a watch error; see the module
/// contract. Give it to `Controller::trigger_backoff` when building a controller without
/// [`Controllers`].
pub fn trigger_backoff() -> TriggerBackoff {
    TriggerBackoff::default()
}

/// 100 ms doubling to 2 s, back to 100 ms on the next event ([`trigger_backoff`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerBackoff {
    next: Duration,
}

impl TriggerBackoff {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(2);
}

impl Default for TriggerBackoff {
    fn default() -> Self {
        Self { next: Self::FIRST }
    }
}

impl Iterator for TriggerBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = delay.saturating_mul(2).min(Self::MAX);
        Some(delay)
    }
}

impl Backoff for TriggerBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

async fn run_one<P: Pipeline>(
    controller: GuardedController<P::Object>,
    engine: Arc<Engine<P>>,
    namespace: Option<String>,
    mut shutdown: watch::Receiver<bool>,
) {
    let ns = namespace.as_deref().unwrap_or("*");
    let mut watch_errors = WarnLimiter::default();
    tracing::info!(namespace = ns, "controller starting");
    let store = controller.store();
    controller
        .graceful_shutdown_on(async move {
            // A dropped sender also means stop.
            let _ = shutdown.wait_for(|s| *s).await;
        })
        .run(
            move |obj, engine| reconcile_then_forget_if_gone(obj, engine, store.clone()),
            kinfer_state::engine::error_policy,
            engine,
        )
        .for_each(|result| {
            match result {
                // Watch errors (the watcher retries with backoff): warn, at most once a minute.
                Err(e @ controller::Error::QueueError(_)) if watch_errors.allow() => {
                    tracing::warn!(namespace = ns, error = %e, "watch error; retrying (further errors within a minute are logged at debug)");
                }
                // Reconcile errors are the engine's to report.
                Err(e) => tracing::debug!(error = %e, "controller event"),
                Ok(_) => {}
            }
            std::future::ready(())
        })
        .await;
    tracing::info!(namespace = ns, "controller stopped");
}

/// The engine's reconcile, then [`Engine::forget`] when `obj` is no longer in the
/// controller's `store`: a delete event that arrived while the reconcile ran forgot the
/// object before the reconcile wrote its memory (applied children, a backoff count, a hold),
/// which would otherwise stay for an object that is gone.
async fn reconcile_then_forget_if_gone<P: Pipeline>(
    obj: Arc<DeserializeGuard<P::Object>>,
    engine: Arc<Engine<P>>,
    store: reflector::Store<DeserializeGuard<P::Object>>,
) -> Result<kube::runtime::controller::Action, std::convert::Infallible> {
    let action = engine.reconcile_guarded(&obj).await.action;
    if store.get(&reflector::ObjectRef::from_obj(&*obj)).is_none() {
        engine.forget(&Engine::<P>::key_of(&*obj));
    }
    Ok(action)
}

/// Rate limit of a repeated warning: [`WarnLimiter::allow`] says yes at most once per
/// interval (a minute by default); the caller logs the rest at debug.
#[derive(Debug)]
pub struct WarnLimiter {
    every: std::time::Duration,
    last: Option<std::time::Instant>,
}

impl Default for WarnLimiter {
    fn default() -> Self {
        Self::every(std::time::Duration::from_mins(1))
    }
}

impl WarnLimiter {
    /// A limiter allowing one warning per `every`.
    pub fn every(every: std::time::Duration) -> Self {
        Self { every, last: None }
    }

    /// Whether to warn now (and if so, starts a new interval).
    pub fn allow(&mut self) -> bool {
        let now = std::time::Instant::now();
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < self.every)
        {
            return false;
        }
        self.last = Some(now);
        true
    }
}

/// Runs `start(view(input), stop)` until `shutdown` turns true, restarting it whenever
/// `view` of the watched `input` changes; see the module contract. `start` must return once
/// its `stop` receiver turns true.
pub async fn restart_on_change<T, V, F, Fut>(
    mut input: watch::Receiver<T>,
    view: impl Fn(&T) -> V,
    mut shutdown: watch::Receiver<bool>,
    mut start: F,
) where
    V: PartialEq + Clone + Debug,
    F: FnMut(V, watch::Receiver<bool>) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut current = view(&input.borrow_and_update());
    loop {
        // Never start after shutdown (a shutdown racing an input change, or one before the
        // first start).
        if *shutdown.borrow() {
            return;
        }
        let (stop_tx, stop_rx) = watch::channel(false);
        let running = start(current.clone(), stop_rx);
        tokio::pin!(running);
        let mut input_open = true;
        let next = loop {
            let changed = tokio::select! {
                // Shutdown wins over a simultaneous input change.
                biased;
                _ = shutdown.wait_for(|s| *s) => break None,
                () = &mut running => return,
                changed = input.changed(), if input_open => changed.is_ok(),
            };
            if !changed {
                // The input is gone: keep running with what we have until shutdown or the
                // run's own end.
                input_open = false;
                continue;
            }
            let now = view(&input.borrow_and_update());
            if now != current {
                break Some(now);
            }
        };
        stop_tx.send_replace(true);
        running.await;
        let Some(next) = next else { return };
        tracing::info!(before = ?current, after = ?next, "watched input changed; restarting the controllers");
        current = next;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[tokio::test]
    async fn restarts_only_when_the_view_changes_and_stops_on_shutdown() {
        let (input_tx, input_rx) = watch::channel(1_u32);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let starts = Arc::new(Mutex::new(Vec::new()));
        let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel();
        let log = Arc::clone(&starts);
        let task = tokio::spawn(restart_on_change(
            input_rx,
            |v: &u32| *v / 10,
            shutdown_rx,
            move |view, mut stop| {
                log.lock().unwrap().push(view);
                let started = started_tx.clone();
                async move {
                    started.send(view).unwrap();
                    let _ = stop.wait_for(|s| *s).await;
                }
            },
        ));
        assert_eq!(started_rx.recv().await, Some(0));
        // 1 -> 5: same view (0), no restart; 5 -> 12: view 1, restart.
        input_tx.send_replace(5);
        input_tx.send_replace(12);
        assert_eq!(started_rx.recv().await, Some(1));
        shutdown_tx.send_replace(true);
        tokio::time::timeout(std::time::Duration::from_secs(10), task)
            .await
            .expect("stops")
            .expect("task");
        assert_eq!(*starts.lock().unwrap(), vec![0, 1]);
    }

    #[tokio::test]
    async fn nothing_starts_after_shutdown() {
        // Shut down before the first start: nothing starts.
        let (_input_tx, input_rx) = watch::channel(0_u32);
        let (shutdown_tx, shutdown_rx) = watch::channel(true);
        let starts = Arc::new(Mutex::new(0));
        let log = Arc::clone(&starts);
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            restart_on_change(
                input_rx,
                |v: &u32| *v,
                shutdown_rx,
                move |_, _stop| {
                    *log.lock().unwrap() += 1;
                    async {}
                },
            ),
        )
        .await
        .expect("returns");
        assert_eq!(*starts.lock().unwrap(), 0);
        drop(shutdown_tx);

        // An input change and shutdown at once: shutdown wins, no restart.
        let (input_tx, input_rx) = watch::channel(0_u32);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel();
        let (release_tx, release_rx) = watch::channel(false);
        let task = tokio::spawn(restart_on_change(
            input_rx,
            |v: &u32| *v,
            shutdown_rx,
            move |view, mut stop| {
                let started = started_tx.clone();
                let mut release = release_rx.clone();
                async move {
                    started.send(view).unwrap();
                    let _ = stop.wait_for(|s| *s).await;
                    // Keep "stopping" until both signals are in, so the loop sees them at once.
                    let _ = release.wait_for(|r| *r).await;
                }
            },
        ));
        assert_eq!(started_rx.recv().await, Some(0));
        input_tx.send_replace(1);
        shutdown_tx.send_replace(true);
        release_tx.send_replace(true);
        tokio::time::timeout(std::time::Duration::from_secs(10), task)
            .await
            .expect("stops")
            .expect("task");
        assert_eq!(started_rx.try_recv().ok(), None, "restarted after shutdown");
    }

    #[test]
    fn the_trigger_backoff_is_short_bounded_and_resets() {
        let mut b = trigger_backoff();
        let first: Vec<u128> = b.by_ref().take(7).map(|d| d.as_millis()).collect();
        assert_eq!(first, [100, 200, 400, 800, 1600, 2000, 2000]);
        b.reset();
        assert_eq!(b.next(), Some(Duration::from_millis(100)));
    }

    #[test]
    fn warn_limiter_allows_one_warning_per_interval() {
        let mut l = WarnLimiter::every(std::time::Duration::from_hours(1));
        assert!(l.allow());
        assert!(!l.allow());
        let mut every_time = WarnLimiter::every(std::time::Duration::ZERO);
        assert!(every_time.allow());
        assert!(every_time.allow());
    }

    #[tokio::test]
    async fn a_start_that_returns_by_itself_ends_the_run() {
        let (_input_tx, input_rx) = watch::channel(());
        let (_shutdown_tx, shutdown_rx) = watch::channel(false);
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            restart_on_change(input_rx, |()| (), shutdown_rx, |(), _stop| async {}),
        )
        .await
        .expect("returns");
    }
}
