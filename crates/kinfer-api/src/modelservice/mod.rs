//! ModelService, `model.otterscale.io/v1alpha1`.
//!
//! A reproduction of otterscale's ModelService API: one CR declares a vLLM deployment of an
//! OCI ModelPack model (decode pods, optional prefill pods with the llm-d routing sidecar), its
//! Gateway API Inference Extension InferencePool and Endpoint Picker, an optional HTTPRoute and
//! Prometheus monitors. The schema matches the upstream CRD (otterscale/api `2229b3ae`) field for
//! field, with two deliberate extensions, each documented where it is defined:
//!
//! - `spec.decode.annotations` / `spec.prefill.annotations` ([`RoleSpec::annotations`]), which
//!   upstream's v1.0.0 Go types and operator have but its published CRD lacks;
//! - status: a `phase` enum that includes `Failed`, Endpoint Picker counts and per-component
//!   condition types ([`status`](ModelServiceStatus)).
//!
//! Upstream has no CEL rules and no webhook. Rules a schema cannot express, such as "prefill
//! requires the routing proxy", are in [`Validate`] for ModelService: `validate()` rejects only
//! what cannot work (an object the API server would refuse, a pod that cannot start or serve),
//! and `warnings()` reports what upstream accepts but is probably not what the user meant
//! (a duplicate env name, an env variable that replaces one the operator generates).
//!
//! Modules: `spec` (root, model, engine, accelerator, monitoring), `roles` (decode/prefill),
//! `routing` (routing sidecar, HTTPRoute), `epp` (InferencePool, Endpoint Picker), `status` and
//! `validate`. `engine.env` is the crate-wide [`EnvVar`] ([`crate::env`], shared with AIM), and
//! the schema fragments of embedded core types are [`crate::schema_k8s`]'s.

mod epp;
mod roles;
mod routing;
mod spec;
mod status;
mod validate;

#[cfg(test)]
mod tests;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use self::epp::{
    EPP_HEALTH_PORT, EPP_METRICS_PORT, EndpointPickerSpec, FailureMode, InferencePoolSpec,
};
pub use self::roles::{ParallelismSpec, RoleEngineSpec, RoleSpec};
pub use self::routing::{GatewayRef, HttpRouteSpec, RoutingProxySpec};
pub use self::spec::{
    AcceleratorSpec, AcceleratorType, DEFAULT_MOUNT_PATH, EngineSpec, ModelService,
    ModelServiceSpec, ModelSpec, MonitoringSpec, PodMonitorSpec,
};
pub use self::status::{ModelServicePhase, ModelServiceStatus, condition_reasons, condition_types};
pub use crate::env::{
    ConfigMapKeySelector, EnvVar, EnvVarSource, FileKeySelector, ObjectFieldSelector,
    ResourceFieldSelector, SecretKeySelector,
};
pub use crate::validation::Validate;

/// The CRDs of the ModelService kinds.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![ModelService::crd()]
}
