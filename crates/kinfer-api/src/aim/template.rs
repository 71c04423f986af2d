//! AIMServiceTemplate and AIMClusterServiceTemplate: a model plus the runtime profile to run it
//! with (optimisation goal, precision, GPUs).
//!
//! Templates are generated from a model's recommended deployments or custom templates, derived
//! from a service's overrides, or written by hand. A discovery job (`dry-run`) resolves each one
//! to an AIM profile and the model sources it needs (`status.profile`, `status.modelSources`).
//! Both kinds share [`AIMServiceTemplateSpecCommon`] and [`AIMServiceTemplateStatus`]; only the
//! namespace kind has `caching`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{LocalObjectReference, NodeAffinity, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    AIMHardwareRequirements, AIMModelSource, AIMRuntimeParameters, AIMStatus, ResolvedReference,
    spec_deref,
};
use crate::env::EnvVar;

/// The fields every service template has, namespace- or cluster-scoped.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AIMServiceTemplateSpecCommon {
    /// Environment of the inference containers (and of discovery jobs, for namespace
    /// templates). Overrides the runtime config's and the profile's variables of the same name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema_ext::env_list::<Vec<EnvVar>>")]
    pub env: Vec<EnvVar>,
    /// Secrets for pulling images in discovery jobs and inference pods: in the template's
    /// namespace, or in the operator namespace for cluster templates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::local_object_references")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// `metadata.name` of the AIMModel or AIMClusterModel this template runs.
    #[schemars(length(min = 1))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("model name is immutable"))]
    pub model_name: String,
    /// Model weights this template needs. When set, discovery is skipped and these are used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_sources: Vec<AIMModelSource>,
    /// Optimisation goal, precision and hardware (each immutable).
    #[serde(flatten)]
    pub parameters: AIMRuntimeParameters,
    /// The AIM profile the discovery job and the runtime must use (`AIM_PROFILE_ID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_id: Option<String>,
    /// Default container resources of services using this template; a service's own values
    /// override them per resource name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_k8s::resource_requirements")]
    pub resources: Option<ResourceRequirements>,
    /// The AIMRuntimeConfig/AIMClusterRuntimeConfig to use (namespace values merged over
    /// cluster values); `default` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_config_name: Option<String>,
    /// Service account of discovery jobs and inference pods; the namespace default when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Optimisation level (`optimized`, `preview`, `unoptimized`); overrides what discovery
    /// reports when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
}

/// Desired state of an AIMServiceTemplate.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMServiceTemplate",
    plural = "aimservicetemplates",
    singular = "aimservicetemplate",
    shortname = "aimtpl",
    category = "aim",
    category = "all",
    namespaced,
    status = "AIMServiceTemplateStatus",
    derive = "PartialEq",
    doc = "AIMServiceTemplate is a namespace-scoped runtime profile selection for an AIM model.",
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".spec.modelName"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Hardware","type":"string","jsonPath":".status.hardwareSummary"}"#,
    printcolumn = r#"{"name":"Metric","type":"string","jsonPath":".status.profile.metadata.metric"}"#,
    printcolumn = r#"{"name":"Precision","type":"string","jsonPath":".status.profile.metadata.precision"}"#
)]
pub struct AIMServiceTemplateSpec {
    /// The fields shared with AIMClusterServiceTemplate.
    #[serde(flatten)]
    pub common: AIMServiceTemplateSpecCommon,
    /// Whether the template itself pre-warms its model into an AIMTemplateCache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching: Option<AIMTemplateCachingConfig>,
}

spec_deref!(AIMServiceTemplateSpec.common => AIMServiceTemplateSpecCommon);

/// Desired state of an AIMClusterServiceTemplate: the common template fields only.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMClusterServiceTemplate",
    plural = "aimclusterservicetemplates",
    singular = "aimclusterservicetemplate",
    shortname = "aimcltpl",
    category = "aim",
    category = "all",
    status = "AIMServiceTemplateStatus",
    derive = "PartialEq",
    doc = "AIMClusterServiceTemplate is a cluster-scoped runtime profile selection for an AIM model.",
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".spec.modelName"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Hardware","type":"string","jsonPath":".status.hardwareSummary"}"#,
    printcolumn = r#"{"name":"Metric","type":"string","jsonPath":".status.profile.metadata.metric"}"#,
    printcolumn = r#"{"name":"Precision","type":"string","jsonPath":".status.profile.metadata.precision"}"#
)]
#[serde(transparent)]
pub struct AIMClusterServiceTemplateSpec(pub AIMServiceTemplateSpecCommon);

