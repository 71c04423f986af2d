//! One watch per catalog kind for the whole operator, shared by every controller that needs it.
//!
//! Why: the service and template cache controllers are re-enqueued by model and template
//! changes, the service reconcile reads every model and template, and the catalog controllers
//! reconcile them; one watch and one cache per kind serves all of them (before, each
//! controller ran its own watch and the reconciles listed on top).
//!
//! Contract:
//! - [`SharedWatch::new`] makes the cache ([`SharedWatch::store`]) at once, so the context can
//!   hold it before anything runs; [`SharedWatch::subscribe`] hands out trigger streams (call it
//!   before [`SharedWatch::run`] is first polled: a late subscriber misses earlier events);
//!   [`SharedWatch::run`] is the watch itself, over `DeserializeGuard<K>` (one malformed
//!   object cannot wedge it), backing off on its own after an error.
//! - Every object is trimmed by `run`'s `trim` before it is cached or handed out (the owning
//!   controller's [`kinfer_state::Engine::trim_for_cache`]: `managedFields` cut to what the
//!   engine reads) and the `last-applied-configuration` annotation is dropped.
//! - The cache is updated before a subscriber sees the event (a re-list's objects are handed
//!   out once the whole list is in the cache). Subscribers get every applied object (also
//!   those of a re-list) and, if they asked, deleted ones (a controller of the
//!   kind itself does not: there is nothing to reconcile). After a re-list, the objects the
//!   cache held that the list no longer has are handed out as deleted (they went while the
//!   watch was down: their delete event never comes; [`changes_after_store`]).
//! - Handing out never waits: each subscriber has a queue coalescing by object
//!   ([`super::coalesce`]: at most the latest version of each object is queued, so a
//!   subscriber that stops reading holds back neither the watch nor the others, and its queue
//!   stays bounded by the number of objects); a delete drops the object's queued version for
//!   the subscribers that did not ask for deletes. A subscriber dropped is forgotten.

use std::collections::HashSet;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use futures::{Stream, StreamExt, TryStreamExt};
use kube::runtime::reflector::{self, ObjectRef, Store, store::Writer};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{Controller, WatchStreamExt};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::Guarded;
use super::coalesce;

/// The annotation `kubectl apply` leaves: a copy of the whole object, never read.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A subscriber of objects `T` keyed by `R` (`ObjectRef`s).
struct Subscriber<R, T> {
    tx: coalesce::Sender<R, Arc<T>>,
    deletes: bool,
}

type Subscribers<K> = Mutex<Vec<Subscriber<ObjectRef<K>, K>>>;

/// A shared watch of kind `K`; see the module contract.
pub(super) struct SharedWatch<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    api: Api<Guarded<K>>,
    reader: Store<Guarded<K>>,
    writer: Writer<Guarded<K>>,
    subscribers: Arc<Subscribers<Guarded<K>>>,
}

impl<K> SharedWatch<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// The watch of every `K` (all namespaces); nothing runs until [`Self::run`].
    pub(super) fn new(client: &Client) -> Self {
        let (reader, writer) = reflector::store();
        Self {
            api: Api::all(client.clone()),
            reader,
            writer,
            subscribers: Arc::default(),
        }
    }

    /// The cache (ready after the first list).
    pub(super) fn store(&self) -> Store<Guarded<K>> {
        self.reader.clone()
    }

    /// A stream of the objects this watch sees (and deleted ones when `deletes`).
    pub(super) fn subscribe(&self, deletes: bool) -> impl Stream<Item = Arc<Guarded<K>>> + use<K> {
        let (tx, rx) = coalesce::queue();
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Subscriber { tx, deletes });
        rx
    }

    /// A controller of `K` reconciling from this watch ([`Controller::for_shared_stream`]).
    pub(super) fn controller(&self) -> Controller<Guarded<K>> {
        Controller::for_shared_stream(self.subscribe(false), self.store())
    }

    /// The watch, trimming each object with `trim` before it is cached; see the module
    /// contract. Ends when the watch stream does (never, in practice).
    pub(super) fn run(
        self,
        mut trim: impl FnMut(&mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta)
        + Send
        + 'static,
    ) -> BoxFuture<'static, ()> {
        let Self {
            api,
            reader,
            writer,
            subscribers,
        } = self;
        let events = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .modify(move |o| {
                let meta = o.meta_mut();
                trim(meta);
                if let Some(a) = meta.annotations.as_mut() {
                    a.remove(LAST_APPLIED);
                }
            })
            .reflect(writer);
        let changes = changes_after_store(events, move || reader.state(), ObjectRef::from_obj);
        Box::pin(async move {
            let mut changes = std::pin::pin!(changes);
            while let Some(change) = changes.next().await {
                match change {
                    Ok((object, deleted)) => {
                        let key = ObjectRef::from_obj(&object);
                        fan_out(&subscribers, &key, &Arc::new(object), deleted);
                    }
                    Err(e) => tracing::debug!(error = %e, kind = %K::kind(&()), "shared watch"),
                }
            }
        })
    }
}

