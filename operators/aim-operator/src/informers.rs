//! The informer caches the reconciles read instead of listing the API server.
//!
//! Why: an AIMService reconcile reads its namespace's models, templates, template caches and
//! services and every cluster model and template; listing them from the API server on every
//! reconcile cost ~70 LISTs per service while 1,000 services converged. The controllers watch
//! these kinds anyway, so the reads come from those watches' caches.
//!
//! Contract:
//! - Each slot is filled once, by the controller wiring ([`crate::controllers`]), from the
//!   watch that triggers the reconciles reading it, whose cache is updated before the trigger
//!   is passed on (a cache of another watch can lag the event that woke the reconcile, which
//!   then reads the older copy and is not woken again): the catalog kinds from their shared
//!   watch, AIMServices from the service controller's own cache, template caches from the
//!   service controller's watch of them, artifacts from the cache controller's. One
//!   exception: templates read models but are not triggered by them, so a template's miss is
//!   confirmed with the API server (`template::fetch`). A context built without controllers
//!   (tests driving one engine, a CLI) leaves them empty and the fetch steps list from the API
//!   server instead.
//! - [`Informers::read`] waits at most [`CACHE_WAIT`] for a cache's first list (a watch that
//!   cannot start must not hang every reconcile) and then answers `None`, so the caller lists.
//!   It waits once per cache ([`Slot`]): once a read gave up, later reads answer at once until
//!   the cache has listed (a watch that cannot list, e.g. for want of RBAC, must not cost every
//!   reconcile [`CACHE_WAIT`]).
//! - A cached read can lag a write by the watch's latency: the decisions made from it are
//!   server-side applies (idempotent, corrected by the next reconcile the object's own event
//!   triggers); everything destructive (the finalizers' deletions) lists from the API server.
//! - Malformed objects (a `DeserializeGuard` error) are skipped, as a LIST into the typed
//!   kind would have failed on them.

use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::FutureExt;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kinfer_api::aim::{
    AIMArtifact, AIMClusterModel, AIMClusterRuntimeConfig, AIMClusterServiceTemplate, AIMModel,
    AIMRuntimeConfig, AIMService, AIMServiceTemplate, AIMTemplateCache,
};
use kube::api::ListParams;
use kube::core::DeserializeGuard;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

/// How long a reconcile waits for an informer cache's first list before asking the API server.
pub const CACHE_WAIT: Duration = Duration::from_secs(5);

/// The informer cache of kind `K` (over `DeserializeGuard`, as the controllers watch it).
pub type Cache<K> = Store<DeserializeGuard<K>>;

/// The slot of kind `K`'s informer cache.
pub type CacheSlot<K> = Slot<DeserializeGuard<K>>;

/// A store the controller wiring sets once, and whether a read already gave up waiting for its
/// first list; see the module contract.
pub struct Slot<T>
where
    T: Resource<DynamicType = ()> + Clone + 'static,
{
    store: OnceLock<Store<T>>,
    gave_up: AtomicBool,
}

impl<T> Debug for Slot<T>
where
    T: Resource<DynamicType = ()> + Clone + 'static,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("set", &self.store.get().is_some())
            .field("gave_up", &self.gave_up.load(Ordering::Relaxed))
            .finish()
    }
}

impl<T> Default for Slot<T>
where
    T: Resource<DynamicType = ()> + Clone + 'static,
{
    fn default() -> Self {
        Self {
            store: OnceLock::new(),
            gave_up: AtomicBool::new(false),
        }
    }
}

