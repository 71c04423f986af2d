//! Typed subsets of the KServe kinds kinfer creates: InferenceService
//! (`serving.kserve.io/v1beta1`), ServingRuntime and ClusterServingRuntime
//! (`serving.kserve.io/v1alpha1`).
//!
//! Contract: only the fields kinfer sets (and, for InferenceService, the status fields it reads)
//! are typed. Every field keeps upstream's name and shape, so an object built from these types
//! validates against the upstream CRD (`kserve v0.20.0`) and survives a round trip through the
//! API server. A CRD generated from these types (see [`crate::third_party`]) is a stand-in for
//! upstream's in the test cluster, never served in production.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvVar, LocalObjectReference, PodSecurityContext, ResourceRequirements,
    Toleration, Volume, VolumeMount,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The pod-level part of a serving runtime, shared by ServingRuntime and ClusterServingRuntime
/// (upstream `ServingRuntimeSpec`, flattened into both kinds).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeSpec {
    /// Model formats this runtime serves; an InferenceService's `modelFormat` must match one.
    pub supported_model_formats: Vec<SupportedModelFormat>,
    /// Whether this runtime serves several models per pod. kinfer's runtimes never do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_model: Option<bool>,
    /// The storage initializer; disabled when the model server downloads by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_helper: Option<StorageHelper>,
    /// The model-server containers; the first is the one the InferenceService's `model` merges into.
    pub containers: Vec<Container>,
    /// Pod volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
    /// Pull secrets for the runtime image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// Node selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Scheduling constraints (GPU device affinity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Tolerations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
}

/// A model format a runtime supports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupportedModelFormat {
    /// Format name (`aim`).
    pub name: String,
    /// Format version (`1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Whether KServe may pick this runtime for an InferenceService that names no runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_select: Option<bool>,
}

/// The storage initializer switch.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct StorageHelper {
    /// `true` turns the storage initializer off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// A namespaced serving runtime (one per namespace-scoped AIM template).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "serving.kserve.io",
    version = "v1alpha1",
    kind = "ServingRuntime",
    plural = "servingruntimes",
    namespaced,
    derive = "PartialEq",
    derive = "Default"
)]
pub struct ServingRuntimeSpec {
    /// The runtime.
    #[serde(flatten)]
    pub runtime: RuntimeSpec,
}

/// A cluster-scoped serving runtime (one per cluster-scoped AIM template).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "serving.kserve.io",
    version = "v1alpha1",
    kind = "ClusterServingRuntime",
    plural = "clusterservingruntimes",
    derive = "PartialEq",
    derive = "Default"
)]
pub struct ClusterServingRuntimeSpec {
    /// The runtime.
    #[serde(flatten)]
    pub runtime: RuntimeSpec,
}

/// An InferenceService: one predictor, in KServe's RawDeployment mode.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "serving.kserve.io",
    version = "v1beta1",
    kind = "InferenceService",
    plural = "inferenceservices",
    shortname = "isvc",
    namespaced,
    status = "InferenceServiceStatus",
    derive = "PartialEq",
    derive = "Default"
)]
pub struct InferenceServiceSpec {
    /// The predictor.
    pub predictor: PredictorSpec,
}

/// The predictor: pod-level fields plus the model, which merges into the runtime's container.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PredictorSpec {
    /// The model and the runtime serving it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelSpec>,
    /// Minimum replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// Maximum replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<i32>,
    /// Service account of the predictor pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Whether the predictor pods get the service account's API token mounted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automount_service_account_token: Option<bool>,
    /// Pull secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// Pod security context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    /// Pod volumes (merged with the runtime's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,
    /// Scheduling constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Node selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Tolerations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Labels added to the predictor pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations added to the predictor pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// The model of a predictor and the container fields that override the runtime's container.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelSpec {
    /// The model's format; selects a runtime supporting it.
    pub model_format: ModelFormat,
    /// The ServingRuntime or ClusterServingRuntime to use, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// Environment, merged by name over the runtime container's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Resources, overriding the runtime container's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Extra mounts (model caches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
}

/// A model format reference.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ModelFormat {
    /// Format name.
    pub name: String,
    /// Format version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The part of an InferenceService's status kinfer reads.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InferenceServiceStatus {
    /// Knative-style conditions (`Ready`, `PredictorReady`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<KnativeCondition>>,
    /// The URL the service answers on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// A Knative `apis.Condition` as KServe reports it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KnativeCondition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `Error`, `Warning` or `Info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// When the status last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}
