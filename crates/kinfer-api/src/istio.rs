//! Typed subset of Istio's DestinationRule, `networking.istio.io/v1beta1`.
//!
//! `v1beta1` (served since Istio 1.1 and still served) rather than `v1` (Istio ≥ 1.22 only): it
//! is what otterscale's model-operator writes, so an adopted rule keeps its version and older
//! meshes work. Contract: the host and the TLS client settings kinfer sets for the endpoint picker (which
//! serves self-signed TLS), with upstream's names, so a built rule validates against the
//! upstream CRD and round-trips.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Traffic policy for one destination host.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "networking.istio.io",
    version = "v1beta1",
    kind = "DestinationRule",
    plural = "destinationrules",
    namespaced,
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct DestinationRuleSpec {
    /// The service host, fully qualified (`<svc>.<ns>.svc.cluster.local`).
    pub host: String,
    /// Policies applied to traffic to the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_policy: Option<TrafficPolicy>,
}

/// Traffic policy (the TLS part).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct TrafficPolicy {
    /// TLS settings for connections to the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ClientTlsSettings>,
}

/// TLS mode of upstream connections.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TlsMode {
    /// Plain text.
    #[default]
    Disable,
    /// TLS to the upstream.
    Simple,
    /// Mutual TLS with client certificates.
    Mutual,
    /// Istio mutual TLS.
    IstioMutual,
}

/// Client TLS settings.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientTlsSettings {
    /// The TLS mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<TlsMode>,
    /// Skip verification of the server certificate (the picker's is self-signed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,
}
