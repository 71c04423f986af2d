//! The apply step: list children, prepare desired objects, server-side apply, delete.
//!
//! Contract:
//! - Children are listed per declared kind by the label selector of [`LabelScheme::selector`],
//!   all kinds concurrently, or served from a [`ChildStore`] when the operator provides one;
//!   unowned (shared) objects and planned objects that are not among them are read by name.
//!   A kind the cluster does not serve (404 on the list) is recorded for that kind only
//!   (`KindNotInstalled`, rechecked slowly); the engine's own 401/403 are Infrastructure
//!   (`ControllerForbidden`: the controller's RBAC, not something the object's owner can fix).
//! - [`prepare`] stamps `apiVersion`/`kind`, defaults the namespace to the parent's, applies
//!   label propagation (also to a Job's pod template when the Job is created; an existing
//!   Job's immutable template only keeps labels it already has), and sets a controller owner
//!   reference. An owner reference is never set across namespaces nor from a namespaced parent
//!   to a cluster-scoped child: the plan is rejected (InvalidSpec) instead.
//! - Writes are server-side apply with the controller's one field manager and `force` (the
//!   controller is the authority on the fields it sets, on objects that are its own: the engine
//!   refuses to apply over a live object of the same name that is not, [`ApplyError::NameTaken`],
//!   unless the pipeline declares it adoptable). Shared objects get the managed-by marker only.
//!   Fields a planned object releases to another controller are handed over first
//!   ([`crate::handover`]). Deletes carry the listed UID as precondition, use background propagation and treat 404 and
//!   409 (the object was replaced) as done. Every write goes through here and is counted by the
//!   engine.
//! - One error enum for the step, each variant one category.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject};
use serde_json::Value;

use futures::future::join_all;
use kube::api::Preconditions;

use crate::category::{
    Categorize, CategorizedError, Direction, ErrorCategory, categorize_kube_error, kube_retry_after,
};
use crate::condition::Reason;
use crate::labels::{LabelPropagation, LabelScheme, propagate, propagate_shared};
use crate::pipeline::{ChildKind, Children, DesiredObject, ObjectKey};
use crate::store::ChildStore;

