//! AIMArtifact: one model download into a PVC (kaiwo's AIMModelCache, renamed).
//!
//! The operator sizes the PVC (from `spec.size` or a check-size job, plus headroom), runs a
//! download job, and the downloader pod patches its progress into `status.download` and
//! `status.progress`. Inference pods mount the PVC at `/workspace/cache/<modelId>`.

use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{AIMStatus, CachingMode, MODEL_ID_PATTERN, SOURCE_URI_PATTERN};
use crate::env::EnvVar;

/// The downloader image used when `spec.modelDownloadImage` is unset.
pub const DEFAULT_MODEL_DOWNLOAD_IMAGE: &str = "ghcr.io/silogen/aim-artifact-downloader:0.2.0";

/// Desired state of an AIMArtifact.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMArtifact",
    plural = "aimartifacts",
    singular = "aimartifact",
    shortname = "aimart",
    category = "aim",
    category = "all",
    namespaced,
    status = "AIMArtifactStatus",
    derive = "PartialEq",
    doc = "AIMArtifact downloads one model into a persistent volume.",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Mode","type":"string","jsonPath":".status.mode"}"#,
    printcolumn = r#"{"name":"Model Size","type":"string","jsonPath":".status.displaySize"}"#,
    printcolumn = r#"{"name":"Progress","type":"string","jsonPath":".status.progress.displayPercentage"}"#,
    printcolumn = r#"{"name":"Protocol","type":"string","jsonPath":".status.download.protocol","priority":1}"#,
    printcolumn = r#"{"name":"Attempt","type":"string","jsonPath":".status.download.attempt","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AIMArtifactSpec {
    /// Environment of the download, e.g. registry or Hugging Face credentials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema_ext::env_list::<Vec<EnvVar>>")]
    pub env: Vec<EnvVar>,
    /// Secrets for pulling the downloader image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::local_object_references")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Image of the download job.
    #[serde(default = "default_model_download_image")]
    pub model_download_image: String,
    /// Canonical `{org}/{name}` id, the download path under `/workspace/cache`. Derived from
    /// the URI for `hf://` sources; must be given for `s3://` sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = MODEL_ID_PATTERN))]
    pub model_id: Option<String>,
    /// The AIMRuntimeConfig/AIMClusterRuntimeConfig to use; `default` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_config_name: Option<String>,
    /// Size of the cache volume; discovered by a check-size job when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity")]
    pub size: Option<Quantity>,
    /// What to download: `hf://org/model` or `s3://bucket/key`. Identifies the artifact;
    /// immutable.
    #[schemars(length(min = 1), regex(pattern = SOURCE_URI_PATTERN))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("sourceUri is immutable"))]
    pub source_uri: String,
    /// Storage class of the volume; the cluster default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

fn default_model_download_image() -> String {
    DEFAULT_MODEL_DOWNLOAD_IMAGE.into()
}

impl AIMArtifactSpec {
    /// An artifact for `source_uri` with every other field at its default.
    pub fn for_source(source_uri: impl Into<String>) -> Self {
        Self {
            env: Vec::new(),
            image_pull_secrets: Vec::new(),
            model_download_image: default_model_download_image(),
            model_id: None,
            runtime_config_name: None,
            size: None,
            source_uri: source_uri.into(),
            storage_class_name: None,
        }
    }
}

/// Observed state of an AIMArtifact.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMArtifactStatus {
    /// Size requested for the PVC, headroom included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity")]
    pub allocated_size: Option<Quantity>,
    /// Latest observations of the artifact's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::conditions")]
    pub conditions: Vec<Condition>,
    /// Model size in bytes found by the check-size job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovered_size_bytes: Option<i64>,
    /// Human-readable effective size (spec or discovered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_size: Option<String>,
    /// The current download attempt, patched by the downloader pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download: Option<AIMArtifactDownloadState>,
    /// Headroom percentage applied to the PVC size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headroom_percent: Option<i32>,
    /// When a deployment last used this artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<Time>,
    /// `Dedicated` when the artifact has an owner, else `Shared`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<CachingMode>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Name of the PVC holding the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim: Option<String>,
    /// Download progress while Progressing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<AIMArtifactProgress>,
    /// Overall state of the artifact.
    #[serde(default)]
    pub status: AIMStatus,
}

/// The download attempt in progress, as the downloader reports it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMArtifactDownloadState {
    /// Current attempt, counted from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i32>,
    /// Status message of the downloader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Protocol in use: `XET`, `HF_TRANSFER`, `HTTP`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Configured protocol fallback sequence, e.g. `XET,HF_TRANSFER`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_sequence: Option<String>,
    /// Attempts configured (one per protocol of `AIM_DOWNLOADER_PROTOCOL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_attempts: Option<i32>,
}

/// Download progress of an artifact.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMArtifactProgress {
    /// Human-readable progress, e.g. `45 %`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_percentage: Option<String>,
    /// Bytes downloaded so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downloaded_bytes: Option<i64>,
    /// Progress in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub percentage: Option<i32>,
    /// Expected total bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<i64>,
}
