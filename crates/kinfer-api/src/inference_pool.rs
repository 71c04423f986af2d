//! Typed subset of the Gateway API Inference Extension InferencePool,
//! `inference.networking.k8s.io/v1`.
//!
//! Contract: the fields kinfer sets (pool selector, target ports, endpoint picker reference)
//! and the status it reads (per-parent conditions), with upstream's names, shapes and
//! defaults, so a built pool validates against the upstream CRD (GAIE) and round-trips.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A pool of model-server pods behind one endpoint picker.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "inference.networking.k8s.io",
    version = "v1",
    kind = "InferencePool",
    plural = "inferencepools",
    namespaced,
    status = "InferencePoolStatus",
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct InferencePoolSpec {
    /// Labels selecting the model-server pods of the pool.
    pub selector: LabelSelector,
    /// The model-server ports traffic is sent to (upstream allows up to 8).
    pub target_ports: Vec<Port>,
    /// The endpoint picker (EPP) service that chooses a pod per request.
    pub endpoint_picker_ref: EndpointPickerRef,
}

/// Equality-based label selector (upstream `LabelSelector` with `matchLabels` only).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels a pod must carry.
    pub match_labels: BTreeMap<String, String>,
}

/// A port number.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Port {
    /// The port, 1-65535.
    pub number: i32,
}

/// What the gateway does when the endpoint picker is unavailable.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum FailureMode {
    /// Route to any pod of the pool.
    FailOpen,
    /// Reject the request (the upstream default).
    #[default]
    FailClose,
}

/// Reference to the endpoint picker's Service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPickerRef {
    /// API group of the referent; `""` for core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind of the referent (`Service`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name of the referent.
    pub name: String,
    /// The ext-proc port of the referent (required for a Service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<Port>,
    /// Behaviour when the picker is unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_mode: Option<FailureMode>,
}

/// The part of the pool's status kinfer reads.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InferencePoolStatus {
    /// One entry per Gateway the pool is attached to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parents: Option<Vec<ParentStatus>>,
}

/// The pool's status as seen by one parent Gateway.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParentStatus {
    /// The parent.
    pub parent_ref: ParentReference,
    /// `Accepted`, `ResolvedRefs`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The controller that wrote this entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_name: Option<String>,
}

/// A reference to a parent Gateway.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ParentReference {
    /// API group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name.
    pub name: String,
    /// Namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
