//! Typed subsets of the Prometheus Operator's ServiceMonitor and PodMonitor,
//! `monitoring.coreos.com/v1`.
//!
//! Contract: the selector and the scrape-endpoint fields kinfer sets (port, path, interval,
//! bearer authorization from a Secret, relabelings), with upstream's names, so a built monitor
//! validates against the upstream CRD and round-trips.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Scrapes the endpoints of the Services a selector matches.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "monitoring.coreos.com",
    version = "v1",
    kind = "ServiceMonitor",
    plural = "servicemonitors",
    namespaced,
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct ServiceMonitorSpec {
    /// Services to scrape, in the monitor's namespace.
    pub selector: MonitorSelector,
    /// How to scrape each Service.
    pub endpoints: Vec<ScrapeEndpoint>,
}

/// Scrapes the pods a selector matches.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "monitoring.coreos.com",
    version = "v1",
    kind = "PodMonitor",
    plural = "podmonitors",
    namespaced,
    derive = "PartialEq",
    derive = "Default"
)]
#[serde(rename_all = "camelCase")]
pub struct PodMonitorSpec {
    /// Pods to scrape, in the monitor's namespace.
    pub selector: MonitorSelector,
    /// How to scrape each pod.
    pub pod_metrics_endpoints: Vec<ScrapeEndpoint>,
}

/// Equality-based label selector.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitorSelector {
    /// Labels the target must carry.
    pub match_labels: BTreeMap<String, String>,
}

/// One scrape endpoint (the fields shared by ServiceMonitor `endpoints` and PodMonitor
/// `podMetricsEndpoints`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScrapeEndpoint {
    /// Name of the Service or container port to scrape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// HTTP path (default `/metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Scrape interval (`30s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
    /// `http` or `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Authorization header taken from a Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<SafeAuthorization>,
    /// Relabelings applied before scraping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relabelings: Option<Vec<RelabelConfig>>,
}

/// An `Authorization` header whose credentials come from a Secret key.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct SafeAuthorization {
    /// The scheme (default `Bearer`).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The Secret key holding the credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<SecretKeySelector>,
}

/// A key of a Secret in the monitor's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct SecretKeySelector {
    /// Secret name.
    pub name: String,
    /// Key within the Secret.
    pub key: String,
}

/// A Prometheus relabeling rule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelabelConfig {
    /// The action (`replace`, `keep`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Labels whose values are concatenated as the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_labels: Option<Vec<String>>,
    /// The label written by `replace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_label: Option<String>,
}
