//! The pipeline a controller implements: fetch -> compose -> plan (+ status).
//!
//! Contract:
//! - **fetch** reads everything the object depends on, given the children the engine listed;
//!   errors are captured per item (as [`FetchResult`]s in `Fetched`),
//!   never returned early. It may use the client; it must not write.
//! - **compose** turns what was fetched into an [`Observation`]: the controller's own state
//!   plus one [`ComponentHealth`] per dependency. No client, no clock.
//! - **plan** is pure: object + observation to a [`PlanResult`] (objects to apply with or
//!   without a controller owner reference, objects to delete, requeue-after). No client, no
//!   clock, no randomness. It is only called when no user-fixable or infrastructure error is
//!   present.
//! - **status** builds the kind's status JSON from the derived overall status and conditions;
//!   **decorate** may add domain conditions first. Both pure. The mapping from [`kinfer_api::phase::Phase`] to the
//!   kind's status enum must be a total `match` into a typed status struct that is then
//!   serialised (untyped JSON stays the trait's return type so existing pipelines keep
//!   compiling); the engine compares only the fields this JSON sets.
//! - **finalize** (optional, with [`Pipeline::finalizer`]) cleans up what owner references
//!   cannot reach before the object goes away; it never runs in a terminating namespace. With
//!   [`Pipeline::needs_finalizer`] the finalizer is per object: added only while it is needed,
//!   released (finalize, then removal) when it no longer is.
//! - The engine owns everything else: listing children, labels, owner references, apply order,
//!   diffing, deletion, status patching, events, metrics, backoff, finalizer bookkeeping.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::core::{ApiResource, DynamicObject};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::category::{Categorize, CategorizedError};
use crate::condition::ConditionSet;
use crate::handover::FieldPath;
use crate::health::ComponentHealth;
use crate::health::FetchResult;
use crate::labels::LabelPropagation;
use crate::status::OverallStatus;

/// Whether a k8s-openapi scope marker is namespaced.
pub trait ScopeKind {
    /// True for `NamespaceResourceScope`.
    const NAMESPACED: bool;
}

impl ScopeKind for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl ScopeKind for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// A kind of child the controller creates, listed by label every reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildKind {
    /// Group, version, kind, plural.
    pub resource: ApiResource,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Children of this kind that are no longer planned are deleted (orphan pruning). Off for
    /// stateful kinds (PersistentVolumeClaims) unless asked for with [`ChildKind::prune`].
    pub prune: bool,
}

/// Kinds whose orphans are kept unless pruning is asked for: deleting them loses data.
const STATEFUL_KINDS: [(&str, &str); 2] = [("", "PersistentVolumeClaim"), ("", "PersistentVolume")];

impl ChildKind {
    /// The child kind of a typed resource.
    pub fn of<K>() -> Self
    where
        K: Resource<DynamicType = ()>,
        K::Scope: ScopeKind,
    {
        let resource = ApiResource::erase::<K>(&());
        let prune = !STATEFUL_KINDS
            .iter()
            .any(|(g, k)| resource.group == *g && resource.kind == *k);
        Self {
            resource,
            namespaced: <K::Scope as ScopeKind>::NAMESPACED,
            prune,
        }
    }

    /// A kind given at runtime (third-party kinds without Rust types); pruned.
    pub fn dynamic(resource: ApiResource, namespaced: bool) -> Self {
        Self {
            resource,
            namespaced,
            prune: true,
        }
    }

    /// Whether orphans of this kind are deleted.
    #[must_use]
    pub fn prune(mut self, prune: bool) -> Self {
        self.prune = prune;
        self
    }

    /// True when `key` is of this kind.
    pub fn matches(&self, key: &ObjectKey) -> bool {
        self.resource.kind == key.kind && self.resource.group == key.group
    }
}

