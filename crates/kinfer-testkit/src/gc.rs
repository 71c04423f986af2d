//! The garbage collector: a background task woken after deletions and owner-reference writes.
//!
//! Contract, per pass until nothing changes:
//! - a dependent all of whose owners (by uid) are gone is deleted (background);
//! - a dependent of an owner in foreground deletion is deleted; the owner's
//!   `foregroundDeletion` finalizer is removed once no dependent with `blockOwnerDeletion`
//!   remains, which completes the owner's deletion if it has no other finalizer;
//! - a terminating namespace has its contents deleted, and is removed once empty.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::commit::{Fields, commit};
use crate::delete::{DeleteOpts, delete};
use crate::state::{State, name_of, namespace_of};
use crate::store::Bucket;

#[derive(Debug)]
enum Action {
    Delete(Bucket, String, String),
    DropForeground(Bucket, String, String),
    RemoveNamespace(String),
}

/// Run forever, one pass per wake-up.
pub async fn run(state: Arc<State>) {
    loop {
        state.gc.notified().await;
        for _ in 0..100 {
            if !pass(&state) {
                break;
            }
        }
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

/// One pass; returns whether anything was done.
pub fn pass(state: &State) -> bool {
    let actions = {
        let txn = state.store.txn();
        // uid -> (deleting, foreground)
        let mut owners: HashMap<String, (bool, bool)> = HashMap::new();
        for (_, objects) in txn.buckets() {
            for o in objects.values() {
                if let Some(uid) = o["metadata"]["uid"].as_str() {
                    owners.insert(
                        uid.to_owned(),
                        (is_deleting(o), has_finalizer(o, "foregroundDeletion")),
                    );
                }
            }
        }
        let mut blocked: HashMap<String, bool> = HashMap::new();
        let mut actions = Vec::new();
        let mut namespaces_used: HashMap<String, bool> = HashMap::new();
        for (bucket, objects) in txn.buckets() {
            for o in objects.values() {
                let ns = namespace_of(o);
                if !ns.is_empty() {
                    namespaces_used.insert(ns.to_owned(), true);
                }
                let Some(refs) = o["metadata"]["ownerReferences"]
                    .as_array()
                    .filter(|r| !r.is_empty())
                else {
                    continue;
                };
                for r in refs {
                    if r["blockOwnerDeletion"].as_bool() == Some(true)
                        && let Some(u) = r["uid"].as_str()
                    {
                        blocked.insert(u.to_owned(), true);
                    }
                }
                if is_deleting(o) {
                    continue;
                }
                let uids: Vec<&str> = refs.iter().filter_map(|r| r["uid"].as_str()).collect();
                let all_gone = uids.iter().all(|u| !owners.contains_key(*u));
                let foreground = uids
                    .iter()
                    .any(|u| owners.get(*u).is_some_and(|(d, f)| *d && *f));
                if all_gone || foreground {
                    actions.push(Action::Delete(
                        bucket.clone(),
                        ns.to_owned(),
                        name_of(o).to_owned(),
                    ));
                }
            }
        }
        for (bucket, objects) in txn.buckets() {
            for o in objects.values() {
                if is_deleting(o) && has_finalizer(o, "foregroundDeletion") {
                    let uid = o["metadata"]["uid"].as_str().unwrap_or_default();
                    if !blocked.contains_key(uid) {
                        actions.push(Action::DropForeground(
                            bucket.clone(),
                            namespace_of(o).to_owned(),
                            name_of(o).to_owned(),
                        ));
                    }
                }
            }
        }
        let ns_bucket: Bucket = (String::new(), "namespaces".to_owned());
        for ns in txn.list(&ns_bucket, None) {
            if !is_deleting(ns) {
                continue;
            }
            let name = name_of(ns).to_owned();
            if namespaces_used.contains_key(&name) {
                for (bucket, objects) in txn.buckets() {
                    for ((ons, oname), o) in objects {
                        if *ons == name && !is_deleting(o) {
                            actions.push(Action::Delete(
                                bucket.clone(),
                                name.clone(),
                                oname.clone(),
                            ));
                        }
                    }
                }
            } else {
                actions.push(Action::RemoveNamespace(name));
            }
        }
        actions
    };
    let mut did = false;
    for a in actions {
        did |= act(state, a);
    }
    did
}

fn act(state: &State, action: Action) -> bool {
    match action {
        Action::Delete(bucket, ns, name) => {
            let Some(def) = state.def_for_bucket(&bucket) else {
                return false;
            };
            let opts = DeleteOpts {
                propagation: Some("Background".to_owned()),
                ..DeleteOpts::default()
            };
            delete(state, &def, &ns, &name, &opts).is_ok()
        }
        Action::DropForeground(bucket, ns, name) => {
            let Some(def) = state.def_for_bucket(&bucket) else {
                return false;
            };
            let mut txn = state.store.txn();
            let Some(old) = txn.get(&bucket, &(ns, name)).cloned() else {
                return false;
            };
            let mut new = old.clone();
            if let Some(f) = new["metadata"]["finalizers"].as_array_mut() {
                f.retain(|x| x != "foregroundDeletion");
            }
            commit(
                &mut txn,
                state,
                &def,
                Some(&old),
                new,
                None,
                Fields::Keep,
                false,
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