/// The objects `events` (a reflector's stream: its store updated before each event passes)
/// changed, each with whether it was deleted, passed on once the store has the change:
/// applied and deleted ones at once, a (re-)list's at its end (`InitDone`, when the reflector
/// swaps the list into its store), followed by the objects the store held before the list
/// (`previous`, read at `Init`, before the swap) that the list does not have (by `key`), as
/// deleted: they went while the watch was down and their delete event never comes.
pub(super) fn changes_after_store<K, R>(
    events: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
    previous: impl Fn() -> Vec<Arc<K>> + Send + 'static,
    key: impl Fn(&K) -> R + Send + 'static,
) -> impl Stream<Item = Result<(K, bool), watcher::Error>> + Send + 'static
where
    K: Clone + Send + Sync + 'static,
    R: Eq + Hash + Send + 'static,
{
    let mut listed = Vec::new();
    let mut before = Vec::new();
    events
        .map(move |event| {
            let out: Vec<Result<(K, bool), watcher::Error>> = match event {
                Ok(Event::Apply(o)) => vec![Ok((o, false))],
                Ok(Event::Delete(o)) => vec![Ok((o, true))],
                Ok(Event::Init) => {
                    listed.clear();
                    before = previous();
                    Vec::new()
                }
                Ok(Event::InitApply(o)) => {
                    listed.push(o);
                    Vec::new()
                }
                Ok(Event::InitDone) => {
                    let listed = std::mem::take(&mut listed);
                    let kept: HashSet<R> = listed.iter().map(&key).collect();
                    let gone = std::mem::take(&mut before)
                        .into_iter()
                        .filter(|o| !kept.contains(&key(o)))
                        .map(|o| Ok((Arc::unwrap_or_clone(o), true)));
                    listed
                        .into_iter()
                        .map(|o| Ok((o, false)))
                        .chain(gone)
                        .collect()
                }
                Err(e) => vec![Err(e)],
            };
            futures::stream::iter(out)
        })
        .flatten()
}

/// [`changes_after_store`] of a reflector's stream over `store`, without the deleted flag:
/// the objects a controller's `watches_stream` maps to the objects to reconcile.
pub(super) fn touched_after_store<K>(
    events: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
    store: Store<K>,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    changes_after_store(events, move || store.state(), ObjectRef::from_obj)
        .map_ok(|(object, _)| object)
}

