//! Applying a plan: prepare, order, diff, apply, delete.
//!
//! Contract:
//! - A plan listing one object twice is rejected (InvalidSpec `DuplicateKey`) before anything
//!   is written.
//! - Objects of a kind the cluster does not serve are skipped (their component already says
//!   so). A planned object missing from the listed children is looked up in the child store
//!   ([`crate::ChildStore::named`]: cluster-scoped objects labelled with their parent, served
//!   from a label-scoped watch), else read by name: when a live object of that name exists and
//!   is not ours (no controller owner reference to the parent, none of our labels), the plan is
//!   refused with InvalidSpec `NameTaken` unless [`Pipeline::adoptable`] says it may be taken
//!   over. The store is label-scoped, so only a hit saves the read: a foreign object of that
//!   name is invisible to it; an object served from the store is applied with its UID, so the
//!   server refuses the apply if it was replaced meanwhile: that refusal (422 on
//!   `metadata.uid`) is [`ApplyError::ChildReplaced`], Infrastructure (retried with backoff,
//!   never an invalid spec), and the engine remembers the refused UID, so the next attempt
//!   reads the object by name even while the store still serves the stale copy (a foreign
//!   replacement is then `NameTaken`; one of ours, or none, is applied). An object of a kind
//!   nobody watches (a token Secret when Secrets are not watched) is read by name on every
//!   reconcile: nothing else would show it gone or changed. An object planned
//!   [`crate::DesiredObject::by_metadata`] is read as metadata only (a Secret's data is not
//!   read) and compared on its metadata. A live object being deleted is
//!   left alone until it is gone. A read by name that fails (without `Retry-After`) skips
//!   only its own object: the others are still applied (so an attempt at 10% failed requests
//!   still makes progress, and the reconcile fails and is retried) but nothing is deleted
//!   (Deletions, below), while a refusal (`DuplicateKey`, `NameTaken`, an object that cannot
//!   be prepared) applies nothing.
//! - Apply order is by dependency, then (kind, group, namespace, name) ([`apply_order`]):
//!   Namespaces, then ServiceAccounts, then ConfigMaps and Secrets (a ServiceAccount token
//!   Secret after its ServiceAccount: the token controller deletes a token Secret whose
//!   ServiceAccount does not exist), then RBAC roles and bindings, then storage, then
//!   Services, then everything else (workloads and custom resources). The first failed apply
//!   stops the step; so does any answer carrying `Retry-After` (a read by name, a deletion):
//!   the server asked for no further request before then.
//! - Fields a planned object releases ([`crate::DesiredObject::release`]) are left out of the
//!   body of an object that exists, and handed over first while our manager still owns them
//!   ([`crate::handover`]; the hand-over apply counts as an apply).
//! - An object is applied only when [`crate::diff`] says it differs; when the body equals the
//!   one last applied successfully, fields the server pruned do not count. A successful apply
//!   of any other body, and a successful deletion, is progress ([`Applied::progressed`]); a
//!   re-apply of the body last applied is not.
//! - Retirements ([`PlanResult::retire`]) run first, each with the UID fetch read; a failed
//!   one stops the step. A planned object of a key whose retirement deleted something is
//!   created anew: no comparison with, read of, or UID pin to the retired object. When the
//!   precondition failed (another object holds the name now) it is read and judged as usual.
//! - Deletions: planned deletions and orphans (of kinds that prune), only of objects listed as
//!   this parent's children (so carrying our labels), never of objects already terminating,
//!   each with its listed UID as precondition. Deletions run only after every planned object
//!   was applied or found unchanged: a failed apply stops the step before them, and so does a
//!   failed read by name, as that object may be the replacement of a child the plan drops (a
//!   renamed child), which must stay until its replacement exists. (Objects of a kind the
//!   cluster does not serve, and live objects still terminating, are skipped without holding
//!   deletions back.)

use std::collections::BTreeSet;

use kube::core::DynamicObject;
use serde_json::Value;

use super::Engine;
use super::memory::fingerprint;
use crate::apply::{self, ApplyError, ParentRef};
use crate::category::Categorize;
use crate::handover::{self, FieldPath};
use crate::metrics::WriteVerb;
use crate::pipeline::{ChildKind, Children, ObjectKey, Observation, Pipeline, PlanResult};

/// What the apply step did.
#[derive(Debug, Default)]
pub(super) struct Applied {
    pub applied: usize,
    pub deleted: usize,
    /// Applies that were progress (a body other than the one last applied successfully to
    /// that child: a new child, a changed desired state, or the first apply since the engine
    /// started) plus deletions: the engine's progress rule ([`super`], step 6). A re-apply of
    /// the body last applied (a diff the server never settles, another manager reverting us)
    /// is not.
    pub progressed: usize,
    pub errors: Vec<ApplyError>,
}

