//! AIMRuntimeConfig and AIMClusterRuntimeConfig: defaults for the AIM resources that name them.
//!
//! A resource's `runtimeConfigName` (default `default`) selects the namespace config and the
//! cluster config of that name; the namespace one is merged over the cluster one. Both kinds
//! share one spec and status; the cluster kind's spec is a transparent newtype so both CRDs carry
//! the identical schema.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    AIMLabelPropagationConfig, AIMRuntimeRoutingConfig, AIMStorageConfig, spec_deref,
};
use crate::env::EnvVar;

/// Desired state of an AIMRuntimeConfig or AIMClusterRuntimeConfig.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMRuntimeConfig",
    plural = "aimruntimeconfigs",
    singular = "aimruntimeconfig",
    shortname = "aimrc",
    category = "aim",
    category = "all",
    namespaced,
    status = "AIMRuntimeConfigStatus",
    derive = "PartialEq",
    doc = "AIMRuntimeConfig holds namespace-scoped defaults for AIM resources."
)]
#[serde(rename_all = "camelCase")]
pub struct AIMRuntimeConfigSpec {
    /// Deprecated: use `storage.defaultStorageClassName`, which it is migrated into when that
    /// is unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_storage_class_name: Option<String>,
    /// Default environment of inference containers (below template and service env).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema_ext::env_list::<Vec<EnvVar>>")]
    pub env: Vec<EnvVar>,
    /// Which parent labels are copied onto created child resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_propagation: Option<AIMLabelPropagationConfig>,
    /// Model defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<AIMModelDefaults>,
    /// Deprecated: use `storage.pvcHeadroomPercent`, which it is migrated into when that is
    /// unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pvc_headroom_percent: Option<i32>,
    /// Default HTTP routing of services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<AIMRuntimeRoutingConfig>,
    /// Default storage of artifacts and caches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<AIMStorageConfig>,
}

/// Desired state of an AIMClusterRuntimeConfig: the same fields as an AIMRuntimeConfig.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMClusterRuntimeConfig",
    plural = "aimclusterruntimeconfigs",
    singular = "aimclusterruntimeconfig",
    shortname = "aimclrc",
    category = "aim",
    category = "all",
    status = "AIMRuntimeConfigStatus",
    derive = "PartialEq",
    doc = "AIMClusterRuntimeConfig holds cluster-wide defaults for AIM resources."
)]
#[serde(transparent)]
pub struct AIMClusterRuntimeConfigSpec(pub AIMRuntimeConfigSpec);

spec_deref!(AIMClusterRuntimeConfigSpec(AIMRuntimeConfigSpec));

/// Model creation and discovery defaults (runtime configs only).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMModelDefaults {
    /// Whether models run discovery by default. Declared upstream but not read by its operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_discovery: Option<bool>,
}

/// Observed state of a runtime config.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMRuntimeConfigStatus {
    /// Reconciliation progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::conditions")]
    pub conditions: Vec<Condition>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
