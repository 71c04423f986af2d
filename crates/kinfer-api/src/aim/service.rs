//! AIMService: one inference service, a model run with a template through KServe.
//!
//! The service names its model (by name, by image, or inline as a custom model), optionally a
//! template (otherwise one is selected), replicas or autoscaling, caching, routing and
//! per-service overrides. Upstream's `status.status` enum lacks `NotAvailable` although its
//! state engine can derive it (a template whose GPU is absent); ours includes it, see
//! [`AIMServiceState`].

use k8s_openapi::api::core::v1::{LocalObjectReference, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::autoscaling::AIMServiceAutoScaling;
use super::common::{
    AIMHardwareRequirements, AIMModelSource, AIMRuntimeParameters, AIMRuntimeRoutingConfig,
    AIMStatus, AIMStorageConfig, CachingMode, ResolvedReference,
};
use crate::env::EnvVar;

/// The message of the CEL rule that a service names its model exactly one way.
pub(crate) const ONE_MODEL_REFERENCE: &str =
    "exactly one of name, image, or custom must be specified";

/// The message of the CEL rule that an inline custom model has a model source.
pub(crate) const CUSTOM_MODEL_NEEDS_SOURCE: &str = "at least one model source must be specified";

/// Desired state of an AIMService.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "aim.eai.amd.com",
    version = "v1alpha1",
    kind = "AIMService",
    plural = "aimservices",
    singular = "aimservice",
    shortname = "aimsvc",
    category = "aim",
    category = "all",
    namespaced,
    status = "AIMServiceStatus",
    derive = "PartialEq",
    doc = "AIMService runs an AIM model with a service template as a KServe inference service.",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".status.resolvedModel.name"}"#,
    printcolumn = r#"{"name":"Template","type":"string","jsonPath":".status.resolvedTemplate.name"}"#,
    printcolumn = r#"{"name":"Replicas","type":"string","jsonPath":".status.runtime.replicas"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AIMServiceSpec {
    /// KEDA autoscaling on custom (OpenTelemetry) metrics; set `minReplicas` and `maxReplicas`
    /// with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_scaling: Option<AIMServiceAutoScaling>,
    /// Deprecated and ignored: use `caching.mode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_model: Option<bool>,
    /// How the model weights are cached; `Shared` when unset. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("caching mode is immutable after creation"))]
    pub caching: Option<AIMServiceCachingConfig>,
    /// Environment of the inference container; highest precedence (service > template >
    /// runtime config > profile).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema_ext::env_list::<Vec<EnvVar>>")]
    pub env: Vec<EnvVar>,
    /// Secrets for pulling the AIM image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::local_object_references")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Upper bound of autoscaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_replicas: Option<i32>,
    /// Lower bound of autoscaling (1 when autoscaling and unset; no scale to zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_replicas: Option<i32>,
    /// The model to serve. Immutable.
    #[x_kube(validation = Rule::new("self == oldSelf").message("model selection is immutable after creation"))]
    pub model: AIMServiceModel,
    /// Template parameters this service overrides; a derived template is created with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<AIMRuntimeParameters>,
    /// Fixed replica count, used when not autoscaling.
    #[serde(default = "default_replicas")]
    pub replicas: i32,
    /// Container resources, overriding the template's and model's per resource name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema_k8s::resource_requirements")]
    pub resources: Option<ResourceRequirements>,
    /// HTTP routing of this service, overriding the runtime config's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<AIMRuntimeRoutingConfig>,
    /// The AIMRuntimeConfig/AIMClusterRuntimeConfig to use (namespace values merged over
    /// cluster values); `default` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_config_name: Option<String>,
    /// Service account of the inference pods; the namespace default when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Storage of this service's caches, overriding the runtime config's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<AIMStorageConfig>,
    /// Template choice: a named template, or automatic selection. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("template selection is immutable after creation"))]
    pub template: Option<AIMServiceTemplateSelection>,
}

fn default_replicas() -> i32 {
    1
}

