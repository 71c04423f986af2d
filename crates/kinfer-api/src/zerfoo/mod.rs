//! ZerfooInferenceService, `zerfoo.feza.ai/v1`.
//!
//! Upstream (zerfoo `serve/operator`) defines these as plain Go structs with no CRD; this is the
//! first real schema for them. Field names and meanings are upstream's; `gatewayRef` is a kinfer
//! extension that turns the canary weight into an exact split through a Gateway API HTTPRoute.
//! The upstream `Validate()` rules are both CEL rules in the schema (so the API server rejects a
//! bad object) and [`Validate`] (so the operator reports every violation with its field path).

mod validate;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::validation::Validate;

/// Desired state of a ZerfooInferenceService: one model served by a primary Deployment, with an
/// optional canary on a second model and optional CPU autoscaling.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "zerfoo.feza.ai",
    version = "v1",
    kind = "ZerfooInferenceService",
    plural = "zerfooinferenceservices",
    singular = "zerfooinferenceservice",
    shortname = "zis",
    category = "zerfoo",
    category = "all",
    namespaced,
    status = "ZerfooInferenceServiceStatus",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Model","type":"string","jsonPath":".spec.modelRef"}"#,
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".status.replicas"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#,
    printcolumn = r#"{"name":"Canary","type":"integer","jsonPath":".spec.canary.weight"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    validation = Rule::new("!(has(self.spec.minReplicas) && has(self.spec.maxReplicas)) || self.spec.minReplicas == 0 || self.spec.maxReplicas == 0 || self.spec.minReplicas <= self.spec.maxReplicas").message("spec.minReplicas must not exceed spec.maxReplicas").field_path(".spec.minReplicas"),
    validation = Rule::new("!(has(self.spec.minReplicas) && has(self.spec.maxReplicas)) || self.spec.minReplicas == 0 || self.spec.maxReplicas == 0 || self.spec.minReplicas > self.spec.maxReplicas || (self.spec.replicas >= self.spec.minReplicas && self.spec.replicas <= self.spec.maxReplicas)").message("spec.replicas must lie within [spec.minReplicas, spec.maxReplicas] when autoscaling").field_path(".spec.replicas"),
)]
#[serde(rename_all = "camelCase")]
pub struct ZerfooInferenceServiceSpec {
    /// The model to serve, an opaque reference such as `llama3-8b-q4`.
    #[schemars(length(min = 1))]
    pub model_ref: String,
    /// Replicas of the primary Deployment. Ignored while autoscaling (the HPA owns the count),
    /// but it must lie within `[minReplicas, maxReplicas]`.
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 1))]
    pub replicas: i32,
    /// Lower bound for autoscaling. Autoscaling is on when both bounds are greater than zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_replicas: Option<i32>,
    /// Upper bound for autoscaling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_replicas: Option<i32>,
    /// CPU, memory and GPU memory for each serving pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceSpec>,
    /// A second model receiving `weight` percent of the traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<CanarySpec>,
    /// HTTP startup, readiness and liveness probing of the model server. Without it the
    /// operator probes with TCP connects to the serving port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<HealthCheckSpec>,
    /// kinfer extension: the Gateway an HTTPRoute attaches to for an exact weighted split
    /// between the primary and the canary. Overrides the operator's default gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_ref: Option<GatewayRef>,
}

fn default_replicas() -> i32 {
    1
}

/// Resources of each serving pod, as Kubernetes quantity strings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// CPU request and limit, e.g. `4` or `500m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::schema::QUANTITY_PATTERN))]
    pub cpu: Option<String>,
    /// Memory request and limit, e.g. `16Gi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::schema::QUANTITY_PATTERN))]
    pub memory: Option<String>,
    /// GPU memory the model needs, e.g. `24Gi`: the pod requests one GPU and is scheduled on a
    /// node whose GPUs have at least this much memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::schema::QUANTITY_PATTERN))]
    pub gpu_memory: Option<String>,
}

