//! kinfer's Kubernetes API types.
//!
//! Every custom resource kinfer serves is defined here as a [`kube::CustomResource`] whose
//! schemars schema is the CRD's `openAPIV3Schema`. The user-facing kinds are compatible with the
//! upstream CRDs they replace: a manifest written for the upstream operator deserialises into
//! these types and validates against the CRDs generated from them.
//!
//! - [`aim`]: AMD AIM Engine, `aim.eai.amd.com/v1alpha1`.
//! - [`modelservice`]: the llm-d style ModelService, `model.otterscale.io/v1alpha1`.
//! - [`zerfoo`]: ZerfooInferenceService, `zerfoo.feza.ai/v1`.
//!
//! What several kinds embed is defined once: [`env`] (the Kubernetes 1.34 `EnvVar`, its
//! conversion to k8s-openapi and its rules) and [`schema_k8s`] (schema fragments of embedded
//! Kubernetes types).
//!
//! Rules a schema cannot express live in [`validation::Validate`] implementations that return
//! every violation with its field path.

pub mod accelerator;
pub mod aim;
pub mod crds;
pub mod env;
pub mod error;
pub mod inference_pool;
pub mod istio;
pub mod kserve;
pub mod labels;
pub mod modelservice;
pub mod monitoring;
pub mod names;
pub mod phase;
pub mod quantity;
pub mod schema;
pub mod schema_k8s;
pub mod third_party;
pub mod validation;
pub mod zerfoo;
