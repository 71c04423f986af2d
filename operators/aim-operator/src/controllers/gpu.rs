//! GPU changes: the Node cache and the re-enqueueing of templates that need a GPU.
//!
//! Contract: the Node cache re-enqueues templates that need a GPU only when a Node's GPU
//! labels (`amd.com/*`, `beta.amd.com/*`, `nvidia.com/*`) or GPU capacity/allocatable change,
//! or a GPU Node is deleted ([`GpuNodes`]); the trigger fires after the cache's store has taken
//! the event, so the reconciles see the new Nodes. (`reconcile_on` needs kube's
//! `unstable-runtime` feature.)

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::watch;

use super::{Guarded, object_ref};
use crate::template::TemplateKind;

/// The GPU-relevant part of a Node: GPU labels and GPU capacity/allocatable.
pub fn gpu_fingerprint(node: &Node) -> u64 {
    let gpu_key = |k: &str| {
        k.starts_with("amd.com/") || k.starts_with("beta.amd.com/") || k.starts_with("nvidia.com/")
    };
    let labels: BTreeMap<&String, &String> =
        node.labels().iter().filter(|(k, _)| gpu_key(k)).collect();
    let status = node.status.as_ref();
    let resources =
        |m: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
            m.into_iter()
                .flatten()
                .filter(|(k, _)| gpu_key(k))
                .map(|(k, v)| (k.clone(), v.0.clone()))
                .collect::<BTreeMap<_, _>>()
        };
    let mut h = DefaultHasher::new();
    labels.hash(&mut h);
    resources(status.and_then(|s| s.capacity.as_ref())).hash(&mut h);
    resources(status.and_then(|s| s.allocatable.as_ref())).hash(&mut h);
    h.finish()
}

/// Tracks the GPU part of every Node to tell when GPU templates must be re-enqueued: a Node
/// whose GPU labels or capacity changed, a GPU Node deleted, or GPU Nodes missing from a
/// re-list (deleted while the watch was down). Nodes without GPU keys never count.
#[derive(Debug, Default)]
pub struct GpuNodes {
    seen: HashMap<String, u64>,
    relisted: Option<HashSet<String>>,
}

impl GpuNodes {
    /// Records `event`; true when the GPUs the cluster offers may have changed.
    pub fn observe(&mut self, event: &watcher::Event<Node>) -> bool {
        let empty = gpu_fingerprint(&Node::default());
        match event {
            watcher::Event::Init => {
                self.relisted = Some(HashSet::new());
                false
            }
            watcher::Event::InitApply(node) | watcher::Event::Apply(node) => {
                let name = node.name_any();
                if let Some(listed) = &mut self.relisted {
                    listed.insert(name.clone());
                }
                let fp = gpu_fingerprint(node);
                self.seen.insert(name, fp).unwrap_or(empty) != fp
            }
            watcher::Event::Delete(node) => self
                .seen
                .remove(&node.name_any())
                .is_some_and(|fp| fp != empty),
            watcher::Event::InitDone => {
                let Some(listed) = self.relisted.take() else {
                    return false;
                };
                let mut gone_gpu = false;
                self.seen.retain(|name, fp| {
                    let keep = listed.contains(name);
                    gone_gpu |= !keep && *fp != empty;
                    keep
                });
                gone_gpu
            }
        }
    }
}

/// Re-enqueues every template that needs a GPU whenever `changes` ticks (the Node cache
/// updated its store first, so the reconciles see the new Nodes).
pub(super) fn gpu_templates<K: TemplateKind>(
    c: Controller<Guarded<K>>,
    changes: watch::Receiver<u64>,
) -> Controller<Guarded<K>> {
    let store = c.store();
    let ticks = futures::stream::unfold(changes, |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    });
    let refs = ticks.flat_map(move |()| {
        let refs: Vec<ObjectRef<Guarded<K>>> = store
            .state()
            .iter()
            .filter_map(|g| g.0.as_ref().ok())
            .filter(|t| {
                t.common()
                    .parameters
                    .hardware
                    .as_ref()
                    .is_some_and(|h| h.gpu.is_some())
            })
            .map(|t| object_ref::<K>(&t.name_any(), t.meta().namespace.as_deref()))
            .collect();
        futures::stream::iter(refs)
    });
    c.reconcile_on(refs)
}

/// The Node cache: a reflector whose events, after the store has taken them, tick `changes`
/// when the cluster's GPUs may have changed.
pub(super) fn node_cache(
    api: Api<Node>,
    changes: watch::Sender<u64>,
) -> (Store<Node>, BoxFuture<'static, ()>) {
    let (reader, writer) = reflector::store();
    let stream =
        reflector::reflector(writer, watcher(api, watcher::Config::default())).default_backoff();
    let fut = Box::pin(async move {
        let mut tracker = GpuNodes::default();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(e) => {
                    if tracker.observe(&e) {
                        changes.send_modify(|n| *n = n.wrapping_add(1));
                    }
                }
                Err(e) => tracing::debug!(error = %e, "node cache watch"),
            }
        }
    });
    (reader, fut)
}

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;

    use super::*;

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Node::default()
        }
    }

    #[test]
    fn gpu_node_changes() {
        use watcher::Event as E;
        let mut t = GpuNodes::default();
        let gpu = node("g", &[("amd.com/gpu.device-id", "74a1")]);
        let plain = node("p", &[("kubernetes.io/os", "linux")]);
        assert!(!t.observe(&E::Init));
        assert!(t.observe(&E::InitApply(gpu.clone())), "a GPU node appears");
        assert!(
            !t.observe(&E::InitApply(plain.clone())),
            "a plain node does not count"
        );
        assert!(!t.observe(&E::InitDone));
        assert!(!t.observe(&E::Apply(gpu.clone())), "unchanged GPU part");
        let relabelled = node("p", &[("kubernetes.io/os", "windows")]);
        assert!(!t.observe(&E::Apply(relabelled)), "non-GPU labels");
        assert!(!t.observe(&E::Delete(plain)), "a plain node leaves");
        assert!(t.observe(&E::Delete(gpu.clone())), "a GPU node leaves");
        // Deleted while the watch was down: missing from the re-list.
        assert!(t.observe(&E::Apply(gpu)));
        assert!(!t.observe(&E::Init));
        assert!(t.observe(&E::InitDone), "the GPU node is gone");
    }
}