/// The dependency rank of a kind: lower is applied first.
fn apply_rank(group: &str, kind: &str) -> u8 {
    match (group, kind) {
        ("", "Namespace") | ("apiextensions.k8s.io", "CustomResourceDefinition") => 0,
        ("", "ServiceAccount") => 1,
        ("", "ConfigMap" | "Secret") => 2,
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => 3,
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => 4,
        ("", "PersistentVolumeClaim") | ("storage.k8s.io", _) => 5,
        ("", "Service") => 6,
        _ => 7,
    }
}

/// The order objects of one plan are applied in: by [`apply_rank`], then by key.
fn apply_order(a: &ObjectKey, b: &ObjectKey) -> std::cmp::Ordering {
    (apply_rank(&a.group, &a.kind), a).cmp(&(apply_rank(&b.group, &b.kind), b))
}

struct Prepared {
    key: ObjectKey,
    kind: ChildKind,
    body: Value,
    live: Option<DynamicObject>,
    /// Fields to hand over before the apply (the body no longer sets them).
    released: Vec<FieldPath>,
    /// The UID of `live` when it came from the child store by name: sent with the apply, so
    /// the server refuses it (`metadata.uid` is immutable) when the object was replaced since
    /// the store saw it, instead of the apply taking over a foreign object of that name.
    pinned: Option<String>,
    /// Compared on its metadata only ([`crate::DesiredObject::metadata_only`]).
    metadata_only: bool,
}

/// `object` as a metadata read shows it: `apiVersion`, `kind` and `metadata`, with every
/// `managedFields` entry cut to its `f:metadata` (so the fields we own outside it, which the
/// read does not show, are not taken as fields the apply would remove).
fn metadata_view(object: &Value) -> Value {
    let mut view = serde_json::Map::new();
    for key in ["apiVersion", "kind", "metadata"] {
        if let Some(v) = object.get(key) {
            view.insert(key.to_owned(), v.clone());
        }
    }
    let mut view = Value::Object(view);
    if let Some(entries) = view
        .pointer_mut("/metadata/managedFields")
        .and_then(Value::as_array_mut)
    {
        for e in entries {
            if let Some(fields) = e.get_mut("fieldsV1").and_then(Value::as_object_mut) {
                fields.retain(|k, _| k == "f:metadata");
            }
        }
    }
    view
}

/// Where a planned object missing from the listed children was found.
enum Found {
    /// In the child store (a label-scoped watch cache), and ours.
    Cached(Box<DynamicObject>),
    /// In the child store, and not ours.
    Taken,
    /// Not in the child store: read it by name.
    Unknown,
}

impl<P: Pipeline> Engine<P> {
    fn desired_key(
        desired: &crate::pipeline::DesiredObject,
        parent: &ParentRef,
    ) -> Option<ObjectKey> {
        let name = desired.object.metadata.name.clone()?;
        Some(ObjectKey {
            kind: desired.kind.resource.kind.clone(),
            group: desired.kind.resource.group.clone(),
            namespace: if desired.kind.namespaced {
                desired
                    .object
                    .metadata
                    .namespace
                    .clone()
                    .or_else(|| parent.namespace.clone())
            } else {
                None
            },
            name,
        })
    }

    /// True when `live` (not among the listed children) may be applied over.
    fn is_ours(&self, obj: &P::Object, parent: &ParentRef, live: &DynamicObject) -> bool {
        parent.owns(live)
            || self.config.scheme.is_marked(live.metadata.labels.as_ref())
            || self.pipeline.adoptable(obj, live)
    }

    /// Where the planned `desired` (`key`, not among the listed children of `parent_key`) is:
    /// in the child store, or to be read; see the module contract.
    fn find(
        &self,
        obj: &P::Object,
        (parent_key, parent): (&ObjectKey, &ParentRef),
        desired: &crate::pipeline::DesiredObject,
        key: &ObjectKey,
    ) -> Found {
        match self
            .store
            .as_deref()
            .and_then(|s| s.named(&desired.kind, key))
        {
            Some(cached)
                if self
                    .memory
                    .is_replaced(parent_key, key, cached.metadata.uid.as_deref()) =>
            {
                tracing::debug!(object = %key, "the cached copy was replaced; reading it");
                Found::Unknown
            }
            Some(cached) if self.is_ours(obj, parent, &cached) => Found::Cached(Box::new(cached)),
            Some(_) => Found::Taken,
            None => Found::Unknown,
        }
    }

