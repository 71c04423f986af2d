//! AIMModel and AIMClusterModel: catalog entries for AIM container images.
//!
//! A model names an AIM image; the operator reads the image's labels into
//! `status.imageMetadata` and creates one service template per recommended deployment. Custom
//! models instead list their weights in `modelSources` and templates in `customTemplates`. The
//! two kinds share one spec and status (as upstream's Go types do); the cluster kind's spec is a
//! transparent newtype so both CRDs carry the identical schema.

use k8s_openapi::api::core::v1::{LocalObjectReference, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    AIMHardwareRequirements, AIMModelSource, AIMStatus, ResolvedReference, spec_deref,
};
use super::image_metadata::ImageMetadata;
use crate::env::EnvVar;

/// The message of the CEL rule that custom templates of a model with `modelSources` have
/// hardware (their own or `custom.hardware`).
pub(crate) const MODEL_SOURCES_NEED_HARDWARE: &str = "when using modelSources, hardware must be specified: set custom.hardware (inherited by all templates) or set hardware on each template individually";

/// Desired state of an AIMModel or AIMClusterModel.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMModel",
    plural = "aimmodels",
    singular = "aimmodel",
    shortname = "aimmdl",
    category = "aim",
    category = "all",
    namespaced,
    status = "AIMModelStatus",
    derive = "PartialEq",
    doc = "AIMModel is a namespace-scoped catalog entry for an AIM container image.",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Source","type":"string","jsonPath":".status.sourceType"}"#,
    printcolumn = r#"{"name":"Image","type":"string","jsonPath":".spec.image"}"#,
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".status.imageMetadata.model.canonicalName"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[x_kube(validation = Rule::new("!has(self.modelSources) || size(self.modelSources) == 0 || (has(self.custom) && has(self.custom.hardware)) || !has(self.customTemplates) || size(self.customTemplates) == 0 || self.customTemplates.all(t, has(t.hardware) || (has(self.custom) && has(self.custom.hardware)))").message(MODEL_SOURCES_NEED_HARDWARE))]
#[serde(rename_all = "camelCase")]
pub struct AIMModelSpec {
    /// Defaults for custom models (models with inline `modelSources`); ignored for image-based
    /// models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<AIMModelCustomConfig>,
    /// Templates created directly, without a discovery job. Additive to the templates generated
    /// from the image metadata; with `modelSources` and no custom templates, one template is
    /// generated from `custom.hardware`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub custom_templates: Vec<AIMCustomTemplate>,
    /// The AIMServiceTemplate services of this model use when they name none; automatic
    /// selection when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_service_template: Option<String>,
    /// Metadata extraction and template generation switches; runtime config defaults when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery: Option<AIMModelDiscoveryConfig>,
    /// Environment for model discovery and metadata extraction, e.g. registry or Hugging Face
    /// credentials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema_ext::env_list::<Vec<EnvVar>>")]
    pub env: Vec<EnvVar>,
    /// The AIM container image: inspected for metadata, run for discovery and for inference.
    #[schemars(length(min = 1))]
    pub image: String,
    /// Image metadata supplied by hand (air-gapped clusters). When set, the registry is never
    /// contacted and this is used as the image's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_metadata: Option<ImageMetadata>,
    /// Secrets for pulling and inspecting the image: in the model's namespace, or in the
    /// operator namespace for cluster models. Merged with runtime config defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::local_object_references")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Model weights to use instead of those discovered from the image (a custom model). The
    /// AIM runtime supports a single source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1))]
    pub model_sources: Vec<AIMModelSource>,
    /// Default container resources of services using this model; templates and services
    /// override them per resource name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_k8s::resource_requirements")]
    pub resources: Option<ResourceRequirements>,
    /// The AIMRuntimeConfig/AIMClusterRuntimeConfig to use (namespace values merged over
    /// cluster values); `default` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_config_name: Option<String>,
    /// Service account of model workloads (metadata extraction, discovery); the namespace
    /// default when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// Desired state of an AIMClusterModel: the same fields as an AIMModel.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMClusterModel",
    plural = "aimclustermodels",
    singular = "aimclustermodel",
    shortname = "aimclmdl",
    category = "aim",
    category = "all",
    status = "AIMModelStatus",
    derive = "PartialEq",
    doc = "AIMClusterModel is a cluster-scoped catalog entry for an AIM container image.",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Source","type":"string","jsonPath":".status.sourceType"}"#,
    printcolumn = r#"{"name":"Image","type":"string","jsonPath":".spec.image"}"#,
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".status.imageMetadata.model.canonicalName"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(transparent)]
pub struct AIMClusterModelSpec(pub AIMModelSpec);