/// Errors of the apply step.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The plan asked for an owner reference across namespaces. Category: InvalidSpec.
    #[error(
        "{child}: an owner reference cannot cross from namespace {parent_namespace} to another namespace"
    )]
    OwnerAcrossNamespaces {
        /// The child.
        child: ObjectKey,
        /// The parent's namespace.
        parent_namespace: String,
    },
    /// The plan asked a namespaced parent to own a cluster-scoped child. Category: InvalidSpec.
    #[error("{child}: a namespaced object cannot own a cluster-scoped one")]
    OwnerOfClusterScoped {
        /// The child.
        child: ObjectKey,
    },
    /// A namespaced child of a cluster-scoped parent has no namespace. Category: InvalidSpec.
    #[error("{child}: a namespaced child of a cluster-scoped parent needs a namespace")]
    MissingNamespace {
        /// The child.
        child: ObjectKey,
    },
    /// A desired object has no name. Category: InvalidSpec.
    #[error("a desired {kind} has no name")]
    MissingName {
        /// The kind.
        kind: String,
    },
    /// A desired object does not serialise. Category: InvalidSpec.
    #[error("serialise {child}: {source}")]
    SerializeChild {
        /// The child.
        child: ObjectKey,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// Listing children failed. Category: by the API error (404: the kind is not installed).
    #[error("list {kind} children: {source}")]
    ListChildren {
        /// The kind.
        kind: String,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// Reading a shared object failed. Category: by the API error.
    #[error("get {child}: {source}")]
    GetChild {
        /// The object.
        child: ObjectKey,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// Server-side apply failed. Category: by the API error (404: namespace or kind missing).
    #[error("apply {child}: {source}")]
    ApplyChild {
        /// The child.
        child: ObjectKey,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// Deleting failed. Category: by the API error.
    #[error("delete {child}: {source}")]
    DeleteChild {
        /// The child.
        child: ObjectKey,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// Patching status failed. Category: by the API error.
    #[error("patch status: {source}")]
    PatchStatus {
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// Adding or removing the pipeline's finalizer failed. Category: by the API error.
    #[error("patch finalizers: {source}")]
    PatchFinalizers {
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// A live object with a planned child's name exists and is not ours (no controller owner
    /// reference to the parent, none of our labels). Category: InvalidSpec (`NameTaken`).
    #[error(
        "{child} already exists and is not managed by this controller; rename it or delete it (the plan does not take over objects it does not own)"
    )]
    NameTaken {
        /// The object.
        child: ObjectKey,
    },
    /// The hand-over apply of released fields failed. Category: by the API error.
    #[error("hand over fields of {child}: {source}")]
    HandOver {
        /// The child.
        child: ObjectKey,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// Released fields kept changing under the hand-over, or the object went away during it.
    /// Category: Infrastructure (retried).
    #[error("hand over fields of {child}: the object kept changing; retrying later")]
    HandOverContended {
        /// The child.
        child: ObjectKey,
    },
    /// The plan lists an object twice. Category: InvalidSpec.
    #[error("the plan lists {child} more than once")]
    DuplicateKey {
        /// The object.
        child: ObjectKey,
    },
    /// An apply pinned to the UID of a cached copy ([`ChildStore::named`]) was refused on
    /// `metadata.uid`: the object was replaced since the cache saw it. Not the spec's fault:
    /// Category: Infrastructure (retried; the next attempt reads the object by name, so a
    /// foreign replacement is then refused with `NameTaken`).
    #[error("apply {child}: the object was replaced since it was cached; reading it again")]
    ChildReplaced {
        /// The child.
        child: ObjectKey,
        /// The server's refusal.
        #[source]
        source: Box<kube::Error>,
    },
}

/// True when the server refused a write on `metadata.uid`: the body named another object's
/// UID (422 `Invalid`, with a cause on that field).
fn refuses_uid(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s)
        if s.code == 422
            && s.details
                .as_ref()
                .is_some_and(|d| d.causes.iter().any(|c| c.field == "metadata.uid")))
}

impl ApplyError {
    fn kube(&self) -> Option<&kube::Error> {
        match self {
            Self::ListChildren { source, .. }
            | Self::GetChild { source, .. }
            | Self::ApplyChild { source, .. }
            | Self::DeleteChild { source, .. }
            | Self::HandOver { source, .. }
            | Self::ChildReplaced { source, .. }
            | Self::PatchStatus { source }
            | Self::PatchFinalizers { source } => Some(&**source),
            _ => None,
        }
    }

    /// This error of an apply pinned to a cached copy's UID: [`Self::ChildReplaced`] when the
    /// server refused that UID, else unchanged.
    pub(crate) fn of_pinned_apply(self) -> Self {
        match self {
            Self::ApplyChild { child, source } if refuses_uid(&source) => {
                Self::ChildReplaced { child, source }
            }
            other => other,
        }
    }

    /// The API server refused the controller's own credentials (401/403 other than quota).
    fn controller_forbidden(&self) -> bool {
        self.kube()
            .is_some_and(|e| categorize_kube_error(e, Direction::Upstream) == ErrorCategory::Auth)
    }
}

impl Categorize for ApplyError {
    fn category(&self) -> ErrorCategory {
        if self.controller_forbidden() {
            // The controller's RBAC, not the object's owner, must change: never a user-fixable
            // wait (it would never recover), but an infrastructure retry.
            return ErrorCategory::Infrastructure;
        }
        if matches!(
            self,
            Self::HandOverContended { .. } | Self::ChildReplaced { .. }
        ) {
            return ErrorCategory::Infrastructure;
        }
        match self.kube() {
            // Everything we touch here must exist for us to proceed: a 404 is upstream.
            Some(e) => categorize_kube_error(e, Direction::Upstream),
            None => ErrorCategory::InvalidSpec,
        }
    }

    fn reason(&self) -> Reason {
        if self.controller_forbidden() {
            return Reason::custom("ControllerForbidden");
        }
        match self {
            Self::NameTaken { .. } => Reason::custom("NameTaken"),
            _ => self.category().reason(),
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        self.kube().and_then(kube_retry_after)
    }
}

/// The reconciled object, as children see it.
#[derive(Debug, Clone)]
pub struct ParentRef {
    /// apiVersion.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace (`None` when cluster-scoped).
    pub namespace: Option<String>,
    /// UID.
    pub uid: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
}

impl ParentRef {
    /// The controller owner reference pointing at this parent.
    pub fn owner_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(true),
            block_owner_deletion: None,
        }
    }

    /// True when `obj` has a controller owner reference to this parent.
    pub fn owns(&self, obj: &DynamicObject) -> bool {
        obj.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == self.uid && o.controller == Some(true))
    }
}

fn api(client: &Client, kind: &ChildKind, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) if kind.namespaced => Api::namespaced_with(client.clone(), ns, &kind.resource),
        _ => Api::all_with(client.clone(), &kind.resource),
    }
}

