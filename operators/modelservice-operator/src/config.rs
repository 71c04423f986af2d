//! The operator's settings: what the command-line flags resolve to.
//!
//! Contract: plain data with upstream's defaults ([`OperatorConfig::default`], NOTES section a
//! "Operator CLI flags"); no client, no I/O. The binary fills it from flags; tests construct it
//! directly.

use kinfer_builders::security::{PodIdentity, SERVING_IDENTITY};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// `--default-engine-image`: the vLLM image when `spec.engine.image` is unset.
pub const DEFAULT_ENGINE_IMAGE: &str = "ghcr.io/llm-d/llm-d-cuda:v0.5.1";
/// `--default-epp-image`: the Endpoint Picker image when the spec names none.
pub const DEFAULT_EPP_IMAGE: &str = "ghcr.io/llm-d/llm-d-inference-scheduler:v0.6.0";
/// `--default-routing-proxy-image`: the llm-d routing sidecar image.
pub const DEFAULT_ROUTING_PROXY_IMAGE: &str = "ghcr.io/llm-d/llm-d-routing-sidecar:v0.6.0";
/// `--kit-image`: the KitOps image that unpacks ModelPacks.
pub const DEFAULT_KIT_IMAGE: &str = "ghcr.io/kitops-ml/kitops:v1.11.0";
/// `--default-gateway-name`: upstream's default Gateway (empty disables the default route).
pub const DEFAULT_GATEWAY_NAME: &str = "otterscale-llm-d-infra-inference-gateway";
/// `--default-gateway-namespace`: upstream hard-codes `llm-d` (NOTES g9); kinfer makes it a flag
/// with the same default.
pub const DEFAULT_GATEWAY_NAMESPACE: &str = "llm-d";
/// `--route-request-timeout`: gateways default to 15 s, which cuts long generations.
pub const DEFAULT_REQUEST_TIMEOUT: &str = "300s";
/// `--model-size-limit`: the `sizeLimit` of the model and kit scratch volumes. Upstream left
/// them unbounded (NOTES g15): a model larger than the node's disk evicted every pod on it.
/// 256Gi holds a 70B-parameter model at 16 bits with room to spare; larger models need a larger
/// value, and an empty value restores upstream's unbounded volumes.
pub const DEFAULT_MODEL_SIZE_LIMIT: &str = "256Gi";
/// `--recheck-interval-seconds`: how often a ModelService whose token Secret is not watched is
/// reconciled anyway (repairs a deleted or edited Secret; a steady recheck writes nothing).
pub const DEFAULT_RECHECK_INTERVAL: Duration = Duration::from_mins(10);
/// The vLLM health endpoint the probes hit.
pub const ENGINE_HEALTH_PATH: &str = "/health";

/// The gateway implementation the Endpoint Picker runs behind (`--provider`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Provider {
    /// Istio: a DestinationRule with TLS to the self-signed EPP.
    #[default]
    Istio,
    /// GKE: no token Secret (GKE scrapes with its own identity).
    Gke,
    /// Nothing provider-specific.
    None,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Istio => "istio",
            Self::Gke => "gke",
            Self::None => "none",
        })
    }
}

/// A `--provider` value other than `istio`, `gke` or `none` (upstream did not validate it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider {0:?} (expected istio, gke or none)")]
pub struct ParseProviderError(String);

impl FromStr for Provider {
    type Err = ParseProviderError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "istio" => Ok(Self::Istio),
            "gke" => Ok(Self::Gke),
            "none" => Ok(Self::None),
            _ => Err(ParseProviderError(s.to_owned())),
        }
    }
}

/// OpenTelemetry settings handed to the Endpoint Picker and the routing sidecar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracing {
    /// `--tracing-enabled`.
    pub enabled: bool,
    /// `--tracing-otel-endpoint`.
    pub endpoint: String,
    /// `--tracing-sampler`.
    pub sampler: String,
    /// `--tracing-sampler-arg`.
    pub sampler_arg: String,
}

impl Tracing {
    /// The exporter the builders write, when tracing is on.
    pub fn otel(&self) -> Option<kinfer_builders::monitoring::Otel> {
        self.enabled.then(|| kinfer_builders::monitoring::Otel {
            endpoint: self.endpoint.clone(),
            sampler: self.sampler.clone(),
            sampler_arg: self.sampler_arg.clone(),
        })
    }
}

impl Default for Tracing {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: String::new(),
            sampler: "parentbased_traceidratio".to_owned(),
            sampler_arg: "0.01".to_owned(),
        }
    }
}

