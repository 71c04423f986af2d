//! The ModelService root: [`ModelServiceSpec`] (which derives the [`ModelService`] kind) and the
//! model, engine, accelerator and monitoring sections.
//!
//! Field names, types, defaults and bounds are upstream's (otterscale/api, CRD generation
//! `2229b3ae`). Defaulted fields are plain values carrying the CRD default, so an object read
//! back from the API server and one parsed from a manifest look the same; optional sections
//! whose absence means something (`prefill`, `routingProxy`, `inferencePool`, `httpRoute`,
//! `monitoring`) stay `Option`s.

use k8s_openapi::api::core::v1::LocalObjectReference;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::epp::InferencePoolSpec;
use super::roles::RoleSpec;
use super::routing::{HttpRouteSpec, RoutingProxySpec};
use super::status::ModelServiceStatus;
use crate::accelerator::Accelerator;
use crate::env::EnvVar;

/// Desired state of a ModelService: one OCI-packaged model served by vLLM, optionally split into
/// prefill and decode pods, behind an InferencePool and its Endpoint Picker, with an optional
/// Gateway API HTTPRoute.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "model.otterscale.io",
    version = "v1alpha1",
    kind = "ModelService",
    plural = "modelservices",
    singular = "modelservice",
    category = "otterscale",
    namespaced,
    status = "ModelServiceStatus",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".spec.model.name"}"#,
    printcolumn = r#"{"name":"Decode","type":"string","jsonPath":".status.decodeReady","priority":1}"#,
    printcolumn = r#"{"name":"Prefill","type":"string","jsonPath":".status.prefillReady","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ModelServiceSpec {
    /// The OCI model artifact and the name it is served under.
    pub model: ModelSpec,
    /// The vLLM engine container, shared by decode and prefill pods.
    pub engine: EngineSpec,
    /// The accelerator hardware; decides the device-plugin resource the pods request.
    pub accelerator: AcceleratorSpec,
    /// The decode pods, or the only serving pods when `prefill` is unset.
    pub decode: RoleSpec,
    /// Separate prefill pods for prefill/decode disaggregation. Requires `routingProxy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill: Option<RoleSpec>,
    /// The llm-d routing sidecar in decode pods, which sends prompts to the prefill pods.
    /// Required when `prefill` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_proxy: Option<RoutingProxySpec>,
    /// Explicit InferencePool and Endpoint Picker settings. When unset, the operator still
    /// creates both, with its own defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inference_pool: Option<InferencePoolSpec>,
    /// An HTTPRoute from a Gateway to the InferencePool. When unset, the operator's default
    /// Gateway (if configured) is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_route: Option<HttpRouteSpec>,
    /// Prometheus scraping of the serving pods. When unset, PodMonitors are created (upstream
    /// behaviour); only an explicit `podMonitor.enabled: false` turns them off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring: Option<MonitoringSpec>,
}

/// The model artifact and its serving identity.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelSpec {
    /// The name clients put in the OpenAI `model` field; passed to vLLM as
    /// `--served-model-name`.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// OCI reference of the ModelPack artifact, e.g. `registry.example.com/models/qwen3-32b:v1`.
    /// It is unpacked into `mountPath` by an init container before vLLM starts.
    #[schemars(length(min = 1))]
    pub image: String,
    /// Where the model is mounted in the serving containers; also vLLM's model argument. An
    /// empty value means `/models`, as upstream treats it ([`ModelSpec::effective_mount_path`]).
    #[serde(default = "default_mount_path")]
    pub mount_path: String,
    /// Pull secrets for the model artifact (and every other image of the serving pods). Each is
    /// also handed to the unpacking init container, which tries them in order as its registry
    /// credentials until one works.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::local_object_references")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
}

impl ModelSpec {
    /// The mount path in effect: `mountPath`, or [`DEFAULT_MOUNT_PATH`] when it is empty. Upstream
    /// applies the same fallback wherever it uses the path (volume mounts, `MODEL_MOUNT_PATH`,
    /// the first `vllm serve` argument), so an explicit `mountPath: ""` serves from `/models`.
    pub fn effective_mount_path(&self) -> &str {
        if self.mount_path.is_empty() {
            DEFAULT_MOUNT_PATH
        } else {
            &self.mount_path
        }
    }
}