/// What listing the children found.
#[derive(Debug, Default)]
pub struct Listing {
    /// The children, and per kind the listing error.
    pub children: Children,
    /// Listing errors that concern the whole object (the engine's own reads failed).
    pub errors: Vec<ApplyError>,
    /// Kinds the cluster does not serve (404 on the list): only their components degrade, and
    /// nothing of those kinds is applied or deleted.
    pub missing_kinds: Vec<ChildKind>,
}

/// List the children of `parent` of every kind, by label: from `store` for the kinds it holds,
/// by concurrent LISTs for the others. `recheck` is how soon a kind the cluster does not serve
/// is looked at again.
pub async fn list_children(
    client: &Client,
    kinds: &[ChildKind],
    parent: &ParentRef,
    scheme: &LabelScheme,
    store: Option<&dyn ChildStore>,
    recheck: Duration,
) -> Listing {
    let mut listing = Listing::default();
    let selector = scheme.selector(&parent.name);
    let lp = ListParams::default().labels(&selector);
    let mut to_list = Vec::new();
    for kind in kinds {
        match store.and_then(|s| s.owned_by(kind, parent.namespace.as_deref(), &parent.uid)) {
            Some(objects) => {
                for obj in objects {
                    let in_scope = !kind.namespaced
                        || parent.namespace.is_none()
                        || obj.metadata.namespace == parent.namespace;
                    if in_scope && scheme.is_child_of(obj.metadata.labels.as_ref(), &parent.name) {
                        listing
                            .children
                            .insert(ObjectKey::of(&kind.resource, &obj), obj);
                    }
                }
            }
            None => to_list.push(kind),
        }
    }
    let lists = join_all(to_list.iter().map(|kind| {
        let api = api(client, kind, parent.namespace.as_deref());
        let lp = lp.clone();
        async move { api.list(&lp).await }
    }))
    .await;
    for (kind, result) in to_list.into_iter().zip(lists) {
        match result {
            Ok(list) => {
                for obj in list.items {
                    listing
                        .children
                        .insert(ObjectKey::of(&kind.resource, &obj), obj);
                }
            }
            Err(kube::Error::Api(s)) if s.is_not_found() => {
                let e = CategorizedError::new(
                    ErrorCategory::Infrastructure,
                    format!(
                        "{} ({}) is not served by this cluster; install the CRD {}.{}",
                        kind.resource.kind,
                        kind.resource.api_version,
                        kind.resource.plural,
                        kind.resource.group
                    ),
                )
                .with_reason(Reason::custom("KindNotInstalled"));
                let e = CategorizedError {
                    retry_after: Some(recheck),
                    ..e
                };
                listing.children.list_failed(kind, e);
                listing.missing_kinds.push(kind.clone());
            }
            Err(source) => {
                let e = ApplyError::ListChildren {
                    kind: kind.resource.kind.clone(),
                    source: Box::new(source),
                };
                listing
                    .children
                    .list_failed(kind, CategorizedError::from_error(&e));
                listing.errors.push(e);
            }
        }
    }
    listing
}

