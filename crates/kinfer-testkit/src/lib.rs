//! # kinfer-testkit
//!
//! An in-process Kubernetes API server over real HTTP on 127.0.0.1, so the real
//! `kube::Client`, watchers, reflectors and `kube::runtime::Controller` run unchanged against
//! it. It knows nothing about kinfer's kinds: it serves the built-in kinds below plus every
//! CustomResourceDefinition created through it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kinfer_testkit::Error> {
//! let env = kinfer_testkit::test_client().await?; // or KINFER_TEST_KUBECONFIG
//! let client = env.client();
//! # let _ = client; Ok(()) }
//! ```
//!
//! ## Supported behaviour (each pinned by a test in `tests/`)
//! - Discovery: `/api`, `/api/v1`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>`, `/version`, for
//!   Namespace, Node, Pod (+`pods/log`), Service, ServiceAccount, Secret, ConfigMap, Event,
//!   PersistentVolumeClaim, Endpoints, Deployment, ReplicaSet, StatefulSet, Job,
//!   HorizontalPodAutoscaler (v2), Role, RoleBinding, ClusterRole, ClusterRoleBinding, Lease,
//!   events.k8s.io Event, PodDisruptionBudget, NetworkPolicy, webhook configurations,
//!   CustomResourceDefinition, and every served version of every created CRD.
//! - get; list with label selectors, field selectors (any dotted path), `limit` + `continue`
//!   (every page reports the first page's resourceVersion, so a watch from the last page
//!   misses nothing; 410 only for a token older than [`FaultHandle::expire_history`], never
//!   because the watch history was trimmed); create with `generateName` (403 with a
//!   `NamespaceTerminating` cause in a terminating namespace); update with 409 on a stale
//!   resourceVersion (422 without one for custom resources); delete with preconditions and
//!   `propagationPolicy`; deletecollection; `dryRun=All`.
//! - Object names (DNS-1123 subdomain for most kinds and every custom resource, DNS-1123 label
//!   for Namespaces, DNS-1035 label for Services, path segment for RBAC kinds) and label keys and
//!   values are validated: 422 `Invalid` like the real server. Bodies of the wrong JSON type
//!   (metadata, labels, annotations, finalizers, owner references, `spec`/`status` of built-in
//!   kinds) answer 400; POST on a named object or a subresource answers 405.
//! - watch from a resourceVersion or from the current state, `allowWatchBookmarks`,
//!   `sendInitialEvents`, `timeoutSeconds`, 410 Gone (an ERROR event carrying an `Expired`
//!   Status) when the version is older than the kept history; selectors on watches.
//! - patch: JSON merge, JSON patch, strategic merge for built-in kinds (415 for CRDs, like the
//!   real server), server-side apply with `managedFields` per manager, conflicts (409 listing
//!   fields and managers), `force=true`, removal of fields a manager stops applying (as
//!   structured-merge-diff prunes: a dropped object or item goes whole, with any unowned fields
//!   in it, unless the new intent or another manager owns something inside, in which case only
//!   what nobody owns goes and objects left empty that nobody owns go too), and no-op applies
//!   that neither bump resourceVersion nor emit an event (true of every no-op write).
//!   Entries of the main endpoint and of `/status` are kept apart; keyed list items and set
//!   values are owned by presence (only the fields inside an item can conflict). A write to
//!   `/status` never creates its object (404).
//! - status subresource: the main endpoint ignores status, `/status` ignores everything else;
//!   `metadata.generation` bumps on changes outside metadata and status only (outside metadata
//!   only for custom resources without a status subresource); the first marking for deletion
//!   bumps it once (as the real server's `markAsDeleting`), and a repeated DELETE keeps the
//!   first `deletionTimestamp`.
//! - scale subresource of Deployments, ReplicaSets and StatefulSets ([`scale`]): GET, PUT and
//!   PATCH of an `autoscaling/v1` `Scale` (`spec.replicas`, `status.replicas`,
//!   `status.selector`); a write is recorded as the real server records an HPA's: an `Update`
//!   entry with `subresource: scale` owning the parent's `spec.replicas`, which appliers
//!   without `force` then conflict with.
//! - Secrets: `stringData` is merged into `data` (base64, overriding keys of the same name) on
//!   create, update, patch and apply, and is never stored nor returned; `data` and `stringData`
//!   of the wrong JSON type answer 400.
//! - finalizers and `deletionTimestamp`; owner-reference garbage collection (background,
//!   foreground with `blockOwnerDeletion`, orphan), namespaced dependents of cluster-scoped
//!   owners (a namespaced owner in another namespace counts as absent); namespace deletion
//!   cascades; deleting a CRD deletes its instances before the kind stops being served. The
//!   collector works from indexes (uid → object, owner → dependents) and looks only at what
//!   changed.
//! - CRD schemas on write: pruning (including `null` for non-nullable fields, then defaulted),
//!   defaults, validation (see [`schema`]); 422 `Invalid` with `details.causes[].field`.
//! - Fault injection per verb × resource (× name, × later LIST pages): status codes (429 with
//!   `Retry-After`), latency, watch cuts, 410 Gone on watches (an `ERROR` event) and on `continue`
//!   tokens, each on every matching request or on a seeded percentage of them; request counters,
//!   also per client (impersonated user or user agent) with a log of 409 answers
//!   ([`faults`]).
//! - An opt-in workload simulator ([`simulator`]).
//! - Entry points: [`TestCluster`] (random loopback port, `client()`, `kubeconfig()`,
//!   `install_crds()`, `faults()`, `counters()`, `hold()`/`release()`, `shutdown()`),
//!   [`test_client`] (in-process, or `KINFER_TEST_KUBECONFIG`), and [`run_cluster`] /
//!   [`serve_until`] for `kinfer cluster`.
//! - Debian's `kubectl` works against it (tests/kubectl.rs): client-side and server-side apply,
//!   `get -o yaml`, `get -w`, `delete --cascade`, CRD then instance, and
//!   `kubectl kustomize deploy/default | kubectl apply -f -`.
//!
//! The conformance suite (`tests/conformance`) takes its cluster from [`test_client`]; the same
//! test files run against the real control plane ([`control_plane`]: etcd, kube-apiserver and
//! kube-controller-manager built from the pins in `tools/k8s`) as
//! `tests/control_plane_conformance`, and against any cluster with `KINFER_TEST_KUBECONFIG`.
//! There each test works in a namespace of its own (deleted afterwards), and the tests of what
//! only the in-process cluster has (fault injection, counters, the simulator, clusters started
//! with options of their own) say so and return.
//!
//! ## Known differences from a real API server
//! - No authentication, authorization, admission webhooks, or aggregated discovery;
//!   `/openapi/v2` is an empty document (so kubectl's client-side validation finds no schema)
//!   and `/openapi/v3` answers 404; `fieldValidation` is ignored (unknown fields of custom
//!   resources are pruned silently, as with `fieldValidation=Ignore`).
//! - Only HTTP/1.1 without TLS; no protobuf, only JSON (YAML accepted for apply patches).
//! - No annotation size limits nor annotation key validation; `generateName` prefixes are cut to
//!   58 characters but not otherwise checked.
//! - One storage bucket per resource; versions are not converted (only `apiVersion` changes).
//! - `continue` tokens do not give a consistent snapshot: later pages see current data.
//! - Field selectors accept any dotted path, not only the per-kind supported fields.
//! - Server-side apply: lists of custom resources are atomic unless the schema says
//!   `x-kubernetes-list-type`; built-in kinds use a fixed table of merge keys (container ports
//!   keyed by `containerPort` only); no per-field type-aware normalisation (`"1"` vs `1`).
//! - Strategic merge: `$setElementOrder` is ignored (lists are ordered as the real server orders
//!   a merge without it: the patch's items, then those only the live list has).
//! - CEL: only `self == oldSelf` is evaluated; other rules are accepted without checks (the
//!   real control plane covers each of kinfer's rules). As on the real server, a blocking
//!   schema error (wrong type, required, enum, too long, too many) skips the rules and adds a
//!   cause without a field saying so.
//! - No controllers run: Deployments get no status (but from the simulator), no namespace holds
//!   the `kube-root-ca.crt` ConfigMap the real controller manager publishes in each, and
//!   garbage collection is immediate (the real collector learns of a kind created after it
//!   started at its next discovery resync, every 30 seconds).
//! - A JSON patch replacing the root (`"path": ""`) is refused; the real server takes it as a
//!   no-op.
//! - Secret `data` values are not checked to be valid base64, and Secret `type` and
//!   `immutable` are not enforced.
//! - Built-in kinds are not validated nor defaulted (beyond names, labels, JSON types,
//!   namespace phase, pod phase, CRD status); no grace periods: pods are deleted at once.
//! - While a CRD is being deleted, new instances can still be created (the real server refuses
//!   them); its instances' finalizers hold the CRD as on a real cluster.
//! - Server-side apply on `/scale` answers 415 (the real server serves it); custom resources
//!   have no `/scale`.
//! - POST is refused on every subresource (the real server serves POST subresources such as
//!   `pods/eviction` or `pods/binding`, which are not served here).
//! - Watch bookmarks are sent every few seconds (configurable, at least every millisecond), not
//!   every minute.
//! - `continue` tokens do not expire with time (only [`FaultHandle::expire_history`] expires
//!   them).
//! - `deletecollection` answers the list of deleted objects; DELETE answers 202 with the object
//!   while finalizers are pending, 200 with the object otherwise.
//! - The simulator's pods never run containers; Job pods are named `<job>-sim`; Deployments
//!   have no ReplicaSets or Pods.

pub mod builtin;
pub mod cluster;
pub mod commit;
pub mod control_plane;
pub mod delete;
pub mod discovery;
pub mod error;
pub mod faults;
pub mod gc;
pub mod hostile;
pub mod matrix;
pub mod names;
pub mod operator;
pub mod patch;
pub mod read;
pub mod resources;
pub mod scale;
pub mod schema;
pub mod selectors;
pub mod server;
pub mod simulator;
pub mod state;
pub mod store;
pub mod wait;
pub mod watch;
pub mod write;

pub use cluster::{
    FaultHandle, RunOptions, Source, TestCluster, TestEnv, client_from_kubeconfig, files_under,
    load_crds, run_cluster, serve_until, test_client, test_client_on,
};
pub use control_plane::ControlPlane;
pub use error::{ApiError, Error};
pub use faults::{CONFLICT_LOG, Conflict, Counters, Fault, RequestInfo, is_write};
pub use simulator::{JobOutcome, Simulator};
pub use state::Options;
