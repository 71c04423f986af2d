//! AIMService autoscaling: KEDA scaling on per-pod custom metrics (OpenTelemetry).
//!
//! The operator maps this onto the KServe `AutoScalingSpec` of the inference service; the HPA
//! is created by KEDA. Kept apart from `service.rs` because it is a self-contained shape.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Advanced autoscaling of a service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AIMServiceAutoScaling {
    /// The metrics to scale on, each with its target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<AIMServiceMetricsSpec>,
}

/// One autoscaling metric.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AIMServiceMetricsSpec {
    /// The per-pod metric, when `type` is `PodMetric`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub podmetric: Option<AIMServicePodMetricSource>,
    /// The kind of metric source.
    pub r#type: AIMMetricSourceType,
}

/// The kinds of autoscaling metric sources.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum AIMMetricSourceType {
    /// A custom metric reported by each pod.
    #[default]
    PodMetric,
}

/// A metric describing each pod of the scale target, and its target value.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AIMServicePodMetricSource {
    /// Which metric, from which backend.
    pub metric: AIMServicePodMetric,
    /// The value the autoscaler maintains.
    pub target: AIMServiceMetricTarget,
}

/// Identification and backend of a pod metric.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMServicePodMetric {
    /// The metrics backend.
    #[serde(default)]
    pub backend: AIMMetricsBackend,
    /// Metrics collected from the pods and sent to `serverAddress`, e.g.
    /// `vllm:num_requests_running`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metric_names: Vec<String>,
    /// Aggregation over time: `last_one` (the default), `avg`, `max`, `min`, `rate`, `count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_over_time: Option<String>,
    /// Query retrieving the metric from the backend (backend syntax).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Address of the backend; `keda-otel-scaler.keda.svc:4317` for OpenTelemetry when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_address: Option<String>,
}

/// Metrics backends.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AIMMetricsBackend {
    /// The KEDA OpenTelemetry scaler.
    #[default]
    Opentelemetry,
}

/// The target of an autoscaling metric.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AIMServiceMetricTarget {
    /// Target average utilisation in percent of the request, for `Utilization`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average_utilization: Option<i32>,
    /// Target average across pods, as a quantity (`100m`), for `AverageValue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average_value: Option<String>,
    /// How the target is expressed.
    pub r#type: AIMMetricTargetType,
    /// Target value, as a quantity (`1`), for `Value`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// How an autoscaling target is expressed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum AIMMetricTargetType {
    /// An absolute value (`value`).
    #[default]
    Value,
    /// An average across pods (`averageValue`).
    AverageValue,
    /// A percentage of the requested resource (`averageUtilization`).
    Utilization,
}