/// Queues `object` (under `key`) for every subscriber that wants it, without waiting; a
/// delete drops its queued version for the others; closed subscribers are dropped.
fn fan_out<R: Eq + Hash + Clone, T>(
    subscribers: &Mutex<Vec<Subscriber<R, T>>>,
    key: &R,
    object: &Arc<T>,
    deleted: bool,
) {
    let mut subs = subscribers.lock().unwrap_or_else(PoisonError::into_inner);
    subs.retain(|s| !s.tx.is_closed());
    for s in subs.iter() {
        if deleted && !s.deletes {
            s.tx.forget(key);
        } else {
            s.tx.push(key.clone(), Arc::clone(object));
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    /// What [`changes_after_store`] passes for `events` when the store holds `store` at
    /// every `Init`.
    async fn changes(events: Vec<Event<u8>>, store: &[u8]) -> Vec<(u8, bool)> {
        let store: Vec<Arc<u8>> = store.iter().copied().map(Arc::new).collect();
        let events = futures::stream::iter(events.into_iter().map(Ok));
        let out = changes_after_store(events, move || store.clone(), |o: &u8| *o);
        out.map(Result::unwrap).collect().await
    }

    #[tokio::test]
    async fn a_lists_objects_pass_once_the_list_is_done() {
        let events = vec![
            Event::Init,
            Event::InitApply(1),
            Event::InitApply(2),
            Event::InitDone,
            Event::Apply(3),
            Event::Delete(1),
            Event::Init,
            Event::InitApply(4),
        ];
        assert_eq!(
            changes(events, &[]).await,
            [(1, false), (2, false), (3, false), (1, true)],
            "an unfinished list passes nothing"
        );
    }

    #[tokio::test]
    async fn a_relist_passes_what_went_while_the_watch_was_down_as_deleted() {
        // The store held 1, 2 and 3 when the re-list began; the list has 2 and 4.
        let events = vec![
            Event::Init,
            Event::InitApply(2),
            Event::InitApply(4),
            Event::InitDone,
        ];
        assert_eq!(
            changes(events, &[1, 2, 3]).await,
            [(2, false), (4, false), (1, true), (3, true)]
        );
    }

    /// A subscriber of `u8`s keyed by themselves, and its stream.
    fn subscriber(deletes: bool) -> (Subscriber<u8, u8>, coalesce::Receiver<u8, Arc<u8>>) {
        let (tx, rx) = coalesce::queue();
        (Subscriber { tx, deletes }, rx)
    }

    fn send(subs: &Mutex<Vec<Subscriber<u8, u8>>>, object: u8, deleted: bool) {
        fan_out(subs, &object, &Arc::new(object), deleted);
    }

    /// What `rx` has queued now, in order.
    fn queued(rx: &mut coalesce::Receiver<u8, Arc<u8>>) -> Vec<u8> {
        std::iter::from_fn(|| rx.next().now_or_never().flatten())
            .map(|o| *o)
            .collect()
    }

    #[test]
    fn fan_out_reaches_each_subscriber_and_deletes_only_those_asking() {
        let (all_sub, mut all) = subscriber(true);
        let (own_sub, mut own) = subscriber(false);
        let (gone_sub, gone) = subscriber(true);
        let subs = Mutex::new(vec![all_sub, own_sub, gone_sub]);
        drop(gone);
        send(&subs, 1, false);
        send(&subs, 2, true);
        assert_eq!(
            subs.lock().unwrap().len(),
            2,
            "a closed subscriber is dropped"
        );
        assert_eq!(queued(&mut all), [1, 2]);
        assert_eq!(
            queued(&mut own),
            [1],
            "no delete for the kind's own controller"
        );
        // A delete also drops the queued version for those not asking for deletes.
        send(&subs, 3, false);
        send(&subs, 3, true);
        assert_eq!(queued(&mut own), Vec::<u8>::new());
        assert_eq!(queued(&mut all), [3]);
    }

    #[test]
    fn a_stalled_subscriber_holds_back_neither_the_watch_nor_the_others() {
        let (stalled_sub, mut stalled) = subscriber(true);
        let (live_sub, mut live) = subscriber(true);
        let subs = Mutex::new(vec![stalled_sub, live_sub]);
        // Far more events than the old 256-event channel held, over five objects: every
        // `fan_out` returns (it cannot wait), and the live subscriber sees each one at once.
        for i in 0..10_000u32 {
            let object = u8::try_from(i % 5).unwrap();
            send(&subs, object, false);
            assert_eq!(queued(&mut live), [object], "event {i}");
        }
        // The stalled one holds one entry per object, in first-queued order.
        assert_eq!(queued(&mut stalled), [0, 1, 2, 3, 4]);
    }
}
