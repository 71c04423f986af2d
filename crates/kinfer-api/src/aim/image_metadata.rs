//! Model metadata carried by an AIM container image's OCI labels.
//!
//! The AIM operator reads the image config labels of an AIMModel's `spec.image` (prefix
//! `com.amd.aim.`, falling back to the legacy `org.amd.silogen.`) and records them in
//! `status.imageMetadata`; a user can also supply the same structure in `spec.imageMetadata`
//! (air-gapped clusters), in which case no registry is contacted. The shape is upstream's
//! `ImageMetadata`; it is a public type of its own because label parsing (in `kinfer-oci`)
//! produces it and the AIMModel/AIMClusterModel kinds store it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Metadata of an AIM image: the AIM-specific model labels, the standard OCI labels and the raw
/// labels they were parsed from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageMetadata {
    /// AIM model labels (`com.amd.aim.model.*`, `com.amd.aim.title`, ...), parsed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelMetadata>,
    /// Standard OCI labels (`org.opencontainers.image.*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci: Option<OciMetadata>,
    /// Every label of the image config, verbatim, keyed by label name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub original_labels: BTreeMap<String, String>,
}

/// The AIM model labels of an image (label suffixes after `com.amd.aim.`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelMetadata {
    /// Canonical model identifier such as `meta-llama/Llama-3.1-8B-Instruct`
    /// (label `model.canonicalName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_name: Option<String>,
    /// Long description of the model (label `description.full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description_full: Option<String>,
    /// Whether pulling the model weights needs a Hugging Face token (label `hfToken.required`,
    /// parsed like Go's `strconv.ParseBool`; absent when the label is missing or unparsable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hf_token_required: Option<bool>,
    /// Deployments the image publisher recommends; one service template is generated for each
    /// (label `model.recommendedDeployments`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recommended_deployments: Vec<RecommendedDeployment>,
    /// Release notes of this image version (label `release.notes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_notes: Option<String>,
    /// Where the model weights come from, e.g. `hf://meta-llama/Llama-3.1-8B-Instruct`
    /// (label `model.source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Descriptive tags such as `text-generation`, `chat` (label `model.tags`, comma-separated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Human-readable AIM title of the image (label `title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Model variants (label `model.variants`, comma-separated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<String>,
    /// Available model versions (label `model.versions`, comma-separated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
}

/// One recommended deployment of a model image: the GPU, count, precision and optimisation goal
/// an AIM profile was tuned for. Every field is optional; unknown keys in the label are ignored.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecommendedDeployment {
    /// Free-text explanation, e.g. `Optimized for latency on MI300X using fp8 precision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Number of GPUs per replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_count: Option<i32>,
    /// GPU model, e.g. `MI300X`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_model: Option<String>,
    /// Optimisation goal, `latency` or `throughput`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// Numeric precision, e.g. `fp8`, `fp16`, `bf16`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
    /// The AIM profile this deployment uses; becomes the template's `profileId` and the
    /// `AIM_PROFILE_ID` environment variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_id: Option<String>,
}

/// The standard OCI image labels (`org.opencontainers.image.<field>`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OciMetadata {
    /// Contact details of the people or organisation responsible for the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authors: Option<String>,
    /// Creation date and time of the image (RFC 3339, as written in the label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Short human-readable description of the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// URL of the image documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation: Option<String>,
    /// SPDX license expression of the image contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub licenses: Option<String>,
    /// Source control revision the image was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// URL of the source code the image was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Human-readable title of the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Organisation that produced the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Version of the packaged software.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The OCI label prefix AIM images use for model metadata.
pub const LABEL_PREFIX: &str = "com.amd.aim.";

/// The legacy label prefix, read when a `com.amd.aim.` label is missing or empty.
pub const LEGACY_LABEL_PREFIX: &str = "org.amd.silogen.";

/// The prefix of the standard OCI labels recorded in [`ImageMetadata::oci`].
pub const OCI_LABEL_PREFIX: &str = "org.opencontainers.image.";
