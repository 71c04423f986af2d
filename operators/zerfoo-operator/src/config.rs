//! The operator's settings: what the command-line flags resolve to.
//!
//! Contract: plain data with defaults ([`OperatorConfig::default`]); no client, no I/O. The
//! binary fills it from flags; tests construct it directly.

use kinfer_builders::autoscaling::DEFAULT_CPU_UTILIZATION;
use kinfer_builders::gateway::GatewayRef;
/// The GPU vendor (resource and memory label) and the ports are the builders'.
pub use kinfer_builders::zerfoo::{GpuVendor, ParseVendorError, SERVER_PORT, SERVICE_PORT};

/// The model server image unless `--server-image` says otherwise.
pub const DEFAULT_SERVER_IMAGE: &str = "ghcr.io/zerfoo/zerfoo:latest";

/// A `--default-gateway` value that is not `[namespace/]name[:section]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid gateway {0:?} (expected [namespace/]name[:section])")]
pub struct ParseGatewayError(String);

/// Parses `[namespace/]name[:section]`.
pub fn parse_gateway(s: &str) -> Result<GatewayRef, ParseGatewayError> {
    let bad = || ParseGatewayError(s.to_owned());
    let (rest, section) = match s.split_once(':') {
        Some((r, sec)) if !sec.is_empty() => (r, Some(sec.to_owned())),
        Some(_) => return Err(bad()),
        None => (s, None),
    };
    let (namespace, name) = match rest.split_once('/') {
        Some((ns, n)) if !ns.is_empty() => (Some(ns.to_owned()), n),
        Some(_) => return Err(bad()),
        None => (None, rest),
    };
    if name.is_empty() || name.contains('/') {
        return Err(bad());
    }
    Ok(GatewayRef {
        name: name.to_owned(),
        namespace,
        section_name: section,
    })
}

/// The operator's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorConfig {
    /// GPU vendor (resource and memory label).
    pub gpu_vendor: GpuVendor,
    /// Overrides the vendor's GPU resource (e.g. a MIG or vGPU resource name).
    pub gpu_resource: Option<String>,
    /// The HPA's average CPU utilisation target, percent of requests.
    pub cpu_target: i32,
    /// The Gateway routes attach to when `spec.gatewayRef` is absent; no route when `None`.
    pub default_gateway: Option<GatewayRef>,
    /// The model server image.
    pub server_image: String,
}

impl Default for OperatorConfig {
    fn default() -> Self {
        Self {
            gpu_vendor: GpuVendor::default(),
            gpu_resource: None,
            cpu_target: DEFAULT_CPU_UTILIZATION,
            default_gateway: None,
            server_image: DEFAULT_SERVER_IMAGE.to_owned(),
        }
    }
}

impl OperatorConfig {
    /// The extended resource one GPU is requested as.
    pub fn gpu_resource(&self) -> &str {
        self.gpu_resource
            .as_deref()
            .unwrap_or_else(|| self.gpu_vendor.resource())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_gateways() {
        let g = parse_gateway("infra/public:https").unwrap();
        assert_eq!(g.namespace.as_deref(), Some("infra"));
        assert_eq!(g.name, "public");
        assert_eq!(g.section_name.as_deref(), Some("https"));
        assert_eq!(parse_gateway("gw").unwrap().namespace, None);
        for bad in ["", "/gw", "ns/", "gw:", "a/b/c"] {
            assert!(parse_gateway(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn vendor_resources_and_labels() {
        let mut c = OperatorConfig::default();
        assert_eq!(c.gpu_resource(), "nvidia.com/gpu");
        assert_eq!(c.cpu_target, 80);
        c.gpu_resource = Some("nvidia.com/mig-1g.10gb".into());
        assert_eq!(c.gpu_resource(), "nvidia.com/mig-1g.10gb");
    }
}