/// Identifies an object; orders by kind, group, namespace, name (the apply order).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Kind.
    pub kind: String,
    /// API group (empty for core).
    pub group: String,
    /// Namespace (`None` for cluster-scoped).
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// The key of `obj` of kind `resource`.
    pub fn of(resource: &ApiResource, obj: &DynamicObject) -> Self {
        Self {
            kind: resource.kind.clone(),
            group: resource.group.clone(),
            namespace: obj.metadata.namespace.clone(),
            name: obj.metadata.name.clone().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{ns}/{}", self.kind, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// An object the plan wants to exist.
#[derive(Debug, Clone)]
pub struct DesiredObject {
    /// Its kind.
    pub kind: ChildKind,
    /// The object (name required; namespace defaults to the parent's for namespaced kinds).
    pub object: DynamicObject,
    /// Fields released to another controller once the object exists (an HPA's
    /// `spec.replicas`): sent only at creation, then handed over and never applied again
    /// ([`crate::handover`]).
    pub released: Vec<FieldPath>,
    /// The object's content is not the operator's to read (a token the token controller
    /// writes into a Secret): when the engine must read it by name, it reads its metadata only
    /// and compares the metadata; the rest of the body is sent when the object is created,
    /// and with any later apply a metadata change causes ([`DesiredObject::by_metadata`]).
    /// (Such an apply's answer holds the whole object; the engine drops it unread.)
    pub metadata_only: bool,
}

/// Errors of turning a typed object into a [`DesiredObject`].
#[derive(Debug, thiserror::Error)]
pub enum DesiredError {
    /// The object does not serialise. Category: InvalidSpec.
    #[error("serialise desired {kind}: {source}")]
    SerializeDesired {
        /// The kind.
        kind: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

impl Categorize for DesiredError {
    fn category(&self) -> crate::ErrorCategory {
        crate::ErrorCategory::InvalidSpec
    }
}

impl DesiredObject {
    /// A desired object from a typed value.
    pub fn from_typed<K>(obj: &K) -> Result<Self, DesiredError>
    where
        K: Resource<DynamicType = ()> + Serialize,
        K::Scope: ScopeKind,
    {
        let kind = ChildKind::of::<K>();
        let mut value =
            serde_json::to_value(obj).map_err(|source| DesiredError::SerializeDesired {
                kind: kind.resource.kind.clone(),
                source,
            })?;
        if let Some(m) = value.as_object_mut() {
            m.insert(
                "apiVersion".into(),
                kind.resource.api_version.clone().into(),
            );
            m.insert("kind".into(), kind.resource.kind.clone().into());
        }
        let object =
            serde_json::from_value(value).map_err(|source| DesiredError::SerializeDesired {
                kind: kind.resource.kind.clone(),
                source,
            })?;
        Ok(Self {
            kind,
            object,
            released: Vec::new(),
            metadata_only: false,
        })
    }

    /// A desired object of a kind given at runtime (third-party kinds without Rust types).
    pub fn dynamic(kind: ChildKind, object: DynamicObject) -> Self {
        Self {
            kind,
            object,
            released: Vec::new(),
            metadata_only: false,
        }
    }

    /// Read and compare this object by its metadata only; see
    /// [`DesiredObject::metadata_only`].
    #[must_use]
    pub fn by_metadata(mut self) -> Self {
        self.metadata_only = true;
        self
    }

    /// Release `path` to another controller once the object exists; see
    /// [`DesiredObject::released`].
    #[must_use]
    pub fn release(mut self, path: FieldPath) -> Self {
        if !self.released.contains(&path) {
            self.released.push(path);
        }
        self
    }
}

/// What the plan step decided.
#[derive(Debug, Clone, Default)]
pub struct PlanResult {
    /// Children to apply with a controller owner reference (garbage-collected with the parent,
    /// deleted as orphans when no longer planned).
    pub apply: Vec<DesiredObject>,
    /// Shared objects to apply without an owner reference (never deleted as orphans).
    pub apply_without_owner: Vec<DesiredObject>,
    /// Objects to delete explicitly (beyond orphans the engine finds itself). Only objects the
    /// engine listed as children of this parent (carrying its labels) are deleted, with the
    /// listed UID as precondition; keys that are absent cost nothing.
    pub delete: Vec<(ChildKind, ObjectKey)>,
    /// Objects to delete **before** anything is applied, each exactly the one fetch read (its
    /// UID is the precondition): what the plan takes over but cannot update in place (an
    /// immutable field, such as a binding's `roleRef`: a planned object of the same key is
    /// then created anew), or what an earlier operator left under a name this one no longer
    /// uses. Unlike [`Self::delete`] they need not carry this parent's labels: the pipeline
    /// decided they are its own (upstream's, adopted). In the order given; a failure stops
    /// the plan before any apply.
    pub retire: Vec<Retire>,
    /// Reconcile again after this long even if nothing changes.
    pub requeue_after: Option<Duration>,
    /// Keep [`Self::requeue_after`] although components report errors: the plan scheduled the
    /// retry of what failed itself (a failed download retried after a delay) and wants the
    /// errors in status meanwhile. Without it (the default) component errors decide the
    /// requeue (infrastructure backoff, a wait for a fix). The engine's own errors (apply,
    /// status) still back off; the sooner requeue wins. See the engine's contract, step 6.
    pub requeue_despite_errors: bool,
}

/// One object a plan deletes before it applies anything ([`PlanResult::retire`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retire {
    /// Its kind.
    pub kind: ChildKind,
    /// Where it is.
    pub key: ObjectKey,
    /// The UID fetch read: only that object is deleted.
    pub uid: String,
}

/// The children of one parent found by label, keyed by [`ObjectKey`].
#[derive(Debug, Clone, Default)]
pub struct Children {
    objects: BTreeMap<ObjectKey, DynamicObject>,
    /// Kinds (kind, group) whose listing failed, with the error.
    failed: BTreeMap<(String, String), CategorizedError>,
}

impl Children {
    /// Record that listing `kind` failed: lookups of that kind answer with the error.
    pub fn list_failed(&mut self, kind: &ChildKind, error: CategorizedError) {
        self.failed.insert(
            (kind.resource.kind.clone(), kind.resource.group.clone()),
            error,
        );
    }

    /// A typed child as a fetch result: the listing error if its kind could not be listed,
    /// `Ok(None)` if absent, the decode error (InvalidSpec, `ChildUndecodable`) if the live
    /// object does not deserialise as `K`. Feed it to [`crate::downstream`].
    pub fn fetch<K>(&self, namespace: Option<&str>, name: &str) -> FetchResult<K, CategorizedError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let kind = (K::kind(&()).into_owned(), K::group(&()).into_owned());
        if let Some(e) = self.failed.get(&kind) {
            return Err(e.clone());
        }
        self.typed(namespace, name)
    }

    /// Add a listed object.
    pub fn insert(&mut self, key: ObjectKey, obj: DynamicObject) {
        self.objects.insert(key, obj);
    }

    /// A child by key.
    pub fn get(&self, key: &ObjectKey) -> Option<&DynamicObject> {
        self.objects.get(key)
    }

    /// A typed child by namespace and name: `Ok(None)` if absent, an InvalidSpec error
    /// (`ChildUndecodable`) when the live object does not deserialise as `K`.
    pub fn typed<K>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<K>, CategorizedError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let key = ObjectKey {
            kind: K::kind(&()).into_owned(),
            group: K::group(&()).into_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        };
        let Some(obj) = self.objects.get(&key) else {
            return Ok(None);
        };
        serde_json::to_value(obj)
            .and_then(serde_json::from_value)
            .map(Some)
            .map_err(|e| {
                CategorizedError::new(
                    crate::ErrorCategory::InvalidSpec,
                    format!("{key} does not decode: {e}"),
                )
                .with_reason(crate::Reason::custom("ChildUndecodable"))
            })
    }

    /// The listing error of `kind`, if its listing failed.
    pub fn list_error(&self, kind: &ChildKind) -> Option<&CategorizedError> {
        self.failed
            .get(&(kind.resource.kind.clone(), kind.resource.group.clone()))
    }

    /// Every child.
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &DynamicObject)> {
        self.objects.iter()
    }

    /// Number of children.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// What compose produced.
#[derive(Debug, Clone)]
pub struct Observation<S> {
    /// The controller's own view (resolved references, fetched objects).
    pub state: S,
    /// One health per dependency, in display order.
    pub components: Vec<ComponentHealth>,
    /// User labels to propagate to children (from the runtime config).
    pub labels: LabelPropagation,
    /// The object depends on Secrets or state outside the cluster (registries, hubs): user-fixable
    /// errors are rechecked on a slow timer, since no watch event announces the fix.
    pub external: bool,
}

impl<S> Observation<S> {
    /// An observation with no components, no propagation and no external dependencies.
    pub fn new(state: S) -> Self {
        Self {
            state,
            components: Vec::new(),
            labels: LabelPropagation::default(),
            external: false,
        }
    }
}

/// A controller's reconcile steps; see the module contract.
pub trait Pipeline: Send + Sync + 'static {
    /// The reconciled kind.
    type Object: Resource<DynamicType = ()>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static;
    /// What fetch returns (per-item results).
    type Fetched: Send;
    /// The controller's composed state.
    type State: Send + Sync;
    /// The plan step's error.
    type PlanError: Categorize + Send + Sync + 'static;

    /// The kinds of children this controller creates.
    fn child_kinds(&self) -> Vec<ChildKind>;

    /// Read every dependency; never fail as a whole.
    fn fetch(
        &self,
        client: &Client,
        object: &Self::Object,
        children: &Children,
    ) -> impl Future<Output = Self::Fetched> + Send;

    /// Turn what was fetched into an observation.
    fn compose(
        &self,
        object: &Self::Object,
        children: &Children,
        fetched: Self::Fetched,
    ) -> Observation<Self::State>;

    /// Decide what should exist. Pure.
    fn plan(
        &self,
        object: &Self::Object,
        observation: &Observation<Self::State>,
    ) -> Result<PlanResult, Self::PlanError>;

    /// Add domain conditions (e.g. `Discovered`) before the conditions are finalised.
    fn decorate(
        &self,
        _object: &Self::Object,
        _observation: &Observation<Self::State>,
        _conditions: &mut ConditionSet,
    ) {
    }

    /// The finalizer this pipeline needs (e.g. `aim.eai.amd.com/template-cache-cleanup`), if
    /// any. The engine adds it to live objects that lack it and removes it after
    /// [`Pipeline::finalize`] succeeded. `None` (the default): no finalizer, nothing to clean up
    /// beyond owner-reference garbage collection.
    fn finalizer(&self) -> Option<String> {
        None
    }

    /// Whether `object` needs [`Pipeline::finalizer`] now (e.g. only while it has
    /// cluster-scoped children that owner references cannot reach). Default: always. When this
    /// turns false for a live object that still carries the finalizer, the engine runs
    /// [`Pipeline::finalize`] and removes the finalizer once that succeeded, as on deletion
    /// (without the namespace check: the object is not going away).
    fn needs_finalizer(&self, _object: &Self::Object) -> bool {
        true
    }

    /// Whether [`Pipeline::finalize`] also runs when the object's namespace is terminating or
    /// not readable. Default: no, the finalizer is removed without cleanup there (namespaced
    /// cleanup would fail in a terminating namespace). A pipeline whose cleanup touches only
    /// cluster-scoped objects, which do not go with the namespace, returns true.
    fn finalize_in_terminating_namespace(&self) -> bool {
        false
    }

    /// Clean up before the object goes away (called while it carries the finalizer and has a
    /// `deletionTimestamp`; in a terminating namespace only with
    /// [`Pipeline::finalize_in_terminating_namespace`]). An Auth error (access Forbidden)
    /// keeps the finalizer: the engine reports it (`CleanupForbidden`) and retries with
    /// backoff (`engine::finalize`).
    fn finalize(
        &self,
        _client: &Client,
        _object: &Self::Object,
    ) -> impl Future<Output = Result<(), CategorizedError>> + Send {
        async { Ok(()) }
    }

    /// The labels of `object` its children inherit ([`crate::labels::propagate`]: those under
    /// the scheme's domain always, user labels by the runtime config's rules). Default: all of
    /// them. A pipeline leaves out labels that name one of several users of a shared object,
    /// which would freeze on children created once (a Job, a claim) with whichever user
    /// happened to reconcile first.
    fn inherited_labels(&self, object: &Self::Object) -> BTreeMap<String, String> {
        object.meta().labels.clone().unwrap_or_default()
    }

    /// Whether a live object that has one of our children's names but is not ours (no
    /// controller reference to the parent, no labels of ours) may be taken over, e.g. because
    /// it carries the upstream operator's labels. Default: never; the apply is refused with
    /// InvalidSpec `NameTaken`.
    fn adoptable(&self, _object: &Self::Object, _live: &DynamicObject) -> bool {
        false
    }

    /// The full status to write, from the overall status and conditions (set
    /// `observedGeneration` from the object). Pure.
    fn status(
        &self,
        object: &Self::Object,
        observation: &Observation<Self::State>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value;
}
