//! # aim-operator
//!
//! The Kubernetes operator for AMD AIM (`aim.eai.amd.com/v1alpha1`, [`kinfer_api::aim`]) on the
//! kinfer reconcile engine ([`kinfer_state`]). The catalog half:
//!
//! - [`model`]: AIMModel / AIMClusterModel: image metadata (registry inspection through
//!   [`kinfer_oci`], or `spec.imageMetadata`), one generated template per recommended
//!   deployment, custom models, pruning, status aggregated from the templates.
//! - [`template`]: AIMServiceTemplate / AIMClusterServiceTemplate: model and image resolution,
//!   GPU availability from Nodes ([`kinfer_select::gpu`]), the discovery dry-run Job (throttled
//!   cluster-wide, exponential backoff), profile parsing, the (Cluster)ServingRuntime.
//! - [`runtime_config`]: AIMRuntimeConfig / AIMClusterRuntimeConfig: resolution and merging
//!   (used by every other controller) and the configs' own validity condition.
//! - [`model_source`]: AIMClusterModelSource: registry listing, filters, AIMClusterModels up to
//!   `maxModels`.
//!
//! Every controller is a [`kinfer_state::Pipeline`] split into `fetch`, `compose` and `plan`
//! modules with a `//!` contract each; [`controllers`] wires them into `kube::runtime`
//! controllers, [`context`] holds what they share, [`startup`] checks the CRDs. The serving
//! half ([`service`], [`cache`], [`artifact`]: AIMService, template caches, artifacts) is
//! sibling modules, registered in [`controllers`] the same way.
//!
//! The binary's plumbing (flags, tracing, leader election, `/metrics` `/healthz` `/readyz`) is
//! the shared [`kinfer_operator`] crate's.

#![cfg_attr(test, allow(clippy::expect_used, clippy::unwrap_used))]

pub mod context;
pub mod controllers;
pub mod env;
pub mod informers;
pub mod model;
pub mod model_source;
pub mod runtime_config;
pub mod scheme;
pub mod secrets;
pub mod service;
pub mod startup;
pub mod template;

// The serving half: template caches and artifacts.
pub mod artifact;
pub mod cache;

pub use context::{Context, DiscoverySettings, Settings};