spec_deref!(AIMClusterModelSpec(AIMModelSpec));

/// Defaults shared by the templates of a custom model.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AIMModelCustomConfig {
    /// Hardware of every template; a template's own hardware overrides it field by field.
    /// Required when `modelSources` is set and a custom template has no hardware.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<AIMHardwareRequirements>,
    /// Default template type (`optimized`, `preview`, `unoptimized`); templates default to
    /// `unoptimized` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
}

/// A template declared on the model itself, created without a discovery job.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct AIMCustomTemplate {
    /// Environment overrides applied when this template is selected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        schema_with = "super::schema_ext::env_list::<Vec<EnvVar>>",
        length(max = 64)
    )]
    pub env: Vec<EnvVar>,
    /// Hardware of this template, merged field by field over `spec.custom.hardware`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<AIMHardwareRequirements>,
    /// Template name; generated from the model name and profile when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 63))]
    pub name: Option<String>,
    /// Profile values used to select among several templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<AIMTemplateProfile>,
    /// Optimisation status: `optimized` (tuned), `preview` (experimental) or `unoptimized`.
    #[serde(default = "default_custom_template_type")]
    pub r#type: String,
}

impl Default for AIMCustomTemplate {
    fn default() -> Self {
        Self {
            env: Vec::new(),
            hardware: None,
            name: None,
            profile: None,
            r#type: default_custom_template_type(),
        }
    }
}

fn default_custom_template_type() -> String {
    "unoptimized".into()
}

/// Runtime profile variables of a custom template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AIMTemplateProfile {
    /// Optimisation target, e.g. `latency` or `throughput`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// Numeric precision, e.g. `fp8`, `fp16`, `bf16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
}

/// What the operator discovers for a model on its own.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMModelDiscoveryConfig {
    /// Whether service templates are generated from the image's recommended deployments.
    #[serde(default = "default_true")]
    pub create_service_templates: bool,
    /// Whether the image's labels are read from the registry.
    #[serde(default = "default_true")]
    pub extract_metadata: bool,
}

impl Default for AIMModelDiscoveryConfig {
    fn default() -> Self {
        Self {
            create_service_templates: true,
            extract_metadata: true,
        }
    }
}

fn default_true() -> bool {
    true
}

/// Observed state of an AIMModel or AIMClusterModel.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMModelStatus {
    /// Latest observations of the model's state (`ImageMetadataReady`,
    /// `ServiceTemplatesReady`, `Ready`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::conditions")]
    pub conditions: Vec<Condition>,
    /// Metadata read from the image's labels (or copied from `spec.imageMetadata`); extracted
    /// once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_metadata: Option<ImageMetadata>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The runtime config that was resolved for this model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_runtime_config: Option<ResolvedReference>,
    /// Whether the model's weights come from the image or from `spec.modelSources`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<AIMModelSourceType>,
    /// Overall state, the worst of its templates' states.
    #[serde(default)]
    pub status: AIMStatus,
}

/// How a model's weights are sourced.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum AIMModelSourceType {
    /// Discovered from the AIM image.
    Image,
    /// Listed in `spec.modelSources`.
    Custom,
}
