//! The Gateway API Inference Extension side: the InferencePool over the serving pods and its
//! Endpoint Picker (EPP) Deployment.

use k8s_openapi::api::core::v1::ResourceRequirements;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The EPP's gRPC health port (`grpc-health`), fixed by the operator.
pub const EPP_HEALTH_PORT: i32 = 9003;
/// The EPP's Prometheus metrics port (`http-metrics`), fixed by the operator.
pub const EPP_METRICS_PORT: i32 = 9090;

/// Explicit settings of the InferencePool `<name>` and its Endpoint Picker.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InferencePoolSpec {
    /// The Endpoint Picker Deployment, Service and RBAC the pool's `endpointPickerRef` names.
    pub endpoint_picker: EndpointPickerSpec,
}

/// The Endpoint Picker (llm-d inference scheduler) of the pool.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPickerSpec {
    /// EPP image; the operator's `--default-epp-image` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// EPP pods. More than one turns on leader election.
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// Resources of the EPP container. When unset: requests cpu 4 and memory 8Gi, limit memory
    /// 16Gi, no CPU limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_k8s::resource_requirements")]
    pub resources: Option<ResourceRequirements>,
    /// The ext-proc gRPC port of the EPP container and Service, and the pool's
    /// `endpointPickerRef.port`. Must differ from the fixed health (9003) and metrics (9090)
    /// ports.
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// What the gateway does when the EPP does not answer: written to the pool's
    /// `endpointPickerRef.failureMode`.
    #[serde(default)]
    pub failure_mode: FailureMode,
}

fn default_replicas() -> i32 {
    1
}

fn default_port() -> i32 {
    9002
}

/// The InferencePool `endpointPickerRef.failureMode`.
///
/// The CRD default is `FailOpen`. Upstream's operator uses `FailClose` for the pool it
/// synthesises when `spec.inferencePool` is unset (NOTES.md section g, item 8); that is an
/// operator decision and does not change this field's default.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum FailureMode {
    /// Route to any endpoint when the EPP is unavailable.
    #[default]
    FailOpen,
    /// Fail requests when the EPP is unavailable.
    FailClose,
}

impl FailureMode {
    /// The spelling used in the CRD and in InferencePool objects.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FailOpen => "FailOpen",
            Self::FailClose => "FailClose",
        }
    }
}
