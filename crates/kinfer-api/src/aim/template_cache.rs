//! AIMTemplateCache: pre-warms the model artifacts of one service template.
//!
//! For each of the template's model sources the cache finds or creates an AIMArtifact (a PVC
//! plus a download job) and records it in `status.artifacts`; inference services wait for their
//! cache to be Ready. Created by services (shared or dedicated) and by templates with caching
//! enabled.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{AIMModelSource, AIMStatus, CachingMode, ResolvedReference, TemplateScope};
use crate::env::EnvVar;

/// Desired state of an AIMTemplateCache.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMTemplateCache",
    plural = "aimtemplatecaches",
    singular = "aimtemplatecache",
    shortname = "aimtc",
    category = "aim",
    category = "all",
    namespaced,
    status = "AIMTemplateCacheStatus",
    derive = "PartialEq",
    doc = "AIMTemplateCache pre-warms the model artifacts of a service template.",
    printcolumn = r#"{"name":"Template","type":"string","jsonPath":".spec.templateName"}"#,
    printcolumn = r#"{"name":"Mode","type":"string","jsonPath":".spec.mode"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".status.resolvedTemplateKind"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AIMTemplateCacheSpec {
    /// Image of the artifact download jobs; the operator's default downloader when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_image: Option<String>,
    /// Environment of the downloads, e.g. registry or Hugging Face credentials.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema_ext::env_list::<Vec<EnvVar>>")]
    pub env: Vec<EnvVar>,
    /// Secrets for pulling the download image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::local_object_references")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Ownership of the artifacts: `Dedicated` (owned by this cache) or `Shared` (unowned,
    /// reused and kept; owned artifacts found are promoted to shared).
    #[serde(default)]
    pub mode: CachingMode,
    /// The sources to cache, normally copied from the template's resolved model sources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_sources: Vec<AIMModelSource>,
    /// The AIMRuntimeConfig/AIMClusterRuntimeConfig to use; `default` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_config_name: Option<String>,
    /// Storage class of the cache volumes; the cluster default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// The AIMServiceTemplate (looked up first) or AIMClusterServiceTemplate to cache.
    #[schemars(length(min = 1))]
    pub template_name: String,
    /// Whether the template is namespace- or cluster-scoped; set during template resolution.
    pub template_scope: TemplateScope,
}

/// Observed state of an AIMTemplateCache.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMTemplateCacheStatus {
    /// The AIMArtifact serving each model, keyed by model name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub artifacts: BTreeMap<String, AIMResolvedArtifact>,
    /// Latest observations of the cache's state (`ArtifactsReady`, `Ready`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::conditions")]
    pub conditions: Vec<Condition>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The runtime config that was resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_runtime_config: Option<ResolvedReference>,
    /// Kind of the template found: AIMServiceTemplate or AIMClusterServiceTemplate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_template_kind: Option<String>,
    /// Overall state, the worst of its artifacts' states.
    #[serde(default)]
    #[schemars(schema_with = "super::schema_ext::template_cache_status")]
    pub status: AIMStatus,
}

/// The AIMArtifact holding one model of a template cache.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMResolvedArtifact {
    /// The model that is cached.
    pub model: String,
    /// Where the artifact is mounted in inference pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_point: Option<String>,
    /// Name of the AIMArtifact.
    pub name: String,
    /// Name of the artifact's PVC, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim: Option<String>,
    /// The artifact's `status.status`.
    pub status: String,
    /// UID of the AIMArtifact.
    pub uid: String,
}
