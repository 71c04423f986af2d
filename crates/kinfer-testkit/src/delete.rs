//! DELETE and deletecollection: preconditions, propagation policies and finalizers.
//!
//! Contract: an object without finalizers is removed at once (DELETED event) unless the policy
//! is Foreground, which adds the `foregroundDeletion` finalizer; an object with finalizers gets
//! `deletionTimestamp` (MODIFIED event) and is removed by the write that clears the last one.
//! `Orphan` strips the owner's reference from its dependents first. Namespaces always go through
//! termination: their contents are deleted by the garbage collector, then the namespace.

use serde_json::{Value, json};

use crate::commit::{Fields, commit, on_removed};
use crate::error::ApiError;
use crate::resources::ResourceDef;
use crate::state::{State, now};

/// Delete options (query parameters or a DeleteOptions body).
#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    /// `Background`, `Foreground` or `Orphan`.
    pub propagation: Option<String>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
}

impl DeleteOpts {
    /// Merge a `DeleteOptions` body.
    #[must_use]
    pub fn with_body(mut self, body: &Value) -> Self {
        if let Some(p) = body["propagationPolicy"].as_str() {
            self.propagation = Some(p.to_owned());
        }
        if body["orphanDependents"].as_bool() == Some(true) {
            self.propagation = Some("Orphan".to_owned());
        }
        if let Some(u) = body["preconditions"]["uid"].as_str() {
            self.uid = Some(u.to_owned());
        }
        if let Some(r) = body["preconditions"]["resourceVersion"].as_str() {
            self.resource_version = Some(r.to_owned());
        }
        if body["dryRun"].as_array().is_some_and(|a| !a.is_empty()) {
            self.dry_run = true;
        }
        self
    }
}

/// Whether the answer is final (200) or pending (202), with the object.
#[derive(Debug)]
pub struct Deleted {
    /// The object, as removed or as marked for deletion.
    pub object: Value,
    /// Still present (finalizers pending).
    pub pending: bool,
}

/// Delete one object.
pub fn delete(
    state: &State,
    def: &ResourceDef,
    ns: &str,
    name: &str,
    opts: &DeleteOpts,
) -> Result<Deleted, ApiError> {
    let k = (
        if def.namespaced {
            ns.to_owned()
        } else {
            String::new()
        },
        name.to_owned(),
    );
    let bucket = def.bucket();
    if opts.propagation.as_deref() == Some("Orphan") && !opts.dry_run {
        orphan_dependents(state, def, ns, name);
    }
    let mut txn = state.store.txn();
    let Some(old) = txn.get(&bucket, &k).cloned() else {
        return Err(ApiError::not_found(&def.group, &def.plural, name));
    };
    let uid_ok = opts
        .uid
        .as_deref()
        .is_none_or(|u| Some(u) == old["metadata"]["uid"].as_str());
    let rv_ok = opts
        .resource_version
        .as_deref()
        .is_none_or(|r| Some(r) == old["metadata"]["resourceVersion"].as_str());
    if !uid_ok || !rv_ok {
        let what = if uid_ok { "ResourceVersion" } else { "UID" };
        return Err(ApiError::conflict(
            &def.group,
            &def.plural,
            name,
            &format!("Precondition failed: {what} mismatch"),
        ));
    }
    let mut new = old.clone();
    if opts.propagation.as_deref() == Some("Foreground") {
        let f = new["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !f.iter().any(|x| x == "foregroundDeletion") {
            let mut f = f;
            f.push(json!("foregroundDeletion"));
            new["metadata"]["finalizers"] = Value::Array(f);
        }
    }
    let has_finalizers = new["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|a| !a.is_empty());
    if has_finalizers || def.plural == "namespaces" {
        if old["metadata"].get("deletionTimestamp").is_some() && new == old {
            return Ok(Deleted {
                object: old,
                pending: true,
            });
        }
        // Deletion metadata is written directly: no manager owns it.
        let mut marked = new;
        marked["metadata"]["deletionTimestamp"] = json!(now());
        marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        if def.plural == "namespaces" {
            marked["status"]["phase"] = json!("Terminating");
        }
        if opts.dry_run {
            return Ok(Deleted {
                object: marked,
                pending: true,
            });
        }
        let object = txn.put(&bucket, k, marked);
        drop(txn);
        state.counters.record_mutation(&def.plural);
        state.gc.notify_one();
        return Ok(Deleted {
            object,
            pending: true,
        });
    }
    if opts.dry_run {
        return Ok(Deleted {
            object: old,
            pending: false,
        });
    }
    let gone = txn.remove(&bucket, &k).unwrap_or(old);
    drop(txn);
    on_removed(state, def, &gone);
    Ok(Deleted {
        object: gone,
        pending: false,
    })
}

/// Remove the owner reference to `ns/name` of `def` from every dependent.
fn orphan_dependents(state: &State, def: &ResourceDef, ns: &str, name: &str) {
    let k = (
        if def.namespaced {
            ns.to_owned()
        } else {
            String::new()
        },
        name.to_owned(),
    );
    let uid = {
        let txn = state.store.txn();
        txn.get(&def.bucket(), &k)
            .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_owned))
    };
    let Some(uid) = uid else { return };
    let mut txn = state.store.txn();
    let mut updates = Vec::new();
    for (bucket, objects) in txn.buckets() {
        for (key, obj) in objects {
            let refs = obj["metadata"]["ownerReferences"].as_array();
            if refs.is_some_and(|r| r.iter().any(|o| o["uid"] == json!(uid))) {
                updates.push((bucket.clone(), key.clone(), obj.clone()));
            }
        }
    }
    for (bucket, key, old) in updates {
        let Some(dep_def) = state.def_for_bucket(&bucket) else {
            continue;
        };
        let mut new = old.clone();
        if let Some(refs) = new["metadata"]["ownerReferences"].as_array_mut() {
            refs.retain(|o| o["uid"] != json!(uid));
        }
        let _ = key;
        if let Err(e) = commit(
            &mut txn,
            state,
            &dep_def,
            Some(&old),
            new,
            None,
            Fields::Update("garbage-collector".to_owned()),
            false,
        ) {
            tracing::warn!(error = %e, "orphaning a dependent failed");
        }
    }
}