/// The operator's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorConfig {
    /// vLLM image when the spec names none.
    pub engine_image: String,
    /// Endpoint Picker image when the spec names none.
    pub epp_image: String,
    /// Routing sidecar image when the spec names none.
    pub routing_proxy_image: String,
    /// KitOps image of the `model-unpack` init container.
    pub kit_image: String,
    /// Pull ModelPacks over plain HTTP (test registries only; upstream always did).
    pub kit_plain_http: bool,
    /// `sizeLimit` of the model and kit scratch volumes ([`DEFAULT_MODEL_SIZE_LIMIT`]);
    /// unbounded when `None`.
    pub model_size_limit: Option<String>,
    /// Gateway implementation.
    pub provider: Provider,
    /// The default Gateway's name; no default route when empty.
    pub default_gateway_name: String,
    /// The default Gateway's namespace.
    pub default_gateway_namespace: String,
    /// Request timeout of the HTTPRoutes (Gateway API duration); none when empty.
    pub request_timeout: String,
    /// EPP metrics behind authentication (token Secret and cluster RBAC).
    pub metrics_endpoint_auth: bool,
    /// Tracing of the EPP and the routing sidecar.
    pub tracing: Tracing,
    /// Extra `--name=value` flags of every Endpoint Picker.
    pub epp_flags: BTreeMap<String, String>,
    /// Replaces the non-disaggregated plugins configuration (`default-plugins.yaml`).
    pub epp_plugins: Option<String>,
    /// Replaces the prefill/decode plugins configuration (`pd-config.yaml`).
    pub epp_pd_plugins: Option<String>,
    /// Periodic recheck of ModelServices with unwatched children (the token Secret).
    pub recheck_interval: Duration,
    /// Who engine and Endpoint Picker pods run as ([`SERVING_IDENTITY`] by default); `None`:
    /// the image's or the platform's user (`--pod-user=image`).
    pub pod_identity: Option<PodIdentity>,
}

impl Default for OperatorConfig {
    fn default() -> Self {
        Self {
            engine_image: DEFAULT_ENGINE_IMAGE.to_owned(),
            epp_image: DEFAULT_EPP_IMAGE.to_owned(),
            routing_proxy_image: DEFAULT_ROUTING_PROXY_IMAGE.to_owned(),
            kit_image: DEFAULT_KIT_IMAGE.to_owned(),
            kit_plain_http: false,
            model_size_limit: Some(DEFAULT_MODEL_SIZE_LIMIT.to_owned()),
            provider: Provider::default(),
            default_gateway_name: DEFAULT_GATEWAY_NAME.to_owned(),
            default_gateway_namespace: DEFAULT_GATEWAY_NAMESPACE.to_owned(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT.to_owned(),
            metrics_endpoint_auth: true,
            tracing: Tracing::default(),
            epp_flags: BTreeMap::new(),
            epp_plugins: None,
            epp_pd_plugins: None,
            recheck_interval: DEFAULT_RECHECK_INTERVAL,
            pod_identity: Some(SERVING_IDENTITY),
        }
    }
}

/// `--pod-user`: who engine and Endpoint Picker pods run as ([`OperatorConfig::pod_identity`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodUser(pub Option<PodIdentity>);

/// `--pod-user`: `image` (no user set: the image's or the platform's), or a non-root UID that
/// is also the pod's group and volume group.
pub fn parse_pod_user(s: &str) -> Result<PodUser, String> {
    if s == "image" {
        return Ok(PodUser(None));
    }
    match s.parse::<i64>() {
        Ok(id) if (1..=i64::from(i32::MAX)).contains(&id) => Ok(PodUser(Some(PodIdentity {
            run_as_user: id,
            run_as_group: id,
            fs_group: id,
        }))),
        _ => Err(format!(
            "{s:?}: a non-root user ID (1 to {}) or \"image\"",
            i32::MAX
        )),
    }
}

/// A flag that is not `name=value`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid EPP flag {0:?} (expected name=value, e.g. kv-cache-usage-percentage-metric=vllm:kv_cache_usage_perc)"
)]
pub struct ParseFlagError(pub String);

/// Parses one `[--]name=value` EPP flag.
pub fn parse_flag(s: &str) -> Result<(String, String), ParseFlagError> {
    let trimmed = s.trim().trim_start_matches('-');
    match trimmed.split_once('=') {
        Some((name, value))
            if !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Ok((name.to_owned(), value.to_owned()))
        }
        _ => Err(ParseFlagError(s.to_owned())),
    }
}

/// A `--model-size-limit` that is not a byte quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size limit {0:?} (expected a quantity such as 256Gi, or empty for none)")]
pub struct ParseSizeLimitError(pub String);

/// Parses `--model-size-limit`: a byte quantity, or empty for unbounded volumes.
pub fn parse_size_limit(s: &str) -> Result<Option<String>, ParseSizeLimitError> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    match kinfer_api::quantity::parse_bytes(s) {
        Ok(n) if n > 0 => Ok(Some(s.to_owned())),
        _ => Err(ParseSizeLimitError(s.to_owned())),
    }
}

/// Parses a list of flags, one per line (blank lines and `#` comments skipped).
pub fn parse_flags(text: &str) -> Result<BTreeMap<String, String>, ParseFlagError> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(parse_flag)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_and_flags() {
        assert_eq!("gke".parse::<Provider>().unwrap(), Provider::Gke);
        assert!("aws".parse::<Provider>().is_err());
        assert_eq!(
            parse_flag("--v=2").unwrap(),
            ("v".to_owned(), "2".to_owned())
        );
        assert!(parse_flag("novalue").is_err());
        assert!(parse_flag("=x").is_err());
        let flags = parse_flags("# c\n--a=1\n\nb=x=y\n").unwrap();
        assert_eq!(flags["b"], "x=y");
        assert_eq!(flags.len(), 2);
        assert_eq!(parse_size_limit("").unwrap(), None);
        assert_eq!(parse_size_limit("100Gi").unwrap().as_deref(), Some("100Gi"));
        assert!(parse_size_limit("lots").is_err());
        assert!(parse_size_limit("0").is_err());
        let c = OperatorConfig::default();
        assert_eq!(
            c.model_size_limit.as_deref(),
            Some(DEFAULT_MODEL_SIZE_LIMIT)
        );
        assert!(c.metrics_endpoint_auth);
        assert_eq!(c.provider, Provider::Istio);
    }
}
