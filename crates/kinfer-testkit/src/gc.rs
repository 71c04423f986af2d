//! The garbage collector: a background task woken by the store when a change needs its
//! attention. It looks only at the uids the store marked (see [`crate::store::Txn::take_dirty`])
//! and finds owners and dependents through the store's indexes, so its cost follows the changes,
//! not the number of objects.
//!
//! Contract, per pass until nothing is marked:
//! - a dependent none of whose owners exists is deleted (background). An owner is looked up by
//!   uid; a namespaced owner exists only for dependents in its own namespace (as for the real
//!   collector, a reference across namespaces is an absent owner), a cluster-scoped owner for
//!   every dependent;
//! - a dependent of an owner in foreground deletion is deleted; the owner's
//!   `foregroundDeletion` finalizer is removed once no dependent with `blockOwnerDeletion`
//!   remains, which completes the owner's deletion if it has no other finalizer;
//! - a deleted CRD has its instances deleted; its cleanup finalizer is removed (and the kind
//!   stops being served) once none remains;
//! - a terminating namespace has its contents deleted, and is removed once empty.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use crate::commit::{Ctx, Fields, commit};
use crate::delete::{CRD_CLEANUP, DeleteOpts, delete};
use crate::state::{State, name_of};
use crate::store::{Bucket, ObjKey, Txn};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Action {
    Delete(Bucket, ObjKey),
    DropFinalizer(Bucket, ObjKey, &'static str),
    RemoveNamespace(String),
}

/// Run forever, one pass per wake-up.
pub async fn run(state: Arc<State>) {
    loop {
        state.store.gc_signal().notified().await;
        while pass(&state) {}
    }
}

fn is_deleting(v: &Value) -> bool {
    v["metadata"].get("deletionTimestamp").is_some()
}

fn has_finalizer(v: &Value, f: &str) -> bool {
    v["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == f))
}

fn owner_refs(v: &Value) -> &[Value] {
    v["metadata"]["ownerReferences"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

/// The owner `uid` as seen from a dependent in `ns`: (deleting, foreground).
fn owner(txn: &Txn<'_>, uid: &str, ns: &str) -> Option<(bool, bool)> {
    txn.by_uid(uid)
        .filter(|(_, k, _)| k.0.is_empty() || k.0 == ns)
        .map(|(_, _, o)| (is_deleting(o), has_finalizer(o, "foregroundDeletion")))
}

#[derive(Default)]
struct Plan {
    actions: Vec<Action>,
    seen: HashSet<Action>,
}

impl Plan {
    fn push(&mut self, a: Action) {
        if self.seen.insert(a.clone()) {
            self.actions.push(a);
        }
    }
}

/// One pass over the marked uids; returns whether there were any.
pub fn pass(state: &State) -> bool {
    let actions = {
        let mut txn = state.store.txn();
        let dirty = txn.take_dirty();
        if dirty.is_empty() {
            return false;
        }
        let mut plan = Plan::default();
        for uid in &dirty {
            look_at(&txn, uid, &mut plan);
        }
        plan.actions
    };
    for a in actions {
        act(state, a);
    }
    true
}

fn look_at(txn: &Txn<'_>, uid: &str, plan: &mut Plan) {
    let Some((bucket, key, o)) = txn.by_uid(uid) else {
        // Gone: its dependents may have lost their last owner.
        for (b, k) in txn.dependents_of(uid) {
            if let Some(d) = txn.get(&b, &k) {
                dependent(txn, &b, &k, d, plan);
            }
        }
        return;
    };
    if !is_deleting(o) {
        dependent(txn, bucket, key, o, plan);
        return;
    }
    if has_finalizer(o, "foregroundDeletion") {
        let mut blocked = false;
        for (b, k) in txn.dependents_of(uid) {
            let Some(d) = txn.get(&b, &k).filter(|_| key.0.is_empty() || key.0 == k.0) else {
                continue;
            };
            blocked |= owner_refs(d)
                .iter()
                .any(|r| r["uid"] == uid && r["blockOwnerDeletion"].as_bool() == Some(true));
            if !is_deleting(d) {
                plan.push(Action::Delete(b, k));
            }
        }
        if !blocked {
            plan.push(Action::DropFinalizer(
                bucket.clone(),
                key.clone(),
                "foregroundDeletion",
            ));
        }
    }
    match (bucket.0.as_str(), bucket.1.as_str()) {
        ("", "namespaces") => {
            let mut empty = true;
            for (b, k, d) in txn.in_namespace(name_of(o)) {
                empty = false;
                if !is_deleting(d) {
                    plan.push(Action::Delete(b.clone(), k.clone()));
                }
            }
            if empty {
                plan.push(Action::RemoveNamespace(name_of(o).to_owned()));
            }
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") if has_finalizer(o, CRD_CLEANUP) => {
            let instances: Bucket = (
                o["spec"]["group"].as_str().unwrap_or_default().to_owned(),
                o["spec"]["names"]["plural"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
            let mut empty = true;
            for d in txn.list(&instances, None) {
                empty = false;
                if !is_deleting(d) {
                    let k = (
                        d["metadata"]["namespace"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        name_of(d).to_owned(),
                    );
                    plan.push(Action::Delete(instances.clone(), k));
                }
            }
            if empty {
                plan.push(Action::DropFinalizer(
                    bucket.clone(),
                    key.clone(),
                    CRD_CLEANUP,
                ));
            }
        }
        _ => {}
    }
}

/// A dependent none of whose owners exists, or with an owner in foreground deletion, goes.
fn dependent(txn: &Txn<'_>, bucket: &Bucket, key: &ObjKey, d: &Value, plan: &mut Plan) {
    let refs = owner_refs(d);
    if refs.is_empty() || is_deleting(d) {
        return;
    }
    let owners: Vec<_> = refs
        .iter()
        .map(|r| owner(txn, r["uid"].as_str().unwrap_or_default(), &key.0))
        .collect();
    let all_gone = owners.iter().all(Option::is_none);
    let foreground = owners.iter().flatten().any(|(d, f)| *d && *f);
    if all_gone || foreground {
        plan.push(Action::Delete(bucket.clone(), key.clone()));
    }
}

fn act(state: &State, action: Action) -> bool {
    match action {
        Action::Delete(bucket, (ns, name)) => {
            let Some(def) = state.def_for_bucket(&bucket) else {
                return false;
            };
            let opts = DeleteOpts {
                propagation: Some("Background".to_owned()),
                ..DeleteOpts::default()
            };
            delete(state, &def, &ns, &name, &opts).is_ok()
        }
        Action::DropFinalizer(bucket, key, finalizer) => {
            let Some(def) = state.def_for_bucket(&bucket) else {
                return false;
            };
            let mut txn = state.store.txn();
            let Some(old) = txn.get(&bucket, &key).cloned() else {
                return false;
            };
            let mut new = old.clone();
            if let Some(f) = new["metadata"]["finalizers"].as_array_mut() {
                f.retain(|x| x != finalizer);
            }
            commit(
                &mut txn,
                &Ctx {
                    state,
                    def: &def,
                    sub: None,
                    dry_run: false,
                },
                Some(&old),
                new,
                Fields::Keep,
            )
            .is_ok()
        }
        Action::RemoveNamespace(name) => {
            let Some(def) = state.def_for_bucket(&(String::new(), "namespaces".to_owned())) else {
                return false;
            };
            let mut txn = state.store.txn();
            let k = (String::new(), name);
            let Some(ns) = txn.get(&def.bucket(), &k) else {
                return false;
            };
            if ns["metadata"]["finalizers"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
                || txn.in_namespace(&k.1).next().is_some()
            {
                return false;
            }
            let gone = txn.remove(&def.bucket(), &k);
            drop(txn);
            if let Some(g) = gone {
                crate::commit::on_removed(state, &def, &g);
            }
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Options;
    use crate::write::{WriteOpts, create};
    use serde_json::json;

    /// The collector's work follows the changes: with thousands of owned objects stored, one
    /// write marks one uid, and a pass looks at that uid only.
    #[test]
    fn work_follows_changes_not_the_number_of_objects() {
        let state = State::new(Options::default());
        let reg = |g: &str, v: &str, p: &str| {
            state
                .registry()
                .get(g, v, p)
                .cloned()
                .unwrap_or_else(|| unreachable!("{p} is built in"))
        };
        let (nss, cms) = (reg("", "v1", "namespaces"), reg("", "v1", "configmaps"));
        let opts = WriteOpts {
            field_manager: Some("test".to_owned()),
            ..WriteOpts::default()
        };
        let ok = |r: Result<Value, crate::error::ApiError>| r.unwrap_or_else(|e| panic!("{e}"));
        ok(create(
            &state,
            &nss,
            "",
            json!({"metadata": {"name": "default"}}),
            &opts,
        ));
        let owner = ok(create(
            &state,
            &cms,
            "default",
            json!({"metadata": {"name": "owner"}}),
            &opts,
        ));
        let uid = owner["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let n = 3_000;
        for i in 0..n {
            let dep = json!({"metadata": {"name": format!("d{i}"), "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}});
            ok(create(&state, &cms, "default", dep, &opts));
            // Each owned create is one marked uid, which finds its owner alive.
            assert_eq!(state.store.txn().take_dirty().len(), 1);
        }
        assert_eq!(state.store.txn().dependents_of(&uid).len(), n);
        // Unowned writes mark nothing.
        ok(create(
            &state,
            &cms,
            "default",
            json!({"metadata": {"name": "free"}}),
            &opts,
        ));
        assert!(state.store.txn().take_dirty().is_empty());
        // Removing the owner marks it once; the pass deletes every dependent.
        let removed = state
            .store
            .txn()
            .remove(&cms.bucket(), &("default".to_owned(), "owner".to_owned()));
        assert!(removed.is_some());
        assert_eq!(state.store.txn().take_dirty().len(), 1);
        state.store.txn().mark_dirty(&uid);
        assert!(pass(&state));
        while pass(&state) {}
        let txn = state.store.txn();
        assert_eq!(txn.list(&cms.bucket(), Some("default")).len(), 1);
        assert!(txn.dependents_of(&uid).is_empty());
    }
}
