//! Prometheus Operator monitors: a PodMonitor per serving role, a ServiceMonitor for the EPP.
//!
//! Contract: the PodMonitor is named like the role's Deployment (`<ms>-<role>`), selects the
//! role's pods with the Deployment's selector and scrapes the engine's `http` port at
//! `/metrics` every 30s, adding a `model_service` label from the pods'
//! `app.kubernetes.io/name` label, as otterscale's (NOTES section b row 22); the ServiceMonitor selects a Service by its selector labels
//! and scrapes its `http-metrics` port, with a bearer token from a Secret when metrics need
//! authentication.

use std::collections::BTreeMap;

use kinfer_api::monitoring::{
    MonitorSelector, PodMonitor, PodMonitorSpec, RelabelConfig, SafeAuthorization, ScrapeEndpoint,
    SecretKeySelector, ServiceMonitor, ServiceMonitorSpec,
};

use crate::deployment::{self, Role};
use crate::error::Error;
use crate::meta::{Parent, object_meta};
use crate::naming::Dns1035Label;

/// Scrape interval.
pub const INTERVAL: &str = "30s";

/// The PodMonitor of one serving role.
pub fn role_pod_monitor(parent: &Parent, role: Role) -> Result<PodMonitor, Error> {
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
                port: Some("http".to_owned()),
                path: Some("/metrics".to_owned()),
                interval: Some(INTERVAL.to_owned()),
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