impl<T> Slot<T>
where
    T: Resource<DynamicType = ()> + Clone + 'static,
{
    /// Sets the store (once; `Err` with `store` when it was set before).
    pub fn set(&self, store: Store<T>) -> Result<(), Store<T>> {
        self.store.set(store)
    }

    /// The store, listed or not.
    pub fn get(&self) -> Option<&Store<T>> {
        self.store.get()
    }

    /// The store once it has listed, waiting at most [`CACHE_WAIT`] unless a read gave up
    /// before; `None` without a store or a list.
    pub async fn ready(&self) -> Option<&Store<T>> {
        self.ready_within(CACHE_WAIT).await
    }

    /// [`Self::ready`] waiting at most `wait`.
    pub async fn ready_within(&self, wait: Duration) -> Option<&Store<T>> {
        let store = self.store.get()?;
        if matches!(store.wait_until_ready().now_or_never(), Some(Ok(()))) {
            return Some(store);
        }
        if self.gave_up.load(Ordering::Relaxed) {
            return None;
        }
        let listed = matches!(
            tokio::time::timeout(wait, store.wait_until_ready()).await,
            Ok(Ok(()))
        );
        if !listed {
            self.gave_up.store(true, Ordering::Relaxed);
        }
        listed.then_some(store)
    }
}

/// One slot per kind the reconciles read; see the module contract.
#[derive(Default)]
pub struct Informers {
    /// AIMModels (all namespaces).
    pub models: CacheSlot<AIMModel>,
    /// AIMClusterModels.
    pub cluster_models: CacheSlot<AIMClusterModel>,
    /// AIMServiceTemplates (all namespaces).
    pub templates: CacheSlot<AIMServiceTemplate>,
    /// AIMClusterServiceTemplates.
    pub cluster_templates: CacheSlot<AIMClusterServiceTemplate>,
    /// AIMServices: the service controller's cache.
    pub services: CacheSlot<AIMService>,
    /// AIMTemplateCaches: the service controller's watch of them (the one that triggers it).
    pub caches: CacheSlot<AIMTemplateCache>,
    /// AIMArtifacts: the template cache controller's watch of them (the one that triggers it).
    pub artifacts: CacheSlot<AIMArtifact>,
    /// AIMRuntimeConfigs (all namespaces).
    pub runtime_configs: CacheSlot<AIMRuntimeConfig>,
    /// AIMClusterRuntimeConfigs.
    pub cluster_runtime_configs: CacheSlot<AIMClusterRuntimeConfig>,
    /// The AIM inference pods (labelled with their InferenceService and AIMService): the
    /// service controller's watch of them.
    pub pods: Slot<Pod>,
}

