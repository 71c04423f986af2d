//! CRDs generated from kinfer-api's typed subsets of third-party kinds (KServe, Gateway API
//! Inference Extension, Istio, Prometheus Operator).
//!
//! Contract: these are stand-ins for the upstream CRDs in the embedded test cluster (`kinfer
//! render`, scenario tests), so the objects the operators create are stored and schema-checked.
//! They are never served in a real cluster, where the upstream projects install their own, and
//! they are not part of [`crate::crds::all`]. HTTPRoute comes from the `gateway-api` crate and is
//! not listed here.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{inference_pool, istio, kserve, monitoring};

/// Every third-party CRD kinfer-api types, sorted by group then kind.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut crds = vec![
        kserve::InferenceService::crd(),
        kserve::ServingRuntime::crd(),
        kserve::ClusterServingRuntime::crd(),
        inference_pool::InferencePool::crd(),
        istio::DestinationRule::crd(),
        monitoring::ServiceMonitor::crd(),
        monitoring::PodMonitor::crd(),
    ];
    crds.sort_by(|a, b| {
        (&a.spec.group, &a.spec.names.kind).cmp(&(&b.spec.group, &b.spec.names.kind))
    });
    crds
}

#[cfg(test)]
mod tests {
    use super::crds;

    #[test]
    fn lists_each_kind_once_in_order() {
        let names: Vec<String> = crds()
            .iter()
            .map(|c| format!("{}/{}", c.spec.group, c.spec.names.kind))
            .collect();
        assert_eq!(
            names,
            [
                "inference.networking.k8s.io/InferencePool",
                "monitoring.coreos.com/PodMonitor",
                "monitoring.coreos.com/ServiceMonitor",
                "networking.istio.io/DestinationRule",
                "serving.kserve.io/ClusterServingRuntime",
                "serving.kserve.io/InferenceService",
                "serving.kserve.io/ServingRuntime",
            ]
        );
    }

    #[test]
    fn scopes_match_upstream() {
        for crd in crds() {
            let want = if crd.spec.names.kind == "ClusterServingRuntime" {
                "Cluster"
            } else {
                "Namespaced"
            };
            assert_eq!(crd.spec.scope, want, "{}", crd.spec.names.kind);
        }
    }
}
