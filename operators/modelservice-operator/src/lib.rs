//! # modelservice-operator
//!
//! The Kubernetes operator for otterscale's `ModelService` (`model.otterscale.io/v1alpha1`,
//! [`kinfer_api::modelservice`]), a drop-in replacement for otterscale/model-operator v1.0.1
//! (`../shared/reference/modelservice/NOTES.md`) on the kinfer reconcile engine
//! ([`kinfer_state`]). One ModelService becomes:
//!
//! - Deployments `<ms>-decode` and, with `spec.prefill`, `<ms>-prefill` (vLLM, the `kit
//!   unpack` init container, probes, `/dev/shm`, the routing sidecar in decode pods);
//! - the InferencePool `<ms>` and its Endpoint Picker `<ms>-epp` (Deployment, Service, plugins
//!   ConfigMap with a config hash that rolls the EPP, ServiceAccount, Role/RoleBinding, the
//!   RoleBinding `<epp>-leader-election` of the shipped leader-election ClusterRole, token
//!   Secret, the ClusterRoleBinding `<namespace>-<epp>` of the shipped metrics ClusterRole
//!   behind a finalizer, ServiceMonitor, Istio DestinationRule);
//! - the HTTPRoute `<ms>` (from `spec.httpRoute` or the operator's default Gateway);
//! - PodMonitors `<ms>-decode` / `<ms>-prefill`.
//!
//! Modules: [`app`] (the `run` flags and the entry point the binary calls), [`config`] (the
//! operator settings), [`optional_crds`] (the view of prometheus-operator, Istio, Gateway API
//! and InferencePool CRDs), [`reconciler`] (fetch, compose, plan, status), [`finalizer`],
//! [`cluster_rbac`] (the watched metrics-auth ClusterRoleBindings),
//! [`controller`] (which kinds the controllers watch). The plumbing (flags, endpoints, leader
//! election, optional-CRD watch, controller wiring) is `kinfer_operator`'s.
//! `docs/modelservice.md` is the user guide.

#![cfg_attr(test, allow(clippy::expect_used, clippy::unwrap_used))]

pub mod app;
pub mod cluster_rbac;
pub mod config;
pub mod controller;
pub mod finalizer;
pub mod optional_crds;
pub mod reconciler;

pub use config::{OperatorConfig, Provider};
pub use optional_crds::OptionalCrds;
pub use reconciler::ModelServicePipeline;
