//! Detection of the optional third-party CRDs: prometheus-operator (PodMonitor, ServiceMonitor),
//! Istio (DestinationRule), Gateway API (HTTPRoute) and the Gateway API Inference Extension
//! (InferencePool).
//!
//! Contract: [`OptionalCrds`] is this operator's view of the shared optional-CRD watch
//! ([`kinfer_operator::optional_crds::CrdWatch`] over [`NAMES`], which detects at start and
//! follows changes with a metadata-only watch). A missing CRD degrades only the component that
//! needs it (the plan leaves its objects out and compose reports a condition naming the CRD);
//! the controllers are restarted with the new set of owned kinds when the view changes (see
//! [`crate::controller`]). Pure: nothing here reads or writes.

use kinfer_operator::optional_crds::InstalledCrds;

/// The PodMonitor CRD.
pub const POD_MONITOR_CRD: &str = "podmonitors.monitoring.coreos.com";
/// The ServiceMonitor CRD.
pub const SERVICE_MONITOR_CRD: &str = "servicemonitors.monitoring.coreos.com";
/// The Istio DestinationRule CRD.
pub const DESTINATION_RULE_CRD: &str = "destinationrules.networking.istio.io";
/// The Gateway API HTTPRoute CRD.
pub const HTTP_ROUTE_CRD: &str = "httproutes.gateway.networking.k8s.io";
/// The InferencePool CRD (`inference.networking.k8s.io`, v1).
pub const INFERENCE_POOL_CRD: &str = "inferencepools.inference.networking.k8s.io";

/// Which optional CRDs the cluster serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OptionalCrds {
    /// prometheus-operator's PodMonitor and ServiceMonitor (both needed for monitoring).
    pub monitoring: bool,
    /// Istio's DestinationRule.
    pub istio: bool,
    /// Gateway API HTTPRoute.
    pub gateway_api: bool,
    /// Gateway API Inference Extension InferencePool.
    pub inference_pool: bool,
}

impl OptionalCrds {
    /// Every optional CRD installed.
    pub fn all() -> Self {
        Self {
            monitoring: true,
            istio: true,
            gateway_api: true,
            inference_pool: true,
        }
    }

    /// From the names of the installed CRDs.
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let names: Vec<&str> = names.into_iter().collect();
        let has = |n: &str| names.contains(&n);
        Self {
            monitoring: has(POD_MONITOR_CRD) && has(SERVICE_MONITOR_CRD),
            istio: has(DESTINATION_RULE_CRD),
            gateway_api: has(HTTP_ROUTE_CRD),
            inference_pool: has(INFERENCE_POOL_CRD),
        }
    }

    /// The CRDs missing for monitoring, for a condition message.
    pub fn missing_monitoring(self) -> &'static str {
        if self.monitoring {
            ""
        } else {
            "prometheus-operator CRDs (podmonitors.monitoring.coreos.com, servicemonitors.monitoring.coreos.com)"
        }
    }
}

/// Every optional CRD the operator follows ([`kinfer_operator::optional_crds::CrdWatch`]).
pub const NAMES: [&str; 5] = [
    POD_MONITOR_CRD,
    SERVICE_MONITOR_CRD,
    DESTINATION_RULE_CRD,
    HTTP_ROUTE_CRD,
    INFERENCE_POOL_CRD,
];

impl OptionalCrds {
    /// The view of what the CRD watch reports installed.
    pub fn from_installed(installed: &InstalledCrds) -> Self {
        Self::from_names(installed.names())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitoring_needs_both_monitors() {
        let c = OptionalCrds::from_names([POD_MONITOR_CRD, HTTP_ROUTE_CRD]);
        assert!(!c.monitoring);
        assert!(c.gateway_api);
        assert!(!c.missing_monitoring().is_empty());
        assert_eq!(
            OptionalCrds::from_names([
                POD_MONITOR_CRD,
                SERVICE_MONITOR_CRD,
                DESTINATION_RULE_CRD,
                HTTP_ROUTE_CRD,
                INFERENCE_POOL_CRD
            ]),
            OptionalCrds::all()
        );
        assert_eq!(
            OptionalCrds::from_installed(&InstalledCrds::from_names(NAMES)),
            OptionalCrds::all()
        );
    }
}
