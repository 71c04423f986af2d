//! Pure builders: resolved inputs in, Kubernetes objects out.
//!
//! Every function here is pure (no client, no clock, no randomness): given the same resolved
//! input it returns the same objects, so it is trivially testable and reusable from other Rust
//! tools. Inputs are resolved structs defined next to each builder (template chosen, image
//! facts known, runtime config merged, defaults applied), never raw custom-resource specs.
//!
//! - [`naming`]: every name rule; [`labels`]: the standard labels; [`security`]: the restricted
//!   security context; [`env`](mod@env): env merging; [`resources`]: accelerator resources.
//! - One module per target: [`kserve`], [`gateway`], [`inference_pool`], [`epp`],
//!   [`deployment`], [`autoscaling`], [`service`], [`istio`], [`monitoring`],
//!   [`discovery_job`], [`gateway_weighted`] (weighted canary routes), [`zerfoo`] (the
//!   ZerfooInferenceService children).
//!
//! Builders set names, namespaces, labels and annotations; owner references are the reconcile
//! pipeline's business.

#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::expect_used, clippy::unwrap_used))]

pub mod env;
pub mod error;
pub mod labels;
pub mod meta;
pub mod naming;
pub mod resources;
pub mod security;

pub use error::{Error, Warning};
pub use meta::Parent;

pub mod autoscaling;
pub mod deployment;
pub mod discovery_job;
pub mod epp;
pub mod gateway;
pub mod gateway_weighted;
pub mod inference_pool;
pub mod istio;
pub mod kserve;
pub mod monitoring;
pub mod pod;
pub mod service;
pub mod zerfoo;
