//! Detection of the optional third-party CRDs: prometheus-operator (PodMonitor, ServiceMonitor),
//! Istio (DestinationRule), Gateway API (HTTPRoute) and the Gateway API Inference Extension
//! (InferencePool).
//!
//! Contract: [`detect`] reads the five CRDs by name at start; [`watch`] follows every CRD change
//! and publishes a new [`OptionalCrds`] only when the set changes. A missing CRD degrades only
//! the component that needs it (the plan leaves its objects out and compose reports a condition
//! naming the CRD); the controller is restarted with the new set of owned kinds when it changes
//! (see [`crate::controller`]). Reading only: nothing here writes.

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::watch as channel;

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

pub use kinfer_operator::CrdError;

/// Reads the optional CRDs now.
pub async fn detect(client: &Client) -> Result<OptionalCrds, CrdError> {
    let mut present = Vec::new();
    for name in [
        POD_MONITOR_CRD,
        SERVICE_MONITOR_CRD,
        DESTINATION_RULE_CRD,
        HTTP_ROUTE_CRD,
        INFERENCE_POOL_CRD,
    ] {
        if kinfer_operator::crds::installed(client, name).await? {
            present.push(name);
        }
    }
    Ok(OptionalCrds::from_names(present))
}

/// Follows CRD changes until `shutdown` turns true, publishing on `tx` when the set of optional
/// CRDs changes. Watch errors are retried with kube's default backoff.
pub async fn watch(
    client: Client,
    tx: channel::Sender<OptionalCrds>,
    mut shutdown: channel::Receiver<bool>,
) {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    loop {
        let event = tokio::select! {
            e = stream.next() => e,
            _ = shutdown.wait_for(|s| *s) => return,
        };
        let Some(event) = event else { return };
        let relevant = match &event {
            Ok(
                watcher::Event::Apply(crd)
                | watcher::Event::Delete(crd)
                | watcher::Event::InitApply(crd),
            ) => crd.metadata.name.as_deref().is_some_and(is_optional),
            Ok(watcher::Event::InitDone) => true,
            Ok(watcher::Event::Init) => false,
            Err(e) => {
                tracing::debug!(error = %e, "CRD watch error");
                false
            }
        };
        if !relevant {
            continue;
        }
        match detect(&client).await {
            Ok(now) => {
                tx.send_if_modified(|current| {
                    let changed = *current != now;
                    if changed {
                        tracing::info!(before = ?*current, after = ?now, "optional CRDs changed");
                        *current = now;
                    }
                    changed
                });
            }
            Err(e) => tracing::warn!(error = %e, "re-reading optional CRDs failed"),
        }
    }
}

fn is_optional(name: &str) -> bool {
    [
        POD_MONITOR_CRD,
        SERVICE_MONITOR_CRD,
        DESTINATION_RULE_CRD,
        HTTP_ROUTE_CRD,
        INFERENCE_POOL_CRD,
    ]
    .contains(&name)
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
    }
}
