//! DELETE and deletecollection: preconditions, propagation policies and finalizers.
//!
//! Contract: an object without finalizers is removed at once (DELETED event) unless the policy
//! is Foreground, which adds the `foregroundDeletion` finalizer; an object with finalizers gets
//! `deletionTimestamp` (MODIFIED event) and is removed by the write that clears the last one.
//! `Orphan` strips the owner's reference from its dependents once the preconditions passed,
//! under the same lock. Namespaces always go through
//! termination: their contents are deleted by the garbage collector, then the namespace.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::commit::{Ctx, Fields, commit, on_removed};
use crate::error::ApiError;
use crate::resources::ResourceDef;
use crate::state::{State, now};
use crate::store::Txn;

/// The finalizer that holds a deleted CRD until its instances are gone.
pub const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

fn add_finalizer(v: &mut Value, name: &str) {
    let mut f = v["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !f.iter().any(|x| x == name) {
        f.push(json!(name));
        v["metadata"]["finalizers"] = Value::Array(f);
    }
}

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
    let k = crate::commit::key(def, ns, name);
    let bucket = def.bucket();
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
    if opts.propagation.as_deref() == Some("Orphan")
        && !opts.dry_run
        && let Some(uid) = old["metadata"]["uid"].as_str()
    {
        orphan_dependents(&mut txn, state, uid);
    }
    let mut new = old.clone();
    if opts.propagation.as_deref() == Some("Foreground") {
        add_finalizer(&mut new, "foregroundDeletion");
    }
    if def.plural == "customresourcedefinitions"
        && old["metadata"].get("deletionTimestamp").is_none()
    {
        // As the real CRD storage does: instances are deleted before the kind stops being served.
        add_finalizer(&mut new, CRD_CLEANUP);
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
        // Deletion metadata is written directly: no manager owns it. A repeated DELETE keeps
        // the first deletionTimestamp.
        let mut marked = new;
        if marked["metadata"].get("deletionTimestamp").is_none() {
            marked["metadata"]["deletionTimestamp"] = json!(now());
            marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
            // The real server bumps a generational object's generation when it first marks it:
            // its controllers' behaviour changes from here on.
            if let Some(g) = marked["metadata"]["generation"].as_i64().filter(|g| *g > 0) {
                marked["metadata"]["generation"] = json!(g + 1);
            }
        }
        if def.plural == "namespaces" {
            marked["status"]["phase"] = json!("Terminating");
        }
        if opts.dry_run {
            return Ok(Deleted {
                object: marked,
                pending: true,
            });
        }
        let object = Arc::unwrap_or_clone(txn.put(&bucket, k, marked));
        drop(txn);
        state.counters.record_mutation(&def.plural);
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
    let gone = txn.remove(&bucket, &k).map_or(old, Arc::unwrap_or_clone);
    drop(txn);
    on_removed(state, def, &gone);
    Ok(Deleted {
        object: gone,
        pending: false,
    })
}

/// Remove owner references to `uid` from every dependent (under the caller's lock, after the
/// delete preconditions passed).
fn orphan_dependents(txn: &mut Txn<'_>, state: &State, uid: &str) {
    let updates: Vec<_> = txn
        .dependents_of(uid)
        .into_iter()
        .filter_map(|(b, k)| txn.get(&b, &k).cloned().map(|o| (b, o)))
        .collect();
    for (bucket, old) in updates {
        let Some(dep_def) = state.def_for_bucket(&bucket) else {
            continue;
        };
        let mut new = old.clone();
        if let Some(refs) = new["metadata"]["ownerReferences"].as_array_mut() {
            refs.retain(|o| o["uid"].as_str() != Some(uid));
        }
        if let Err(e) = commit(
            txn,
            &Ctx {
                state,
                def: &dep_def,
                sub: None,
                dry_run: false,
            },
            Some(&old),
            new,
            Fields::Update("garbage-collector".to_owned()),
        ) {
            tracing::warn!(error = %e, "orphaning a dependent failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Options;

    fn has_foreground(v: &Value) -> bool {
        v["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.iter().any(|x| x == "foregroundDeletion"))
    }

    #[test]
    fn a_repeated_delete_keeps_the_first_deletion_timestamp() {
        let state = State::new(Options::default());
        let def = state
            .registry()
            .get("", "v1", "namespaces")
            .cloned()
            .unwrap_or_else(|| unreachable!("namespaces are built in"));
        let old = json!({"metadata": {"name": "n", "uid": "u", "finalizers": ["x"],
            "deletionTimestamp": "2000-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0}});
        state
            .store
            .txn()
            .put(&def.bucket(), (String::new(), "n".to_owned()), old);
        // Foreground adds a finalizer, so this DELETE does write.
        let opts = DeleteOpts {
            propagation: Some("Foreground".to_owned()),
            ..DeleteOpts::default()
        };
        let d = delete(&state, &def, "", "n", &opts).unwrap_or_else(|e| panic!("{e}"));
        assert!(has_foreground(&d.object));
        assert!(d.pending);
        assert_eq!(
            d.object["metadata"]["deletionTimestamp"],
            "2000-01-01T00:00:00Z"
        );
    }
}
