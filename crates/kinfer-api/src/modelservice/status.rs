//! Observed state of a ModelService.
//!
//! Every field upstream writes is here with upstream's type (`observedGeneration`, `phase`,
//! `decodeReady`/`decodeReplicas`, `prefillReady`/`prefillReplicas`, `conditions`). Deliberate
//! differences, all for NOTES.md section g item 13 (no Failed phase, no per-component
//! conditions, no component counts):
//!
//! - `phase` is an enum in the schema (upstream's CRD: any string). Its values are those of
//!   upstream's Go type, `Pending`, `Running`, `Ready` and `Failed`; upstream never writes
//!   `Failed`, kinfer writes it when the spec is invalid or a reconcile step fails. Every value
//!   upstream writes is accepted, and the enum guarantees the operator can always parse the
//!   status it reads back.
//! - `eppReady` / `eppReplicas` are extra: the Endpoint Picker Deployment's counts.
//! - `conditions` keep upstream's schema; kinfer writes one condition per component, with the
//!   types in [`condition_types`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Observed state, written by the operator only.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelServiceStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// One-word summary of the lifecycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ModelServicePhase>,
    /// Ready decode pods (the decode Deployment's `status.readyReplicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ready: Option<i32>,
    /// Desired decode pods (the decode Deployment's `spec.replicas`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_replicas: Option<i32>,
    /// Ready prefill pods; only when `spec.prefill` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_ready: Option<i32>,
    /// Desired prefill pods; only when `spec.prefill` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_replicas: Option<i32>,
    /// Ready Endpoint Picker pods. kinfer extension (not in the upstream CRD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epp_ready: Option<i32>,
    /// Desired Endpoint Picker pods. kinfer extension (not in the upstream CRD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epp_replicas: Option<i32>,
    /// `Ready` plus one condition per component; see [`condition_types`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema_k8s::conditions")]
    pub conditions: Vec<Condition>,
}

/// The lifecycle summary in `status.phase`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub enum ModelServicePhase {
    /// The decode Deployment does not exist yet.
    Pending,
    /// Serving pods are starting: fewer ready than desired.
    Running,
    /// Every desired serving pod is ready.
    Ready,
    /// The spec is invalid or a component cannot be reconciled; the conditions say why.
    /// Written by kinfer only (upstream never sets it).
    Failed,
}

impl ModelServicePhase {
    /// The spelling in `status.phase`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Ready => "Ready",
            Self::Failed => "Failed",
        }
    }
}

/// Condition types kinfer writes to `status.conditions`.
///
/// Upstream writes only `Ready` (reason `ReconcileError` on failure); the others are kinfer's
/// per-component conditions (NOTES.md section g, items 11 and 13).
pub mod condition_types {
    /// Every component is available and the serving pods are ready (upstream's condition).
    pub const READY: &str = "Ready";
    /// The spec passed [`Validate`](crate::validation::Validate); `False` lists every violation.
    pub const SPEC_VALID: &str = "SpecValid";
    /// The decode Deployment has all desired pods available.
    pub const DECODE_AVAILABLE: &str = "DecodeAvailable";
    /// The prefill Deployment has all desired pods available (only with `spec.prefill`).
    pub const PREFILL_AVAILABLE: &str = "PrefillAvailable";
    /// The Endpoint Picker Deployment is available.
    pub const ENDPOINT_PICKER_AVAILABLE: &str = "EndpointPickerAvailable";
    /// A parent Gateway accepted the InferencePool (from the pool's `status.parents`).
    pub const INFERENCE_POOL_ACCEPTED: &str = "InferencePoolAccepted";
    /// The InferencePool's references resolve (from the pool's `status.parents`).
    pub const INFERENCE_POOL_RESOLVED_REFS: &str = "InferencePoolResolvedRefs";
    /// The parent Gateway accepted the HTTPRoute (from the route's `status.parents`).
    pub const HTTP_ROUTE_ACCEPTED: &str = "HTTPRouteAccepted";
    /// PodMonitors and the EPP ServiceMonitor are in place, or `False` when the
    /// prometheus-operator CRDs are missing (the reconcile carries on without them).
    pub const MONITORING_READY: &str = "MonitoringReady";
}

/// Condition reasons: upstream's five reasons of `Ready`, plus kinfer's.
pub mod condition_reasons {
    /// `Ready=False`: the decode Deployment does not exist yet (upstream).
    pub const DEPLOYMENT_NOT_FOUND: &str = "DeploymentNotFound";
    /// `Ready=False`: no serving pod is ready yet (upstream).
    pub const PODS_STARTING: &str = "PodsStarting";
    /// `Ready=False`: some but not all serving pods are ready (upstream).
    pub const PARTIALLY_READY: &str = "PartiallyReady";
    /// `Ready=True`: every desired serving pod is ready (upstream).
    pub const ALL_REPLICAS_READY: &str = "AllReplicasReady";
    /// A reconcile step failed; the message is the error (upstream).
    pub const RECONCILE_ERROR: &str = "ReconcileError";
    /// The spec failed validation; the message lists every violation with its field path.
    pub const INVALID_SPEC: &str = "InvalidSpec";
}