/// The children `parent` controls that are not in `keep`, of kinds that are pruned and not
/// already terminating: orphans to delete.
pub fn orphans<'a>(
    children: &'a Children,
    kinds: &'a [ChildKind],
    parent: &'a ParentRef,
    keep: &'a [ObjectKey],
) -> impl Iterator<Item = (ChildKind, ObjectKey)> + 'a {
    children.iter().filter_map(move |(key, obj)| {
        if keep.contains(key) || !parent.owns(obj) || obj.metadata.deletion_timestamp.is_some() {
            return None;
        }
        let kind = kinds.iter().find(|k| k.matches(key))?;
        kind.prune.then(|| (kind.clone(), key.clone()))
    })
}

/// Finalise a desired object; see the module contract. Returns its key and the apply body.
pub fn prepare(
    desired: &DesiredObject,
    with_owner: bool,
    parent: &ParentRef,
    scheme: &LabelScheme,
    propagation: &LabelPropagation,
    observed: Option<&DynamicObject>,
) -> Result<(ObjectKey, Value), ApplyError> {
    let kind = &desired.kind;
    let mut obj = desired.object.clone();
    let Some(name) = obj.metadata.name.clone() else {
        return Err(ApplyError::MissingName {
            kind: kind.resource.kind.clone(),
        });
    };
    if kind.namespaced {
        if obj.metadata.namespace.is_none() {
            obj.metadata.namespace.clone_from(&parent.namespace);
        }
    } else {
        obj.metadata.namespace = None;
    }
    let key = ObjectKey {
        kind: kind.resource.kind.clone(),
        group: kind.resource.group.clone(),
        namespace: obj.metadata.namespace.clone(),
        name,
    };
    if kind.namespaced && key.namespace.is_none() {
        return Err(ApplyError::MissingNamespace { child: key });
    }
    if with_owner {
        if let Some(pns) = &parent.namespace {
            if !kind.namespaced {
                return Err(ApplyError::OwnerOfClusterScoped { child: key });
            }
            if key.namespace.as_ref() != Some(pns) {
                return Err(ApplyError::OwnerAcrossNamespaces {
                    child: key,
                    parent_namespace: pns.clone(),
                });
            }
        }
        let refs = obj.metadata.owner_references.get_or_insert_with(Vec::new);
        refs.retain(|r| r.uid != parent.uid && r.controller != Some(true));
        refs.push(parent.owner_reference());
    }
    let builder_labels = obj.metadata.labels.clone().unwrap_or_default();
    let labels = if with_owner {
        propagate(
            scheme,
            &parent.name,
            &parent.labels,
            propagation,
            &builder_labels,
            observed.and_then(|o| o.metadata.labels.as_ref()),
        )
    } else {
        propagate_shared(scheme, &builder_labels)
    };
    let added: BTreeMap<String, String> = labels
        .iter()
        .filter(|(k, _)| !builder_labels.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    obj.metadata.labels = Some(labels);
    obj.types = Some(kube::core::TypeMeta {
        api_version: kind.resource.api_version.clone(),
        kind: kind.resource.kind.clone(),
    });
    let mut body = serde_json::to_value(&obj).map_err(|source| ApplyError::SerializeChild {
        child: key.clone(),
        source,
    })?;
    if kind.resource.group == "batch" && kind.resource.kind == "Job" {
        job_template_labels(&mut body, &added, observed);
    }
    Ok((key, body))
}

/// Propagated labels on a Job's pod template: all of them at creation; for an existing Job
/// (immutable template) only those the live template already carries with the same value.
fn job_template_labels(
    body: &mut Value,
    added: &BTreeMap<String, String>,
    observed: Option<&DynamicObject>,
) {
    let live = observed.map(|o| &o.data["spec"]["template"]["metadata"]["labels"]);
    let Some(template) = body.pointer_mut("/spec/template") else {
        return;
    };
    let Some(t) = template.as_object_mut() else {
        return;
    };
    let meta = t
        .entry("metadata")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(labels) = labels.as_object_mut() else {
        return;
    };
    for (k, v) in added {
        let allowed = live.is_none_or(|l| l.get(k).and_then(Value::as_str) == Some(v.as_str()));
        if allowed && !labels.contains_key(k) {
            labels.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

/// Read an object by key (shared objects not found by label).
pub async fn get(
    client: &Client,
    kind: &ChildKind,
    key: &ObjectKey,
) -> Result<Option<DynamicObject>, ApplyError> {
    api(client, kind, key.namespace.as_deref())
        .get_opt(&key.name)
        .await
        .map_err(|source| ApplyError::GetChild {
            child: key.clone(),
            source: Box::new(source),
        })
}

/// Read the metadata of an object by key (`PartialObjectMetadata`: a Secret's data is not
/// read); as a [`DynamicObject`] without content.
pub async fn get_metadata(
    client: &Client,
    kind: &ChildKind,
    key: &ObjectKey,
) -> Result<Option<DynamicObject>, ApplyError> {
    let found = api(client, kind, key.namespace.as_deref())
        .get_metadata_opt(&key.name)
        .await
        .map_err(|source| ApplyError::GetChild {
            child: key.clone(),
            source: Box::new(source),
        })?;
    Ok(found.map(|m| DynamicObject {
        types: Some(kube::core::TypeMeta {
            api_version: kind.resource.api_version.clone(),
            kind: kind.resource.kind.clone(),
        }),
        metadata: m.metadata,
        data: Value::Object(serde_json::Map::new()),
    }))
}

/// Server-side apply `body` as `manager`.
pub async fn apply(
    client: &Client,
    kind: &ChildKind,
    key: &ObjectKey,
    body: &Value,
    manager: &str,
) -> Result<(), ApplyError> {
    let pp = PatchParams::apply(manager).force();
    api(client, kind, key.namespace.as_deref())
        .patch(&key.name, &pp, &Patch::Apply(body))
        .await
        .map(|_| ())
        .map_err(|source| ApplyError::ApplyChild {
            child: key.clone(),
            source: Box::new(source),
        })
}

/// Delete the object with UID `uid` with background propagation; a 404 (gone) or 409 (the
/// name now belongs to another object: the precondition failed) is success. Returns true when
/// a delete was accepted.
pub async fn delete(
    client: &Client,
    kind: &ChildKind,
    key: &ObjectKey,
    uid: Option<&str>,
) -> Result<bool, ApplyError> {
    delete_exact(&api(client, kind, key.namespace.as_deref()), &key.name, uid)
        .await
        .map_err(|source| ApplyError::DeleteChild {
            child: key.clone(),
            source: Box::new(source),
        })
}

/// Delete `name` through `api` only while it is still the object with UID `uid` (no
/// precondition when `None`), with background propagation; a 404 (gone) or 409 (the name now
/// belongs to another object) is success. Returns true when a delete was accepted. The one
/// rule for deleting an object we looked at, for the engine and for operators' own cleanup.
pub async fn delete_exact<K>(api: &Api<K>, name: &str, uid: Option<&str>) -> kube::Result<bool>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut dp = DeleteParams::background();
    if let Some(uid) = uid {
        dp.preconditions = Some(Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        });
    }
    match api.delete(name, &dp).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_not_found() || s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// The resource of the parent kind, for status patches.
pub fn parent_api(
    client: &Client,
    resource: &ApiResource,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

#[cfg(test)]
#[path = "unit_tests/apply.rs"]
mod tests;
