//! Shapes shared by several AIM kinds, defined once.
//!
//! Hardware requirements, model sources, storage and routing configuration (shared by
//! AIMService and the runtime configs), Gateway API parent references, references to resolved
//! objects, and the status and scope enums. Each mirrors one upstream Go type
//! (`api/v1alpha1/*_shared.go` in aim-engine) and its kubebuilder markers.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::env::EnvVar;

/// Lets a spec that wraps another be used as the wrapped one (`Deref`, `DerefMut`).
///
/// `spec_deref!(Outer.field => Inner)` derefs to a field; `spec_deref!(Cluster(Spec))` is for
/// a cluster-scoped kind whose spec is a transparent newtype of the namespaced kind's, and also
/// converts the namespaced spec into it (`From`).
macro_rules! spec_deref {
    ($outer:ident . $field:tt => $inner:ty) => {
        impl ::std::ops::Deref for $outer {
            type Target = $inner;

            fn deref(&self) -> &$inner {
                &self.$field
            }
        }

        impl ::std::ops::DerefMut for $outer {
            fn deref_mut(&mut self) -> &mut $inner {
                &mut self.$field
            }
        }
    };
    ($cluster:ident($spec:ty)) => {
        $crate::aim::common::spec_deref!($cluster.0 => $spec);

        impl From<$spec> for $cluster {
            fn from(spec: $spec) -> Self {
                Self(spec)
            }
        }
    };
}
pub(crate) use spec_deref;

/// `{org}/{name}`: the form of a model id (`meta-llama/Llama-3.1-8B`).
pub const MODEL_ID_PATTERN: &str = r"^[a-zA-Z0-9_-]+/[a-zA-Z0-9._-]+$";

/// A model download location: `hf://org/model` or `s3://bucket/key`.
pub const SOURCE_URI_PATTERN: &str = r"^(hf|s3)://[^ \t\r\n]+$";

/// The GPU resource name used when a hardware spec names none.
pub const DEFAULT_GPU_RESOURCE_NAME: &str = crate::accelerator::AMD_GPU;

/// The message of the CEL rule that hardware names GPU or CPU requirements (or both).
pub(crate) const HARDWARE_REQUIRED: &str = "at least one of gpu or cpu must be specified";

/// The message of the CEL rule that a GPU requirement names a model or a minimum VRAM, not both.
pub(crate) const GPU_MODEL_OR_MIN_VRAM: &str = "model and minVram are mutually exclusive; specify either a specific GPU model OR a minimum VRAM requirement, not both";

/// GPU and CPU requirements of one replica. At least one of `gpu` and `cpu` is set.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("has(self.gpu) || has(self.cpu)").message(HARDWARE_REQUIRED))]
pub struct AIMHardwareRequirements {
    /// CPU requirements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<AIMCpuRequirements>,
    /// GPU requirements. If not set, no GPUs are requested (a CPU-only model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<AIMGpuRequirements>,
}

/// The GPUs one replica needs: a count and either a specific model or a minimum VRAM.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new("!(has(self.model) && size(self.model) > 0 && has(self.minVram))").message(GPU_MODEL_OR_MIN_VRAM))]
#[serde(rename_all = "camelCase")]
pub struct AIMGpuRequirements {
    /// Restricts deployment to GPUs with at least this much VRAM (`64Gi`), for when any GPU big
    /// enough will do. Cannot be combined with `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity")]
    pub min_vram: Option<Quantity>,
    /// Restricts deployment to one GPU model, e.g. `MI300X`. Cannot be combined with `minVram`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub model: Option<String>,
    /// Number of GPUs set as requests and limits. `0` targets GPU nodes without consuming GPUs
    /// (useful for testing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub requests: Option<i32>,
    /// The Kubernetes extended resource name of the GPUs.
    #[serde(default = "default_gpu_resource_name")]
    pub resource_name: String,
}

impl Default for AIMGpuRequirements {
    fn default() -> Self {
        Self {
            min_vram: None,
            model: None,
            requests: None,
            resource_name: default_gpu_resource_name(),
        }
    }
}

fn default_gpu_resource_name() -> String {
    DEFAULT_GPU_RESOURCE_NAME.into()
}

/// CPU cores of one replica.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct AIMCpuRequirements {
    /// Maximum number of CPU cores allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity")]
    pub limits: Option<Quantity>,
    /// Number of CPU cores requested; must be greater than zero.
    #[schemars(schema_with = "crate::schema::quantity")]
    pub requests: Quantity,
}

/// A model artifact that must be downloaded for inference, and where from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMModelSource {
    /// Per-source credential overrides (e.g. `HF_TOKEN`), taking precedence over the
    /// resource-level env for the same name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema_ext::env_list::<Vec<EnvVar>>")]
    pub env: Vec<EnvVar>,
    /// Canonical `{org}/{name}` identifier; the model is mounted at `/workspace/cache/{modelId}`.
    #[schemars(regex(pattern = MODEL_ID_PATTERN))]
    pub model_id: String,
    /// Expected size of the artifact, used to size the cache volume. Discovered by a check-size
    /// job when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::quantity")]
    pub size: Option<Quantity>,
    /// Download location: `hf://org/model` (Hugging Face) or `s3://bucket/key`.
    #[schemars(regex(pattern = SOURCE_URI_PATTERN))]
    pub source_uri: String,
}

