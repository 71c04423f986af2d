//! kaiwo's AIMService (`aim.silogen.ai/v1alpha1`) and its migration to aim-engine's.
//!
//! AIM began inside silogen/kaiwo; aim-engine renamed the group and several fields
//! (`model.ref` → `model.name`, `templateRef` → `template.name`, `cacheModel` →
//! `caching.mode`, `overrides.gpuSelector` → `overrides.hardware.gpu`, top-level
//! `defaultStorageClassName`/`pvcHeadroomPercent` → `storage`) and dropped others (`kvCache`,
//! service-level `labelPropagation`, `model.autoDiscovery`). [`LegacyAimService`] reads a kaiwo
//! manifest (or object) and [`migrate`] turns it into an [`AIMService`], listing what it could
//! not carry over.
//!
//! Unknown spec fields are **rejected** (`deny_unknown_fields`) rather than preserved: every field
//! of kaiwo's CRD is declared here and either migrated or reported as dropped, so a field this
//! module does not know can only be a typo or a kaiwo version it was not written for, and a
//! migration that silently loses part of a manifest is worse than one that refuses it. Fields
//! that are only ever dropped (`kvCache`) are kept as raw JSON, so nothing has to be typed that
//! is never used. No CRD is generated for these types (`schema = "disabled"`): kinfer does not
//! serve the kaiwo group.

use k8s_openapi::api::core::v1::{LocalObjectReference, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::autoscaling::AIMServiceAutoScaling;
use super::common::{
    AIMGpuRequirements, AIMHardwareRequirements, AIMLabelPropagationConfig, AIMRuntimeParameters,
    AIMRuntimeRoutingConfig, AIMStorageConfig, DEFAULT_GPU_RESOURCE_NAME,
};
use super::service::{
    AIMService, AIMServiceCachingConfig, AIMServiceCachingMode, AIMServiceModel, AIMServiceSpec,
    AIMServiceTemplateSelection,
};
use crate::env::EnvVar;

/// Desired state of a kaiwo AIMService.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "aim.silogen.ai",
    version = "v1alpha1",
    kind = "AIMService",
    root = "LegacyAimService",
    plural = "aimservices",
    namespaced,
    schema = "disabled",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacyAimServiceSpec {
    /// KEDA autoscaling; the same shape as aim-engine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_scaling: Option<AIMServiceAutoScaling>,
    /// Whether the model sources are cached before the service starts (kaiwo default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_model: Option<bool>,
    /// Storage class of caches and PVCs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_storage_class_name: Option<String>,
    /// Environment of the inference container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Secrets for pulling the AIM image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// The Redis-backed LMCache KV cache (kaiwo only; dropped by the migration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache: Option<serde_json::Value>,
    /// Label propagation (in aim-engine a runtime config setting only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_propagation: Option<AIMLabelPropagationConfig>,
    /// Upper bound of autoscaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<i32>,
    /// Lower bound of autoscaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// The model: exactly one of `ref` and `image`.
    pub model: LegacyAimServiceModel,
    /// Template parameters this service overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<LegacyAimServiceOverrides>,
    /// Extra space, in percent, added to cache PVCs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pvc_headroom_percent: Option<i32>,
    /// Fixed replica count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Container resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// HTTP routing; the same shape as aim-engine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<AIMRuntimeRoutingConfig>,
    /// The runtime config to use (kaiwo default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_config_name: Option<String>,
    /// Service account of the inference pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Template selection options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<LegacyAimServiceTemplate>,
    /// The AIMServiceTemplate or AIMClusterServiceTemplate to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_ref: Option<String>,
}

/// The model of a kaiwo AIMService.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacyAimServiceModel {
    /// Whether an auto-created model runs discovery (kaiwo default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_discovery: Option<bool>,
    /// An AIM image, for which a model is found or created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `metadata.name` of an AIMModel or AIMClusterModel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#ref: Option<String>,
}

/// The overrides of a kaiwo AIMService.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacyAimServiceOverrides {
    /// GPU model and count of each replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_selector: Option<LegacyGpuSelector>,
    /// Optimisation goal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// Numeric precision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
}

/// kaiwo's GPU requirement: a model and a count.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacyGpuSelector {
    /// GPUs per replica.
    pub count: i32,
    /// GPU model, e.g. `MI300X`.
    pub model: String,
    /// Extended resource name (kaiwo default `amd.com/gpu`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
}

