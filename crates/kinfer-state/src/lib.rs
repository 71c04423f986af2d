//! # kinfer-state
//!
//! The reconcile engine every kinfer controller runs on. A controller implements four steps
//! (ARCHITECTURE.md, "The reconcile pipeline"):
//!
//! 1. **fetch**: read everything the object depends on; errors are captured per item.
//! 2. **compose**: turn what was fetched into an observation with one [`ComponentHealth`] per
//!    dependency (upstream: things we need; downstream: things we create).
//! 3. **plan**: pure; object + observation to a [`PlanResult`].
//! 4. **apply** (the engine): server-side apply in deterministic order, orphan deletion by
//!    label, then status derived from component health and patched only if it changed.
//!
//! The building blocks are usable on their own:
//! - [`condition`]: `metav1.Condition` sets with stable transition times.
//! - [`category`]: [`ErrorCategory`] and the one place errors are categorised.
//! - [`health`]: [`ComponentHealth`] and fetch-result helpers; [`inspect`]: health of
//!   Deployments, Jobs, Pods, PVCs, HPAs, HTTPRoutes, InferencePools, InferenceServices.
//! - [`status`]: component states to conditions and the [`OverallStatus`].
//! - [`backoff`]: per-object exponential backoff.
//! - [`clock`]: the injected [`Clock`].
//! - [`labels`]: label propagation and the paused annotation; [`diff`]: diff before write.
//! - [`handover`]: releasing a child's field to another controller (an HPA's replicas).
//! - [`pipeline`]: the [`Pipeline`] trait, [`PlanResult`], desired objects, listed children.
//! - [`store`]: children (by owner) and planned objects without an owner (by name) served
//!   from the controller's watches ([`OwnerIndex`], fed by [`child_watch`]) instead of a LIST
//!   or GET per reconcile.
//! - [`apply`]: listing, owner references, server-side apply, deletion; [`engine`]: the
//!   [`Engine`] running it all, with [`events`] on transitions and [`metrics`].
//!
//! Wiring into `kube::runtime::Controller` (one engine per controller, one [`metrics::Metrics`]
//! per process):
//!
//! ```ignore
//! let engine = Arc::new(Engine::new(MyPipeline, client.clone(), EngineConfig::new(scheme), metrics));
//! Controller::new(Api::<DeserializeGuard<MyKind>>::all(client), watcher::Config::default())
//!     .owns(Api::<Deployment>::all(client.clone()), watcher::Config::default())
//!     .run(kinfer_state::engine::reconcile, kinfer_state::engine::error_policy, engine);
//! ```
//!
//! `kinfer_operator::Controllers` is this wiring as the operators run it, plus what the sketch
//! leaves out: each trigger recorded as it arrives ([`Engine::triggers`], the queue-wait
//! metric), delete events forwarded to [`Engine::forget`], the cached objects trimmed
//! ([`Engine::trim_for_cache`]), a backoff per watch and a short one on the merged triggers.
//!
//! kube's client retries 429/503/504 inside a request by default (`Config::default_retry`);
//! controllers should turn that off so the engine's per-object backoff and `Retry-After`
//! handling decide, instead of a reconcile blocking on in-request retries.

pub mod apply;
pub mod backoff;
pub mod category;
pub mod child_watch;
pub mod clock;
pub mod condition;
pub mod diff;
pub mod engine;
pub mod events;
pub mod handover;
pub mod health;
pub mod inspect;
pub mod labels;
pub mod metrics;
mod packed;
pub mod pipeline;
pub mod status;
pub mod store;

pub use backoff::{Backoff, BackoffPolicy, MAX_PROGRESSING_FAILURES};
pub use category::{
    Categorize, CategorizedError, Direction, ErrorCategory, categorize_kube_error,
    categorized_kube_error,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use condition::{ConditionSet, ConditionStatus, ConditionType, Reason, Transition};
pub use engine::{Engine, EngineConfig, Report, Triggers};
pub use handover::FieldPath;
pub use health::{
    CategorizeIn, ComponentHealth, ComponentState, FetchResult, PhaseReason, downstream, upstream,
};
pub use kinfer_api::phase::Phase;
pub use labels::{LabelPropagation, LabelScheme};
pub use pipeline::{
    ChildKind, Children, DesiredObject, ObjectKey, Observation, Pipeline, PlanResult, Retire,
};
pub use status::{DEFAULT_INFRA_GRACE, DeriveInput, Derived, OverallStatus, derive};
pub use store::{ChildStore, Feed, OwnerIndex};