/// A canary track.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CanarySpec {
    /// The model the canary serves.
    #[schemars(length(min = 1))]
    pub model_ref: String,
    /// Percentage of traffic (0-100) sent to the canary.
    #[serde(default)]
    #[schemars(range(min = 0, max = 100))]
    pub weight: i32,
}

/// HTTP health checking of the model server.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheckSpec {
    /// HTTP path probed for readiness and liveness, e.g. `/ready`.
    #[schemars(length(min = 1))]
    pub path: String,
    /// Probe period: a duration (`30s`) or, as upstream's Go `time.Duration` is written in
    /// JSON, integer nanoseconds (`30000000000`).
    #[schemars(schema_with = "go_duration_schema")]
    pub interval: GoDuration,
    /// Probe timeout, in either form.
    #[schemars(schema_with = "go_duration_schema")]
    pub timeout: GoDuration,
}

/// A Go `time.Duration` as manifests written for upstream carry it: a duration string (`30s`,
/// `1m30s`), or an integer count of nanoseconds, which is how Go's `encoding/json` reads and
/// writes a `time.Duration`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(untagged)]
pub enum GoDuration {
    /// Nanoseconds, as Go's `encoding/json` writes a `time.Duration`.
    Nanoseconds(i64),
    /// A duration string such as `30s`.
    Text(String),
}

impl GoDuration {
    /// The duration in seconds; `None` for a string that is not a duration.
    pub fn seconds(&self) -> Option<f64> {
        match self {
            // Precision beyond 2^53 ns (about 104 days) does not matter for a probe period.
            #[allow(clippy::cast_precision_loss)]
            Self::Nanoseconds(n) => Some(*n as f64 / 1e9),
            Self::Text(text) => crate::schema::parse_duration_seconds(text),
        }
    }
}

impl std::fmt::Display for GoDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Nanoseconds(n) => write!(f, "{n}"),
            Self::Text(text) => f.write_str(text),
        }
    }
}

impl From<&str> for GoDuration {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

/// An integer or a string matching the duration grammar (`x-kubernetes-int-or-string`, as
/// controller-gen writes such a field); whether it is positive is the operator's check.
fn go_duration_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": crate::schema::DURATION_PATTERN,
    })
}

/// A Gateway API Gateway to attach the traffic-splitting HTTPRoute to.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayRef {
    /// Gateway name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Gateway namespace; the service's namespace when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    pub namespace: Option<String>,
    /// Listener name on the Gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub section_name: Option<String>,
}

/// Observed state, written by the operator only.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZerfooInferenceServiceStatus {
    /// True when every track is available and traffic is routed.
    #[serde(default)]
    pub ready: bool,
    /// Total pods desired across tracks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Total pods ready across tracks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// A human-readable summary of the state, or of the first problem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// ConfigValid, PrimaryReady, CanaryReady, AutoscalingReady, RouteReady, Ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl ZerfooInferenceServiceSpec {
    /// Autoscaling is on when both bounds are set and greater than zero (the upstream rule).
    pub fn autoscaling(&self) -> Option<(i32, i32)> {
        match (self.min_replicas, self.max_replicas) {
            (Some(min), Some(max)) if min > 0 && max > 0 => Some((min, max)),
            _ => None,
        }
    }

    /// Why autoscaling is off although one bound asks for it (one bound greater than zero
    /// without the other): upstream accepts that and does not autoscale; so does kinfer, and
    /// says so. `None` when both or neither bound is set.
    pub fn half_autoscaling(&self) -> Option<(&'static str, &'static str)> {
        let set = |v: Option<i32>| v.is_some_and(|v| v > 0);
        match (set(self.min_replicas), set(self.max_replicas)) {
            (true, false) => Some(("spec.minReplicas", "spec.maxReplicas")),
            (false, true) => Some(("spec.maxReplicas", "spec.minReplicas")),
            _ => None,
        }
    }
}