impl std::fmt::Debug for Informers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informers")
            .field("models", &self.models.get().is_some())
            .field("templates", &self.templates.get().is_some())
            .field("services", &self.services.get().is_some())
            .field("caches", &self.caches.get().is_some())
            .field("artifacts", &self.artifacts.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Informers {
    /// The well-formed objects of `slot`'s cache in `namespace` (every one for `None`), cloned;
    /// `None` when no cache is configured or it has not listed within [`CACHE_WAIT`].
    pub async fn read<K>(slot: &CacheSlot<K>, namespace: Option<&str>) -> Option<Vec<K>>
    where
        K: Resource<DynamicType = ()> + Clone + 'static,
    {
        let store = slot.ready().await?;
        Some(
            store
                .state()
                .iter()
                .filter_map(|g| g.0.as_ref().ok())
                .filter(|o| namespace.is_none() || o.meta().namespace.as_deref() == namespace)
                .cloned()
                .collect(),
        )
    }

    /// The objects of `api` (scoped to `namespace`, or every namespace for `None`): from
    /// `slot`'s cache when it is ready, else listed from the API server.
    pub async fn list<K>(
        slot: &CacheSlot<K>,
        api: Api<K>,
        namespace: Option<&str>,
    ) -> Result<Vec<K>, kube::Error>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + 'static,
    {
        match Self::read(slot, namespace).await {
            Some(objects) => Ok(objects),
            None => Ok(api.list(&ListParams::default()).await?.items),
        }
    }

    /// The namespaced kind `N` in `ns` and every object of its cluster twin `C` (AIMModel and
    /// AIMClusterModel, the two template kinds), each as [`Self::list`] reads it.
    #[allow(clippy::type_complexity)] // the two kinds' results, side by side
    pub async fn list_pair<N, C>(
        client: &Client,
        ns: &str,
        (namespaced, cluster): (&CacheSlot<N>, &CacheSlot<C>),
    ) -> (Result<Vec<N>, kube::Error>, Result<Vec<C>, kube::Error>)
    where
        N: Resource<DynamicType = (), Scope = NamespaceResourceScope>,
        N: Clone + DeserializeOwned + Debug + 'static,
        C: Resource<DynamicType = (), Scope = ClusterResourceScope>,
        C: Clone + DeserializeOwned + Debug + 'static,
    {
        futures::join!(
            Self::list(namespaced, Api::namespaced(client.clone(), ns), Some(ns)),
            Self::list(cluster, Api::all(client.clone()), None),
        )
    }

    /// The cached object `name` (in `namespace`): `Some(None)` when the cache has no
    /// well-formed object of that name, `None` when there is no ready cache (ask the server).
    pub async fn get<K>(
        slot: &CacheSlot<K>,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Option<Arc<K>>>
    where
        K: Resource<DynamicType = ()> + Clone + 'static,
    {
        let store = slot.ready().await?;
        let key = match namespace {
            Some(ns) => ObjectRef::new(name).within(ns),
            None => ObjectRef::new(name),
        };
        Some(
            store
                .get(&key)
                .and_then(|g| g.0.as_ref().ok().map(|o| Arc::new(o.clone()))),
        )
    }
}

/// Whether `store` has its first list, waiting at most [`CACHE_WAIT`]; see the module
/// contract.
pub async fn ready<K>(store: &Store<K>) -> bool
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    matches!(
        tokio::time::timeout(CACHE_WAIT, store.wait_until_ready()).await,
        Ok(Ok(()))
    )
}

#[cfg(test)]
mod tests {
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;
    use serde_json::json;

    use super::*;

    fn model(name: &str, ns: &str) -> DeserializeGuard<AIMModel> {
        serde_json::from_value(
            json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
            "metadata": {"name": name, "namespace": ns}, "spec": {"image": "r/i:1"}}),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn reads_answer_from_a_ready_cache_and_none_without_one() {
        let empty: CacheSlot<AIMModel> = Slot::default();
        assert!(
            Informers::read(&empty, None).await.is_none(),
            "no cache: list"
        );
        let (reader, mut writer) = reflector::store();
        writer.apply_watcher_event(&Event::Init);
        for (n, ns) in [("a", "x"), ("b", "y")] {
            writer.apply_watcher_event(&Event::InitApply(model(n, ns)));
        }
        let broken: DeserializeGuard<AIMModel> = serde_json::from_value(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
            "metadata": {"name": "bad", "namespace": "x"}, "spec": {"image": 5}}))
        .unwrap();
        assert!(broken.0.is_err());
        writer.apply_watcher_event(&Event::InitApply(broken));
        writer.apply_watcher_event(&Event::InitDone);
        let slot = Slot::default();
        assert!(slot.set(reader).is_ok());
        let in_x: Vec<String> = Informers::read(&slot, Some("x"))
            .await
            .unwrap()
            .iter()
            .map(kube::ResourceExt::name_any)
            .collect();
        assert_eq!(in_x, ["a"], "namespace-scoped, malformed skipped");
        assert_eq!(Informers::read(&slot, None).await.unwrap().len(), 2);
        assert!(
            Informers::get(&slot, Some("y"), "b")
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            Informers::get(&slot, Some("x"), "b")
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            Informers::get(&slot, Some("x"), "bad")
                .await
                .unwrap()
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_cache_that_never_lists_costs_one_wait_not_one_per_read() {
        // The writer stays: the store is never ready, and never told its writer went away.
        let (reader, _writer) = reflector::store::<DeserializeGuard<AIMModel>>();
        let slot: CacheSlot<AIMModel> = Slot::default();
        assert!(slot.set(reader).is_ok());
        assert!(
            slot.ready_within(Duration::from_millis(20)).await.is_none(),
            "not listed"
        );
        // Every later read answers on its first poll.
        assert!(matches!(
            Informers::read(&slot, None).now_or_never(),
            Some(None)
        ));
        assert!(matches!(
            Informers::get(&slot, None, "a").now_or_never(),
            Some(None)
        ));
    }
}