/// The template options of a kaiwo AIMService.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LegacyAimServiceTemplate {
    /// Whether automatic selection may choose unoptimized profiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unoptimized: Option<bool>,
}

/// Migrates a kaiwo AIMService to an aim-engine AIMService.
///
/// Metadata keeps `name`, `namespace`, `labels` and `annotations` (server-populated fields do
/// not carry over to a new object). Renamed fields are moved; the returned strings name each
/// field that has no aim-engine equivalent and was dropped. `cacheModel: true` becomes
/// `caching.mode: Shared`; `false` (kaiwo's default, also when absent) becomes `Dedicated`,
/// upstream's reading of the legacy "never share" intent (`Never` → `Dedicated`).
pub fn migrate(legacy: &LegacyAimService) -> (AIMService, Vec<String>) {
    let spec = &legacy.spec;
    let mut warnings = Vec::new();

    if spec.kv_cache.is_some() {
        warnings.push(
            "spec.kvCache dropped: aim-engine has no KV cache (kaiwo's AIMKVCache with LMCache)"
                .into(),
        );
    }
    if spec.label_propagation.is_some() {
        warnings.push(
            "spec.labelPropagation dropped: aim-engine reads label propagation from the runtime config; set it in the AIMRuntimeConfig's spec.labelPropagation".into(),
        );
    }
    if let Some(auto_discovery) = spec.model.auto_discovery {
        warnings.push(format!(
            "spec.model.autoDiscovery ({auto_discovery}) dropped: aim-engine configures discovery on the AIMModel (spec.discovery)"
        ));
    }

    let caching_mode = if spec.cache_model == Some(true) {
        AIMServiceCachingMode::Shared
    } else {
        AIMServiceCachingMode::Dedicated
    };
    let template = (spec.template_ref.is_some() || spec.template.is_some()).then(|| {
        AIMServiceTemplateSelection {
            allow_unoptimized: spec.template.as_ref().and_then(|t| t.allow_unoptimized),
            name: spec.template_ref.clone(),
        }
    });
    let storage = (spec.default_storage_class_name.is_some()
        || spec.pvc_headroom_percent.is_some())
    .then(|| AIMStorageConfig {
        default_storage_class_name: spec.default_storage_class_name.clone(),
        pvc_headroom_percent: spec.pvc_headroom_percent,
    });

    let new_spec = AIMServiceSpec {
        auto_scaling: spec.auto_scaling.clone(),
        cache_model: None,
        caching: Some(AIMServiceCachingConfig { mode: caching_mode }),
        env: spec.env.clone(),
        image_pull_secrets: spec.image_pull_secrets.clone(),
        max_replicas: spec.max_replicas,
        min_replicas: spec.min_replicas,
        model: AIMServiceModel {
            custom: None,
            image: spec.model.image.clone(),
            name: spec.model.r#ref.clone(),
        },
        overrides: spec.overrides.as_ref().map(migrate_overrides),
        replicas: spec.replicas.unwrap_or(1),
        resources: spec.resources.clone(),
        routing: spec.routing.clone(),
        runtime_config_name: spec.runtime_config_name.clone(),
        service_account_name: spec.service_account_name.clone(),
        storage,
        template,
    };

    let mut service = AIMService::new(
        legacy.metadata.name.as_deref().unwrap_or_default(),
        new_spec,
    );
    service.metadata = ObjectMeta {
        name: legacy.metadata.name.clone(),
        namespace: legacy.metadata.namespace.clone(),
        labels: legacy.metadata.labels.clone(),
        annotations: legacy.metadata.annotations.clone(),
        ..ObjectMeta::default()
    };
    (service, warnings)
}

fn migrate_overrides(overrides: &LegacyAimServiceOverrides) -> AIMRuntimeParameters {
    AIMRuntimeParameters {
        hardware: overrides
            .gpu_selector
            .as_ref()
            .map(|gpu| AIMHardwareRequirements {
                cpu: None,
                gpu: Some(AIMGpuRequirements {
                    min_vram: None,
                    model: Some(gpu.model.clone()),
                    requests: Some(gpu.count),
                    resource_name: gpu
                        .resource_name
                        .clone()
                        .unwrap_or_else(|| DEFAULT_GPU_RESOURCE_NAME.into()),
                }),
            }),
        metric: overrides.metric.clone(),
        precision: overrides.precision.clone(),
    }
}