/// The runtime parameters a template fixes and a service may override: optimisation goal,
/// precision and hardware. Each is immutable once set.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct AIMRuntimeParameters {
    /// GPU and CPU requirements of each replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("hardware is immutable"))]
    pub hardware: Option<AIMHardwareRequirements>,
    /// Optimisation goal: `latency` (low end-to-end latency) or `throughput` (sustained
    /// requests per second). Matched case-insensitively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("metric is immutable"))]
    pub metric: Option<String>,
    /// Numeric precision of the runtime, e.g. `fp8`, `fp16`, `bf16`. Matched case-insensitively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("precision is immutable"))]
    pub precision: Option<String>,
}

/// The PVC headroom when no config sets one, in percent of the model size.
pub const DEFAULT_PVC_HEADROOM_PERCENT: i32 = 10;

/// Storage defaults for the PVCs of artifacts and caches.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMStorageConfig {
    /// Storage class for artifact and cache PVCs whose own spec names none; the cluster default
    /// class when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_storage_class_name: Option<String>,
    /// Extra space, in percent of the model size, added to model PVCs for filesystem overhead;
    /// 10 when no config sets it. Unset (rather than defaulted in the schema) so a namespace
    /// config that sets only the storage class keeps the cluster config's headroom.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub pvc_headroom_percent: Option<i32>,
}

impl AIMStorageConfig {
    /// The headroom to use: the configured one, else [`DEFAULT_PVC_HEADROOM_PERCENT`].
    pub fn headroom_percent(&self) -> i32 {
        self.pvc_headroom_percent
            .unwrap_or(DEFAULT_PVC_HEADROOM_PERCENT)
    }
}

/// HTTP routing of inference services through a Gateway API HTTPRoute.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMRuntimeRoutingConfig {
    /// Annotations added to every HTTPRoute created under this configuration.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Whether the operator manages an HTTPRoute for each inference service. A service's value
    /// overrides its runtime config's; routing is off when neither sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The Gateway that receives the HTTPRoutes (any namespace). Required once routing is
    /// enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_ref: Option<GatewayParentReference>,
    /// Path of the route, with `{jsonpath}` placeholders evaluated against the AIMService, e.g.
    /// `/{.metadata.namespace}/{.metadata.name}`. At most 200 characters once rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_template: Option<String>,
    /// Maximum duration of a request through the route, as a Go duration (`180s`); no timeout
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout: Option<String>,
}

/// Which parent labels are copied onto the child resources an AIM resource creates.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct AIMLabelPropagationConfig {
    /// Whether labels are propagated at all.
    #[serde(default)]
    pub enabled: bool,
    /// Label keys to propagate; `*` matches any sequence of characters (`team-*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub r#match: Vec<String>,
}

/// A Gateway API `ParentReference`: the Gateway (or listener) an HTTPRoute attaches to.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayParentReference {
    /// API group of the referent.
    #[serde(default = "default_gateway_group")]
    #[schemars(
        length(max = 253),
        regex(pattern = r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub group: String,
    /// Kind of the referent.
    #[serde(default = "default_gateway_kind")]
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$")
    )]
    pub kind: String,
    /// Name of the referent.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Namespace of the referent; the route's namespace when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub namespace: Option<String>,
    /// Network port the route targets on the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
    /// Name of a section (a Gateway listener) within the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    )]
    pub section_name: Option<String>,
}

impl GatewayParentReference {
    /// A reference to the Gateway `name` in `namespace`.
    pub fn gateway(name: impl Into<String>, namespace: Option<String>) -> Self {
        Self {
            group: default_gateway_group(),
            kind: default_gateway_kind(),
            name: name.into(),
            namespace,
            port: None,
            section_name: None,
        }
    }
}

fn default_gateway_group() -> String {
    "gateway.networking.k8s.io".into()
}

fn default_gateway_kind() -> String {
    "Gateway".into()
}

/// The object a reference resolved to: a template, model, runtime config, cache or job.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ResolvedReference {
    /// Fully-qualified kind of the object, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the object, when it is namespace-scoped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Whether the object is namespace- or cluster-scoped (or a merge of both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ResolutionScope>,
    /// UID of the object, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// Where a resolved object was found.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum ResolutionScope {
    /// A namespace-scoped object in the referrer's namespace.
    Namespace,
    /// A cluster-scoped object.
    Cluster,
    /// A namespace object merged over the cluster object of the same name (runtime configs).
    Merged,
    /// Not determined.
    #[default]
    Unknown,
}

/// The scope of the template an AIMTemplateCache caches.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum TemplateScope {
    /// An AIMServiceTemplate in the cache's namespace.
    Namespace,
    /// An AIMClusterServiceTemplate.
    Cluster,
    /// Not determined.
    #[default]
    Unknown,
}

impl From<TemplateScope> for ResolutionScope {
    fn from(scope: TemplateScope) -> Self {
        match scope {
            TemplateScope::Namespace => Self::Namespace,
            TemplateScope::Cluster => Self::Cluster,
            TemplateScope::Unknown => Self::Unknown,
        }
    }
}

/// Ownership of cached model artifacts.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum CachingMode {
    /// Owned by one consumer and garbage-collected with it.
    Dedicated,
    /// Without owner references: reused by every consumer of the same source, kept after them.
    #[default]
    Shared,
}

/// The lifecycle state of models, templates, template caches and artifacts (`status.status`):
/// the one [`crate::phase::Phase`] every kinfer crate uses.
pub type AIMStatus = crate::phase::Phase;