/// The model of a service: exactly one of `name`, `image` and `custom`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("(has(self.name) ? 1 : 0) + (has(self.image) ? 1 : 0) + (has(self.custom) ? 1 : 0) == 1").message(ONE_MODEL_REFERENCE))]
pub struct AIMServiceModel {
    /// A custom model: base image, weights and hardware. A matching AIMModel is found or
    /// created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<AIMServiceModelCustom>,
    /// An AIM image; the AIMModel (or AIMClusterModel) with this image is used, or an AIMModel
    /// is created for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `metadata.name` of an AIMModel in the namespace, else of an AIMClusterModel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// An inline custom model.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("size(self.modelSources) >= 1").message(CUSTOM_MODEL_NEEDS_SOURCE))]
#[serde(rename_all = "camelCase")]
pub struct AIMServiceModelCustom {
    /// The AIM base image that runs the weights (the created AIMModel's image).
    pub base_image: String,
    /// GPU and CPU requirements of the model.
    pub hardware: AIMHardwareRequirements,
    /// The model weights; the AIM runtime supports exactly one source.
    #[schemars(length(min = 1, max = 1))]
    pub model_sources: Vec<AIMModelSource>,
}

/// Template choice of a service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMServiceTemplateSelection {
    /// Whether automatic selection may choose templates whose profile is not `optimized`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unoptimized: Option<bool>,
    /// The AIMServiceTemplate (namespace first) or AIMClusterServiceTemplate to use; selected
    /// automatically when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Caching of a service's model weights.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AIMServiceCachingConfig {
    /// Shared or dedicated caches (legacy values accepted and normalised).
    #[serde(default)]
    pub mode: AIMServiceCachingMode,
}

/// A service's caching mode: the two canonical values and three legacy spellings.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum AIMServiceCachingMode {
    /// A cache owned by this service.
    Dedicated,
    /// A cache shared with every service of the same template.
    #[default]
    Shared,
    /// Legacy, read as `Shared`.
    Auto,
    /// Legacy, read as `Shared`.
    Always,
    /// Legacy, read as `Dedicated`.
    Never,
}

impl AIMServiceCachingMode {
    /// The canonical mode a value stands for (upstream's normalisation).
    pub fn normalized(self) -> CachingMode {
        match self {
            Self::Dedicated | Self::Never => CachingMode::Dedicated,
            Self::Shared | Self::Auto | Self::Always => CachingMode::Shared,
        }
    }
}

/// Observed state of an AIMService.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMServiceStatus {
    /// The template cache in use and its retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<AIMServiceCacheStatus>,
    /// Latest observations of the service's state (`ModelReady`, `TemplateReady`,
    /// `InferenceServiceReady`, `Ready`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::conditions")]
    pub conditions: Vec<Condition>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The model the service resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_model: Option<ResolvedReference>,
    /// The runtime config that was resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_runtime_config: Option<ResolvedReference>,
    /// The template the service resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_template: Option<ResolvedReference>,
    /// The route, when routing is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<AIMServiceRoutingStatus>,
    /// Replica counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<AIMServiceRuntimeStatus>,
    /// Overall state of the service.
    #[serde(default)]
    pub status: AIMServiceState,
}

/// Cache bookkeeping of a service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMServiceCacheStatus {
    /// How often a failed cache has been retried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema_ext::integer")]
    pub retry_attempts: Option<i64>,
    /// The AIMTemplateCache in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_cache_ref: Option<ResolvedReference>,
}

/// The route of a service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AIMServiceRoutingStatus {
    /// HTTP path prefix of the route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Replica counts of a service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMServiceRuntimeStatus {
    /// Current replicas, as reported by the HPA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_replicas: Option<i32>,
    /// Desired replicas, as decided by the HPA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_replicas: Option<i32>,
    /// Upper autoscaling bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<i32>,
    /// Lower autoscaling bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// Display form for kubectl: `N`, or `current/desired (min-max)` when autoscaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<String>,
}

/// The lifecycle state of a service (`status.status`).
///
/// Upstream's enum is `Pending, Starting, Running, Degraded, Failed`; `NotAvailable` is added
/// because the state engine derives it (e.g. the resolved template needs an absent GPU) and an
/// update with a value outside the enum is rejected. `Progressing` and `Ready` are written as
/// `Starting` and `Running` (the `From<AIMStatus>` conversion).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum AIMServiceState {
    /// Waiting for the model, template or cache.
    #[default]
    Pending,
    /// The inference service is being created or is starting.
    Starting,
    /// Serving.
    Running,
    /// Running with errors expected to clear.
    Degraded,
    /// Stopped on an error that needs a change.
    Failed,
    /// Cannot run in this cluster (e.g. the required GPU is absent).
    NotAvailable,
}

impl From<AIMStatus> for AIMServiceState {
    /// Upstream's mapping of the generic status onto a service's.
    fn from(status: AIMStatus) -> Self {
        match status {
            AIMStatus::Pending => Self::Pending,
            AIMStatus::Progressing => Self::Starting,
            AIMStatus::Ready => Self::Running,
            AIMStatus::Degraded => Self::Degraded,
            AIMStatus::Failed => Self::Failed,
            AIMStatus::NotAvailable => Self::NotAvailable,
        }
    }
}
