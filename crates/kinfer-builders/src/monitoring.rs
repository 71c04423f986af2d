//! Observability: Prometheus Operator monitors (a PodMonitor per serving role, a
//! ServiceMonitor for the EPP) and the OpenTelemetry exporter env of traced containers.
//!
//! Contract: the PodMonitor is named like the role's Deployment (`<ms>-<role>`), selects the
//! role's pods with the Deployment's selector and scrapes the [`ScrapeTarget`] (default: the
//! engine's `http` port at `/metrics` every 30s, upstream's `spec.monitoring.podMonitor`
//! defaults), adding a `model_service` label from the pods' `app.kubernetes.io/name` label, as
//! otterscale's (NOTES section b row 22); the ServiceMonitor selects a Service by its selector
//! labels and scrapes its `http-metrics` port, with a bearer token from a Secret when metrics
//! need authentication. [`Otel::env`] is upstream's exporter env (NOTES section b row 7,
//! section c): service name, endpoint, `otlp` exporter, and the sampler when set.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::EnvVar;
use kinfer_api::monitoring::{
    MonitorSelector, PodMonitor, PodMonitorSpec, RelabelConfig, SafeAuthorization, ScrapeEndpoint,
    SecretKeySelector, ServiceMonitor, ServiceMonitorSpec,
};

use crate::deployment::{self, Role};
use crate::env::var;
use crate::error::Error;
use crate::meta::{Parent, object_meta};
use crate::naming::Dns1035Label;
use serde::{Deserialize, Serialize};

/// Scrape interval.
pub const INTERVAL: &str = "30s";

/// Where a PodMonitor scrapes the serving pods (`spec.monitoring.podMonitor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScrapeTarget {
    /// The container port name (`http`: the engine's port, behind the proxy too).
    pub port_name: String,
    /// The metrics path.
    pub path: String,
    /// The scrape interval.
    pub interval: String,
}

impl Default for ScrapeTarget {
    fn default() -> Self {
        Self {
            port_name: "http".to_owned(),
            path: "/metrics".to_owned(),
            interval: INTERVAL.to_owned(),
        }
    }
}

/// An OpenTelemetry trace exporter (the operator's tracing flags).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Otel {
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub endpoint: String,
    /// `OTEL_TRACES_SAMPLER`, when not empty.
    #[serde(default)]
    pub sampler: String,
    /// `OTEL_TRACES_SAMPLER_ARG`, when not empty.
    #[serde(default)]
    pub sampler_arg: String,
}

impl Otel {
    /// The exporter env of a container reporting as `service`.
    pub fn env(&self, service: &str) -> Vec<EnvVar> {
        let mut vars = vec![
            var("OTEL_SERVICE_NAME", service),
            var("OTEL_EXPORTER_OTLP_ENDPOINT", self.endpoint.clone()),
            var("OTEL_TRACES_EXPORTER", "otlp"),
        ];
        if !self.sampler.is_empty() {
            vars.push(var("OTEL_TRACES_SAMPLER", self.sampler.clone()));
        }
        if !self.sampler_arg.is_empty() {
            vars.push(var("OTEL_TRACES_SAMPLER_ARG", self.sampler_arg.clone()));
        }
        vars
    }
}

/// The PodMonitor of one serving role, scraping `target`.
pub fn role_pod_monitor(
    parent: &Parent,
    role: Role,
    target: &ScrapeTarget,
) -> Result<PodMonitor, Error> {
    let name = deployment::deployment_name(parent, role)?;
    Ok(PodMonitor {
        metadata: object_meta(
            name.as_str(),
            Some(parent.namespace.as_str()),
            crate::labels::otterscale::object(
                parent.name.as_str(),
                &deployment::role_component(role),
                &parent.managed_by,
            ),
            BTreeMap::new(),
        ),
        spec: PodMonitorSpec {
            selector: MonitorSelector {
                match_labels: deployment::role_selector(parent, role),
            },
            pod_metrics_endpoints: vec![ScrapeEndpoint {
                port: Some(target.port_name.clone()),
                path: Some(target.path.clone()),
                interval: Some(target.interval.clone()),
                relabelings: Some(vec![RelabelConfig {
                    action: Some("replace".to_owned()),
                    source_labels: Some(vec![
                        "__meta_kubernetes_pod_label_app_kubernetes_io_name".to_owned(),
                    ]),
                    target_label: Some("model_service".to_owned()),
                }]),
                ..ScrapeEndpoint::default()
            }],
        },
    })
}

/// A ServiceMonitor named `name`, labelled `labels`, for the Service whose labels include
/// `selector`, scraping `http-metrics`; `token_secret` holds a bearer token under key `token`.
pub fn service_monitor(
    parent: &Parent,
    name: &Dns1035Label,
    labels: BTreeMap<String, String>,
    selector: BTreeMap<String, String>,
    token_secret: Option<&str>,
) -> ServiceMonitor {
    ServiceMonitor {
        metadata: object_meta(
            name.as_str(),
            Some(parent.namespace.as_str()),
            labels,
            BTreeMap::new(),
        ),
        spec: ServiceMonitorSpec {
            selector: MonitorSelector {
                match_labels: selector,
            },
            endpoints: vec![ScrapeEndpoint {
                port: Some("http-metrics".to_owned()),
                path: Some("/metrics".to_owned()),
                interval: Some(INTERVAL.to_owned()),
                authorization: token_secret.map(|secret| SafeAuthorization {
                    type_: Some("Bearer".to_owned()),
                    credentials: Some(SecretKeySelector {
                        name: secret.to_owned(),
                        key: "token".to_owned(),
                    }),
                }),
                ..ScrapeEndpoint::default()
            }],
        },
    }
}
