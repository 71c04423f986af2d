//! Prometheus Operator monitors: a PodMonitor per serving role, a ServiceMonitor for the EPP.
//!
//! Contract: the PodMonitor is named like the role's Deployment, selects the role's pods and
//! scrapes the engine's `http` port at `/metrics` every 30s, adding a `model_service` label
//! from the pods' instance label; the ServiceMonitor selects a Service by its selector labels
//! and scrapes its `http-metrics` port, with a bearer token from a Secret when metrics need
//! authentication.

use std::collections::BTreeMap;

use kinfer_api::monitoring::{
    MonitorSelector, PodMonitor, PodMonitorSpec, RelabelConfig, SafeAuthorization, ScrapeEndpoint,
    SecretKeySelector, ServiceMonitor, ServiceMonitorSpec,
};

use crate::deployment::{self, APP, Role};
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
            parent.labels(APP, role.as_str()).all(),
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
                        "__meta_kubernetes_pod_label_app_kubernetes_io_instance".to_owned(),
                    ]),
                    target_label: Some("model_service".to_owned()),
                }]),
                ..ScrapeEndpoint::default()
            }],
        },
    })
}

/// A ServiceMonitor named `name` for the Service whose labels include `selector`, scraping
/// `http-metrics`; `token_secret` holds a bearer token under key `token`.
pub fn service_monitor(
    parent: &Parent,
    app: &str,
    component: &str,
    name: &Dns1035Label,
    selector: BTreeMap<String, String>,
    token_secret: Option<&Dns1035Label>,
) -> ServiceMonitor {
    ServiceMonitor {
        metadata: object_meta(
            name.as_str(),
            Some(parent.namespace.as_str()),
            parent.labels(app, component).all(),
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
                        name: secret.to_string(),
                        key: "token".to_owned(),
                    }),
                }),
                ..ScrapeEndpoint::default()
            }],
        },
    }
}