spec_deref!(AIMClusterServiceTemplateSpec(AIMServiceTemplateSpecCommon));

/// Template-driven caching: the template creates an AIMTemplateCache named like itself.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AIMTemplateCachingConfig {
    /// Whether the template caches its model sources.
    #[serde(default)]
    pub enabled: bool,
    /// Environment of the download (credentials, proxies); the template's `env` when unset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema_ext::env_list::<Vec<EnvVar>>")]
    pub env: Vec<EnvVar>,
}

/// Observed state of an AIMServiceTemplate or AIMClusterServiceTemplate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMServiceTemplateStatus {
    /// Latest observations of the template's state (`Discovered`, `GPUReady`, `Ready`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::conditions")]
    pub conditions: Vec<Condition>,
    /// Retry and backoff bookkeeping of discovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery: Option<AIMDiscoveryState>,
    /// The discovery job that was run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_job: Option<ResolvedReference>,
    /// Display form of the hardware, `2 x MI300X` or `CPU`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_summary: Option<String>,
    /// Model artifacts the template needs, from discovery or `spec.modelSources`; these are
    /// what caches download.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_sources: Vec<AIMModelSource>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The profile discovery selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<AIMProfile>,
    /// The template cache serving this template, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_cache: Option<ResolvedReference>,
    /// The hardware after discovery (profile values, spec as fallback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_hardware: Option<AIMHardwareRequirements>,
    /// The model the template resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_model: Option<ResolvedReference>,
    /// Node affinity that places pods on nodes with a matching GPU (by PCI device id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema_ext::node_affinity")]
    pub resolved_node_affinity: Option<NodeAffinity>,
    /// The runtime config that was resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_runtime_config: Option<ResolvedReference>,
    /// Overall state of the template.
    #[serde(default)]
    pub status: AIMStatus,
}

/// Discovery retry bookkeeping: failures back off exponentially; a spec change resets it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMDiscoveryState {
    /// Discovery jobs started so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i32>,
    /// When the latest discovery job was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_time: Option<Time>,
    /// Why the latest discovery failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure_reason: Option<String>,
    /// Hash of the spec fields that affect discovery; a different hash resets `attempts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_hash: Option<String>,
}

/// The result of discovery: the AIM profile a template runs with.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AIMProfile {
    /// Engine configuration of the profile (free-form JSON, e.g. vLLM arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::preserve_unknown_any")]
    pub engine_args: Option<serde_json::Value>,
    /// Environment variables the profile requires.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_vars: BTreeMap<String, String>,
    /// What the profile is for: engine, GPU, count, metric, precision, type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<AIMProfileMetadata>,
    /// The discovery job's raw JSON output.
    #[serde(
        default,
        rename = "originalDiscoveryOutput",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::schema::preserve_unknown_any")]
    pub original_discovery_output: Option<serde_json::Value>,
}

/// The characteristics of a discovered profile.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMProfileMetadata {
    /// Inference engine, e.g. `vllm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// GPU model the profile is tuned for, e.g. `MI300X`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// GPUs per replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_count: Option<i32>,
    /// Optimisation goal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<AIMMetric>,
    /// Numeric precision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<AIMPrecision>,
    /// Optimisation level; selection skips non-optimized profiles unless allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#type: Option<AIMProfileType>,
}

/// The optimisation goal of a profile.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AIMMetric {
    /// Low end-to-end latency.
    Latency,
    /// High sustained requests per second.
    Throughput,
}

/// The numeric precision of a profile.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AIMPrecision {
    /// Chosen by the runtime.
    Auto,
    /// 4-bit floating point.
    Fp4,
    /// 8-bit floating point.
    Fp8,
    /// 16-bit floating point.
    Fp16,
    /// 32-bit floating point.
    Fp32,
    /// bfloat16.
    Bf16,
    /// 4-bit integer.
    Int4,
    /// 8-bit integer.
    Int8,
}

/// How far a profile has been tuned.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AIMProfileType {
    /// Tuned for performance.
    Optimized,
    /// Experimental or pre-release.
    Preview,
    /// No specific optimisation.
    Unoptimized,
}
