//! The metrics-auth ClusterRoleBindings this operator made, as its controllers' watches of
//! them (label-scoped to the operator's marker) report them, so fetch reads a ModelService's
//! binding from memory instead of a GET per reconcile.
//!
//! Contract: [`ClusterBindings::observe`] follows the events of one or more watches of the
//! marked bindings (one per watched namespace's controller, each over every namespace: they
//! see the same objects), each identified by a scope. A (re-)list of any scope replaces the
//! whole view when it completes, so a binding deleted while the watches were down does not
//! linger; until a first list has completed the cache answers nothing. [`ClusterBindings::get`]
//! answers only for a binding it holds: one it does not hold may still exist unmarked
//! (upstream's, to adopt) or be newer than the view, so the caller reads that by name.
//! Bindings are held without `managedFields` (fetch decides ownership from labels and
//! subjects, never from field managers), so the view costs only what fetch reads.

use std::collections::HashMap;
use std::sync::RwLock;

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::ResourceExt;
use kube::runtime::watcher::Event;

#[derive(Debug, Default)]
struct Inner {
    /// Whether a list has completed.
    synced: bool,
    /// Bindings of a list in progress, per scope.
    pending: HashMap<Option<String>, HashMap<String, ClusterRoleBinding>>,
    /// By name.
    bindings: HashMap<String, ClusterRoleBinding>,
}

/// The view of this operator's ClusterRoleBindings; see the module contract.
#[derive(Debug, Default)]
pub struct ClusterBindings {
    inner: RwLock<Inner>,
}

impl ClusterBindings {
    /// An empty view (answers nothing until a list has completed).
    pub fn new() -> Self {
        Self::default()
    }

    /// Follow one event of the watch of `scope` (its controller's namespace, `None` for all).
    pub fn observe(&self, scope: Option<&str>, event: &Event<ClusterRoleBinding>) {
        let mut inner = self
            .inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let scope = scope.map(str::to_owned);
        match event {
            Event::Apply(b) => {
                inner.bindings.insert(b.name_any(), slim(b));
            }
            Event::Delete(b) => {
                inner.bindings.remove(&b.name_any());
            }
            Event::Init => {
                inner.pending.insert(scope, HashMap::new());
            }
            Event::InitApply(b) => {
                inner
                    .pending
                    .entry(scope)
                    .or_default()
                    .insert(b.name_any(), slim(b));
            }
            Event::InitDone => {
                inner.bindings = inner.pending.remove(&scope).unwrap_or_default();
                inner.synced = true;
            }
        }
    }

    /// The binding `name`, when the view holds it; `None` when it does not (or has not listed
    /// yet): read it by name then.
    pub fn get(&self, name: &str) -> Option<ClusterRoleBinding> {
        let inner = self
            .inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner
            .synced
            .then(|| inner.bindings.get(name).cloned())
            .flatten()
    }
}

/// `b` as the view keeps it: without its `managedFields`, which can outweigh the rest.
fn slim(b: &ClusterRoleBinding) -> ClusterRoleBinding {
    let mut b = b.clone();
    b.metadata.managed_fields = None;
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(name: &str) -> ClusterRoleBinding {
        ClusterRoleBinding {
            metadata: kube::core::ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn answers_after_a_list_and_a_relist_drops_what_went_meanwhile() {
        let view = ClusterBindings::new();
        view.observe(None, &Event::Init);
        view.observe(None, &Event::InitApply(binding("a")));
        assert!(view.get("a").is_none(), "still listing");
        view.observe(None, &Event::InitDone);
        assert!(view.get("a").is_some());
        view.observe(Some("ns"), &Event::Apply(binding("b")));
        assert!(view.get("b").is_some());
        view.observe(None, &Event::Delete(binding("b")));
        assert!(view.get("b").is_none());

        // Another controller's watch re-lists: `a` was deleted while it was down.
        view.observe(Some("ns"), &Event::Init);
        view.observe(Some("ns"), &Event::InitApply(binding("c")));
        assert!(
            view.get("a").is_some(),
            "the old view serves until the list completes"
        );
        view.observe(Some("ns"), &Event::InitDone);
        assert!(view.get("a").is_none());
        assert!(view.get("c").is_some());
    }

    #[test]
    fn bindings_are_held_without_managed_fields() {
        let mut b = binding("a");
        b.metadata.managed_fields = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry {
                manager: Some("kubectl".to_owned()),
                operation: Some("Update".to_owned()),
                ..Default::default()
            },
        ]);
        b.metadata.labels = Some([("k".to_owned(), "v".to_owned())].into());
        let view = ClusterBindings::new();
        view.observe(None, &Event::Init);
        view.observe(None, &Event::InitApply(b.clone()));
        view.observe(None, &Event::InitDone);
        view.observe(None, &Event::Apply(b));
        let held = view.get("a").expect("held");
        assert_eq!(held.metadata.managed_fields, None);
        assert_eq!(held.labels().get("k").map(String::as_str), Some("v"));
    }
}