    #[allow(clippy::too_many_arguments)] // the step's inputs, all borrowed from `run`
    pub(super) async fn apply_plan(
        &self,
        obj: &P::Object,
        parent_key: &ObjectKey,
        plan: PlanResult,
        parent: &ParentRef,
        children: &Children,
        missing_kinds: &[ChildKind],
        observation: &Observation<P::State>,
    ) -> Applied {
        let scheme = &self.config.scheme;
        let mut out = Applied::default();
        // What the plan retires goes first, exactly the objects fetch read; a planned object of
        // the same key is then created anew, not compared with (nor pinned to) the old one.
        let mut retired = BTreeSet::new();
        for r in &plan.retire {
            tracing::info!(object = %r.key, "deleting to replace or retire it");
            match apply::delete(&self.client, &r.kind, &r.key, Some(&r.uid)).await {
                Ok(true) => {
                    self.count_deletion(&mut out);
                    retired.insert(r.key.clone());
                }
                // Gone already, or the name now belongs to another object (the precondition
                // failed): the planned object of that key is read and judged as usual.
                Ok(false) => {}
                Err(e) => {
                    out.errors.push(e);
                    return out;
                }
            }
        }
        let mut seen = BTreeSet::new();
        let mut prepared = Vec::new();
        let mut keep = Vec::new();
        // Reads by name that failed (not refusals): they skip only their own object.
        let mut unread = 0;
        for (desired, owned) in plan
            .apply
            .iter()
            .map(|d| (d, true))
            .chain(plan.apply_without_owner.iter().map(|d| (d, false)))
        {
            let key = Self::desired_key(desired, parent);
            if let Some(k) = &key {
                if !seen.insert(k.clone()) {
                    out.errors
                        .push(ApplyError::DuplicateKey { child: k.clone() });
                    continue;
                }
                keep.push(k.clone());
            }
            if missing_kinds.iter().any(|m| m == &desired.kind) {
                continue;
            }
            let fresh = key.as_ref().is_some_and(|k| retired.contains(k));
            let mut live = key
                .as_ref()
                .filter(|_| !fresh)
                .and_then(|k| children.get(k).cloned());
            let mut pinned = None;
            if live.is_none()
                && !fresh
                && let Some(k) = &key
            {
                match self.find(obj, (parent_key, parent), desired, k) {
                    Found::Cached(cached) => {
                        pinned.clone_from(&cached.metadata.uid);
                        live = Some(*cached);
                    }
                    Found::Unknown => match if desired.metadata_only {
                        apply::get_metadata(&self.client, &desired.kind, k).await
                    } else {
                        apply::get(&self.client, &desired.kind, k).await
                    } {
                        Ok(Some(found)) if !self.is_ours(obj, parent, &found) => {
                            out.errors.push(ApplyError::NameTaken { child: k.clone() });
                            continue;
                        }
                        Ok(found) => live = found,
                        Err(e) => {
                            let wait = e.retry_after().is_some();
                            out.errors.push(e);
                            if wait {
                                return out;
                            }
                            unread += 1;
                            continue;
                        }
                    },
                    Found::Taken => {
                        out.errors.push(ApplyError::NameTaken { child: k.clone() });
                        continue;
                    }
                }
            }
            if live
                .as_ref()
                .is_some_and(|l| l.metadata.deletion_timestamp.is_some())
            {
                tracing::debug!(object = ?key, "live object is terminating; applying once it is gone");
                continue;
            }
            match apply::prepare(
                desired,
                owned,
                parent,
                scheme,
                &observation.labels,
                live.as_ref(),
            ) {
                Ok((key, mut body)) => {
                    // Released fields are sent only while the object does not exist.
                    let released = if live.is_some() {
                        for p in &desired.released {
                            p.remove(&mut body);
                        }
                        desired.released.clone()
                    } else {
                        Vec::new()
                    };
                    prepared.push(Prepared {
                        key,
                        kind: desired.kind.clone(),
                        body,
                        live,
                        released,
                        pinned,
                        metadata_only: desired.metadata_only,
                    });
                }
                Err(e) => out.errors.push(e),
            }
        }
        if out.errors.len() > unread {
            return out;
        }
        prepared.sort_by(|a, b| apply_order(&a.key, &b.key));
        self.memory.retain_children(parent_key, &keep);
        for p in prepared {
            let mut live = p.live;
            if !p.released.is_empty()
                && let Some(l) = live.take()
            {
                match handover::hand_over(
                    &self.client,
                    &p.kind,
                    &p.key,
                    l,
                    &p.released,
                    &scheme.manager,
                )
                .await
                {
                    Ok(h) => {
                        if h.wrote {
                            out.applied += 1;
                            self.handles.writes(WriteVerb::Apply, 1);
                        }
                        live = Some(h.live);
                    }
                    Err(e) => {
                        out.errors.push(e);
                        return out;
                    }
                }
            }
            let hash = fingerprint(p.body.to_string().as_str());
            let same_body = self.memory.applied(parent_key, &p.key) == Some(hash);
            let unchanged = live.as_ref().is_some_and(|l| {
                serde_json::to_value(l).is_ok_and(|lv| {
                    let differs = |body: &Value, lv: &Value| {
                        if same_body {
                            crate::diff::needs_apply_pruned(body, lv, &scheme.manager)
                        } else {
                            crate::diff::needs_apply(body, lv, &scheme.manager)
                        }
                    };
                    if p.metadata_only {
                        !differs(&metadata_view(&p.body), &metadata_view(&lv))
                    } else {
                        !differs(&p.body, &lv)
                    }
                })
            });
            if unchanged {
                continue;
            }
            tracing::info!(object = %p.key, "applying");
            let mut body = p.body;
            if let Some(uid) = &p.pinned
                && let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.insert("uid".to_owned(), Value::String(uid.clone()));
            }
            match apply::apply(&self.client, &p.kind, &p.key, &body, &scheme.manager)
                .await
                .map_err(|e| {
                    if p.pinned.is_some() {
                        e.of_pinned_apply()
                    } else {
                        e
                    }
                }) {
                Ok(()) => {
                    out.applied += 1;
                    out.progressed += usize::from(!same_body);
                    self.handles.writes(WriteVerb::Apply, 1);
                    self.memory
                        .wrote_child(parent_key, &p.key, hash, self.clock.now());
                }
                Err(e) => {
                    if let (ApplyError::ChildReplaced { .. }, Some(uid)) = (&e, &p.pinned) {
                        self.memory
                            .replaced_child(parent_key, &p.key, uid, self.clock.now());
                    }
                    out.errors.push(e);
                    return out;
                }
            }
        }
        if unread == 0 {
            self.delete_unplanned(&plan, parent, children, missing_kinds, &keep, &mut out)
                .await;
        } else {
            // A planned object was not read, so not applied: it may be the replacement of a
            // child that deleting now would leave missing (a renamed child's old name is not
            // kept). Deletions wait for a pass that read every planned object.
            tracing::debug!(unread, "a planned object was not read; deleting nothing");
        }
        out
    }

    /// A deletion the server accepted: counted, progress, a write.
    fn count_deletion(&self, out: &mut Applied) {
        out.deleted += 1;
        out.progressed += 1;
        self.handles.writes(WriteVerb::Delete, 1);
    }

    async fn delete_unplanned(
        &self,
        plan: &PlanResult,
        parent: &ParentRef,
        children: &Children,
        missing_kinds: &[ChildKind],
        keep: &[ObjectKey],
        out: &mut Applied,
    ) {
        let planned = plan.delete.iter().filter_map(|(kind, key)| {
            // Only objects we listed as this parent's children: absent keys cost nothing,
            // and an object without our labels is not ours to delete.
            let live = children.get(key)?;
            (live.metadata.deletion_timestamp.is_none()).then(|| (kind.clone(), key.clone()))
        });
        let mut deletions: Vec<(ChildKind, ObjectKey)> = planned
            .chain(apply::orphans(children, &self.kinds, parent, keep))
            .filter(|(kind, _)| !missing_kinds.contains(kind))
            .collect();
        deletions.sort_by(|a, b| a.1.cmp(&b.1));
        deletions.dedup_by(|a, b| a.1 == b.1);
        for (kind, key) in &deletions {
            let uid = children.get(key).and_then(|o| o.metadata.uid.as_deref());
            tracing::info!(object = %key, "deleting");
            match apply::delete(&self.client, kind, key, uid).await {
                Ok(true) => self.count_deletion(out),
                Ok(false) => {}
                Err(e) => {
                    let wait = e.retry_after().is_some();
                    out.errors.push(e);
                    if wait {
                        // The server asked us to wait: no further request before the hold.
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(group: &str, kind: &str, name: &str) -> ObjectKey {
        ObjectKey {
            kind: kind.into(),
            group: group.into(),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    #[test]
    fn a_service_account_is_applied_before_its_token_secret() {
        let mut keys = vec![
            key("apps", "Deployment", "web"),
            key("", "Service", "web"),
            key("rbac.authorization.k8s.io", "RoleBinding", "epp"),
            key("", "Secret", "epp-token"),
            key("rbac.authorization.k8s.io", "Role", "epp"),
            key("", "ConfigMap", "epp"),
            key("", "ServiceAccount", "epp"),
            key("", "PersistentVolumeClaim", "cache"),
            key("", "Namespace", "ns"),
        ];
        keys.sort_by(apply_order);
        let kinds: Vec<&str> = keys.iter().map(|k| k.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "Namespace",
                "ServiceAccount",
                "ConfigMap",
                "Secret",
                "Role",
                "RoleBinding",
                "PersistentVolumeClaim",
                "Service",
                "Deployment",
            ]
        );
    }
}
