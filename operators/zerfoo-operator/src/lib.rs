//! # zerfoo-operator
//!
//! The Kubernetes operator for `ZerfooInferenceService` (`zerfoo.feza.ai/v1`,
//! [`kinfer_api::zerfoo`]). Upstream (zerfoo `serve/operator`) is a reconcile library with a
//! pluggable client and no controller; this crate keeps its API and intent and makes it a real
//! operator on the kinfer reconcile engine ([`kinfer_state`]).
//!
//! One service becomes:
//! - Deployment `<name>-primary` serving `spec.modelRef` (and `<name>-canary` serving
//!   `spec.canary.modelRef` with a replica share proportional to the canary weight);
//! - Service `<name>-svc` selecting both tracks, and one Service per track;
//! - HorizontalPodAutoscaler `<name>-hpa` on the primary when `minReplicas` and `maxReplicas`
//!   are both set (the operator then hands the replica count over to the HPA,
//!   [`kinfer_state::handover`]);
//! - HTTPRoute `<name>-route` with weighted backends when a Gateway is configured (operator
//!   flag or `spec.gatewayRef`).
//!
//! Modules:
//! - [`config`]: the operator's settings (GPU vendor, CPU target, default gateway, image);
//! - [`names`]: the children's names;
//! - [`reconciler`]: the pipeline, one module per step ([`reconciler::fetch`],
//!   [`reconciler::compose`], [`reconciler::plan`]), status in [`reconciler`] itself;
//! - [`controller`]: the `kube::runtime::Controller` wiring (children read from its own
//!   watches), the startup CRD check, and following the HTTPRoute CRD at runtime;
//! - [`app`]: the `run` flags and the library entry point the binary (and the in-process
//!   end-to-end test) calls; the binary plumbing (leader election, `/metrics` `/healthz`
//!   `/readyz`, tracing, client, common flags) is [`kinfer_operator`]'s.
//!
//! The objects themselves (Deployments, Services, HPA, weighted HTTPRoute) and their names are
//! built by [`kinfer_builders::zerfoo`] and [`kinfer_builders::naming::zerfoo`].

#![cfg_attr(test, allow(clippy::expect_used, clippy::unwrap_used))]

pub mod app;
pub mod config;
pub mod controller;
pub mod names;
pub mod reconciler;

pub use config::{GpuVendor, OperatorConfig};
pub use reconciler::ZerfooPipeline;
