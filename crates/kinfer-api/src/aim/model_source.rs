//! AIMClusterModelSource: keeps AIMClusterModels in sync with the images of a registry.
//!
//! Every `syncInterval` the operator lists the registry's repositories and tags matching the
//! filters and version constraints and creates an AIMClusterModel per image, up to `maxModels`.
//! Models are never deleted.

use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of an AIMClusterModelSource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMClusterModelSource",
    plural = "aimclustermodelsources",
    singular = "aimclustermodelsource",
    shortname = "aimclsrc",
    category = "aim",
    category = "all",
    status = "AIMClusterModelSourceStatus",
    derive = "PartialEq",
    doc = "AIMClusterModelSource discovers AIM images in a registry and syncs them as AIMClusterModels.",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Models","type":"integer","jsonPath":".status.discoveredModels"}"#,
    printcolumn = r#"{"name":"LastSync","type":"date","jsonPath":".status.lastSyncTime"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AIMClusterModelSourceSpec {
    /// Which images to sync; an image matching any filter is included.
    #[schemars(length(min = 1, max = 100))]
    pub filters: Vec<AIMModelSourceFilter>,
    /// Secrets (in the operator namespace) for listing the registry and reading image labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::local_object_references")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Most AIMClusterModels this source creates; discovery stops creating models beyond it.
    #[serde(default = "default_max_models")]
    #[schemars(
        schema_with = "super::schema_ext::integer",
        range(min = 1, max = 10000)
    )]
    pub max_models: i64,
    /// The registry to list, e.g. `docker.io`, `ghcr.io`.
    #[serde(default = "default_registry")]
    pub registry: String,
    /// How often to sync, as a Go duration (`30m`, `1h`, `2h30m`); 15m or more avoids rate
    /// limits.
    #[serde(default = "default_sync_interval")]
    pub sync_interval: String,
    /// Semantic version constraints for every filter (`>=1.0.0`, `~1.2.0`); non-semver tags
    /// are skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
}

fn default_max_models() -> i64 {
    100
}

fn default_registry() -> String {
    "docker.io".into()
}

fn default_sync_interval() -> String {
    "1h".into()
}

/// An image pattern to sync.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AIMModelSourceFilter {
    /// Repository names (without registry) to skip, e.g. `silogen/aim-base`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Image pattern: `org/repo*`, `org/repo:1.0.0`, or a full URI (`ghcr.io/org/repo*`) that
    /// overrides `spec.registry`; `*` matches any characters. A tag overrides the versions.
    #[schemars(length(max = 512))]
    pub image: String,
    /// Version constraints of this filter, replacing `spec.versions`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
}

/// Observed state of an AIMClusterModelSource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMClusterModelSourceStatus {
    /// Images in the registry matching the filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema_ext::integer")]
    pub available_models: Option<i64>,
    /// Latest observations of the source's state (`MaxModelsLimitReached`, `Ready`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::conditions")]
    pub conditions: Vec<Condition>,
    /// AIMClusterModels managed by this source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema_ext::integer")]
    pub discovered_models: Option<i64>,
    /// When the registry was last synced successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_time: Option<Time>,
    /// Whether `maxModels` has been reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models_limit_reached: Option<bool>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Overall state of the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AIMModelSourceState>,
}

/// The lifecycle state of a model source (`status.status`; upstream's eight values).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum AIMModelSourceState {
    /// Not yet synced.
    Pending,
    /// Starting up.
    Starting,
    /// Syncing.
    Progressing,
    /// Synced.
    Ready,
    /// Synced and syncing periodically.
    Running,
    /// Syncing with errors expected to clear.
    Degraded,
    /// The registry cannot be used.
    NotAvailable,
    /// Stopped on an error that needs a change.
    Failed,
}