/// The default of `spec.model.mountPath`, in the CRD and as upstream's fallback for `""`.
pub const DEFAULT_MOUNT_PATH: &str = "/models";

fn default_mount_path() -> String {
    DEFAULT_MOUNT_PATH.to_owned()
}

/// The vLLM container of decode and prefill pods.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EngineSpec {
    /// vLLM container image; the operator's `--default-engine-image` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Pull policy of the vLLM container (`Always`, `IfNotPresent`, `Never`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
    /// Extra vLLM arguments, appended after the generated ones (vLLM's last value wins).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment variables, after the generated `TP_SIZE`, `DP_SIZE` and
    /// `DP_SIZE_LOCAL`. A literal `VLLM_NIXL_SIDE_CHANNEL_PORT` also becomes the container port
    /// `nixl-side`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// The serving port. With the routing proxy on, the proxy listens here in decode pods and
    /// vLLM moves to `routingProxy.targetPort`. Also the InferencePool target port.
    #[serde(default = "default_engine_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
}

fn default_engine_port() -> i32 {
    8000
}

/// The accelerator of the serving pods.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceleratorSpec {
    /// Accelerator kind; each pod requests `tensor × dataLocal` of its device-plugin resource.
    #[serde(rename = "type")]
    pub r#type: AcceleratorType,
}

/// Accelerator hardware, with upstream's spelling.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum AcceleratorType {
    /// NVIDIA GPUs, `nvidia.com/gpu`.
    #[serde(rename = "nvidia")]
    Nvidia,
    /// AMD GPUs, `amd.com/gpu`.
    #[serde(rename = "amd")]
    Amd,
    /// Intel Gaudi, `habana.ai/gaudi`.
    #[serde(rename = "intel-gaudi")]
    IntelGaudi,
    /// Google TPUs, `google.com/tpu`.
    #[serde(rename = "google")]
    Google,
    /// CPU only; no device resource is requested.
    #[serde(rename = "cpu")]
    Cpu,
}

impl AcceleratorType {
    /// The device-plugin resource name upstream requests (from [`crate::accelerator`]), `None`
    /// for CPU.
    pub fn resource_name(self) -> Option<&'static str> {
        match self {
            Self::Nvidia => Some(Accelerator::Nvidia.resource_name()),
            Self::Amd => Some(Accelerator::Amd.resource_name()),
            Self::IntelGaudi => Some(Accelerator::IntelGaudi.resource_name()),
            Self::Google => Some(Accelerator::GoogleTpu.resource_name()),
            Self::Cpu => None,
        }
    }
}

/// Observability settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitoringSpec {
    /// Prometheus PodMonitors for the serving pods. When unset, they are created with the
    /// defaults below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_monitor: Option<PodMonitorSpec>,
}

/// A Prometheus Operator PodMonitor per serving role.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodMonitorSpec {
    /// Whether PodMonitors are created. `true` also creates the EPP ServiceMonitor when
    /// `inferencePool` is set.
    #[serde(default)]
    pub enabled: bool,
    /// Named container port to scrape; `http` is the vLLM port.
    #[serde(default = "default_port_name")]
    pub port_name: String,
    /// HTTP path of the metrics endpoint.
    #[serde(default = "default_metrics_path")]
    pub path: String,
    /// Scrape interval, a Prometheus duration such as `30s`.
    #[serde(default = "default_interval")]
    pub interval: String,
}

impl Default for PodMonitorSpec {
    fn default() -> Self {
        Self {
            enabled: false,
            port_name: default_port_name(),
            path: default_metrics_path(),
            interval: default_interval(),
        }
    }
}

fn default_port_name() -> String {
    "http".to_owned()
}

fn default_metrics_path() -> String {
    "/metrics".to_owned()
}

fn default_interval() -> String {
    "30s".to_owned()
}
