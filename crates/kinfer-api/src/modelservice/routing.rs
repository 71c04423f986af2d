//! Request routing in front of vLLM: the llm-d routing sidecar of decode pods and the Gateway API
//! HTTPRoute to the InferencePool.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The llm-d routing sidecar, a native sidecar of decode pods. It listens on `engine.port`,
/// forwards to vLLM on `targetPort`, and runs the prefill step on a prefill pod first when the
/// EPP picked one.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutingProxySpec {
    /// Sidecar image; the operator's `--default-routing-proxy-image` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// KV-cache transfer protocol, `--connector` (e.g. `nixlv2`).
    #[serde(default = "default_connector")]
    pub connector: String,
    /// The port vLLM listens on in decode pods while the sidecar holds `engine.port`
    /// (`--vllm-port`).
    #[serde(default = "default_target_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub target_port: i32,
    /// `--zap-encoder`, the log encoding (`json`, `console`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zap_encoder: Option<String>,
    /// `--zap-log-level` (`debug`, `info`, `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zap_log_level: Option<String>,
    /// `--secure-proxy`: TLS on the sidecar's listener. Always passed, because the sidecar's own
    /// default is `true`.
    #[serde(default)]
    pub secure_proxy: bool,
    /// `--prefiller-use-tls`: TLS towards the prefill pods; the sidecar's default when unset.
    #[serde(
        default,
        rename = "prefillerUseTLS",
        skip_serializing_if = "Option::is_none"
    )]
    pub prefiller_use_tls: Option<bool>,
    /// `--cert-path`: directory of the sidecar's TLS certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_path: Option<String>,
}

fn default_connector() -> String {
    "nixlv2".to_owned()
}

fn default_target_port() -> i32 {
    8200
}

/// An HTTPRoute `<name>` from a Gateway to the InferencePool `<name>`.
///
/// Upstream documents it as "requires InferencePool to be set", but the operator creates the
/// InferencePool even when `spec.inferencePool` is unset, so the route works without it and
/// kinfer does not reject that combination.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpRouteSpec {
    /// The Gateway the route attaches to.
    pub gateway_ref: GatewayRef,
    /// Host names the route matches; every host name when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
}

/// A Gateway API Gateway (group `gateway.networking.k8s.io`, kind `Gateway`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayRef {
    /// Name of the Gateway.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Namespace of the Gateway; the ModelService namespace when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
