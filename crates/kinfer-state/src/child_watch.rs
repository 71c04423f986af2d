//! The watch of one kind of children, feeding an [`OwnerIndex`] and triggering the owners'
//! reconciles: the one stream per owned kind that both `Controller::owns_stream_with` and the
//! engine's child cache read, so a no-op reconcile costs no API request for its children.
//!
//! Contract of [`child_watch`] and [`child_watch_as`] (the same with a feed of the caller's,
//! e.g. one keeping objects without a controller owner by name, for kinds a parent labels but
//! cannot own):
//! - One watch of `kind` in `namespace` (all namespaces when `None` or for cluster-scoped
//!   kinds) with the given watcher configuration (operators select their marker label), with
//!   kube's default backoff after errors.
//! - Every object has its `managedFields` cut down before it is kept ([`keep_own_fields`]):
//!   only the `Apply` entries of the controller's own field manager on the main resource stay,
//!   which is all the engine reads ([`crate::diff`] for fields it stopped sending,
//!   [`crate::handover`] for fields to hand over). The other entries are most of an object's
//!   metadata and nothing reads them.
//! - Every event goes to the index ([`OwnerIndex::follow`], scoped to `namespace`, as a feed
//!   of its own) before the touched object is passed on, so the reconcile it triggers already
//!   reads it.
//! - The stream yields the touched objects (applied, listed and deleted), as
//!   `Controller::owns_stream_with` expects, with the kind's `ApiResource` as dynamic type;
//!   after a re-list also the objects this watch reported before that the list no longer has
//!   (deleted while the watch was down: their delete event never comes; reported by every
//!   watch that missed it, even when another watch of the same scope saw it go first), so
//!   their owners are reconciled and repair them.

use std::sync::Arc;

use futures::{Stream, TryStreamExt};
use kube::Client;
use kube::api::Api;
use kube::core::DynamicObject;
use kube::runtime::watcher::Event;
use kube::runtime::{WatchStreamExt, watcher};

use crate::pipeline::ChildKind;
use crate::store::{Feed, OwnerIndex};

/// Drops every `managedFields` entry of `obj` but `manager`'s `Apply` entries on the main
/// resource; see the module contract.
pub fn keep_own_fields(obj: &mut DynamicObject, manager: &str) {
    if let Some(entries) = obj.metadata.managed_fields.as_mut() {
        entries.retain(|e| {
            e.manager.as_deref() == Some(manager)
                && e.operation.as_deref() == Some("Apply")
                && e.subresource.as_deref().is_none_or(str::is_empty)
        });
        if entries.is_empty() {
            obj.metadata.managed_fields = None;
        }
    }
}

/// The watch of `kind`'s children (objects with a controller owner); see the module
/// contract.
pub fn child_watch(
    client: &Client,
    kind: &ChildKind,
    namespace: Option<&str>,
    config: watcher::Config,
    index: Arc<OwnerIndex>,
    manager: &str,
) -> impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static {
    let feed = index.feed();
    child_watch_as(client, kind, namespace, config, index, feed, manager)
}

/// The watch of `kind` feeding `index` as `feed`: [`OwnerIndex::named_feed`] for kinds a
/// parent labels but cannot own (cluster-scoped ones), kept by name too; see the module
/// contract.
pub fn child_watch_as(
    client: &Client,
    kind: &ChildKind,
    namespace: Option<&str>,
    config: watcher::Config,
    index: Arc<OwnerIndex>,
    feed: Feed,
    manager: &str,
) -> impl Stream<Item = Result<DynamicObject, watcher::Error>> + Send + 'static {
    let scope = namespace.filter(|_| kind.namespaced).map(str::to_owned);
    let api: Api<DynamicObject> = match &scope {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &kind.resource),
        None => Api::all_with(client.clone(), &kind.resource),
    };
    let manager = manager.to_owned();
    let kind = kind.clone();
    watcher(api, config)
        .default_backoff()
        .modify(move |obj| keep_own_fields(obj, &manager))
        .map_ok(move |event| {
            let dropped = index.follow(&kind, scope.as_deref(), feed, &event);
            let touched = match event {
                Event::Apply(o) | Event::InitApply(o) | Event::Delete(o) => Some(o),
                Event::Init | Event::InitDone => None,
            };
            futures::stream::iter(touched.into_iter().chain(dropped).map(Ok))
        })
        .try_flatten()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_our_main_apply_entries_are_kept() {
        let mut obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "managedFields": [
                {"manager": "op", "operation": "Apply", "fieldsV1": {"f:spec": {}}},
                {"manager": "op", "operation": "Update", "fieldsV1": {"f:spec": {}}},
                {"manager": "op", "operation": "Apply", "subresource": "status", "fieldsV1": {}},
                {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale"},
                {"manager": "op-handover", "operation": "Apply"}
            ]}
        }))
        .unwrap_or_else(|_| DynamicObject::new("d", &kube::core::ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&())));
        keep_own_fields(&mut obj, "op");
        let kept = obj.metadata.managed_fields.clone().unwrap_or_default();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].operation.as_deref(), Some("Apply"));
        keep_own_fields(&mut obj, "someone-else");
        assert!(obj.metadata.managed_fields.is_none());
    }
}
