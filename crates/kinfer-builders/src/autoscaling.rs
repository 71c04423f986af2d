//! HorizontalPodAutoscalers (`autoscaling/v2`) with a real metric.
//!
//! Contract: the HPA scales one target between `min` and `max` on CPU utilisation (80% unless
//! told otherwise), memory utilisation, a per-pod custom metric (average value) or an external
//! metric (value or average value); it is named like the target and carries the standard
//! labels.
//!
//! Utilisation is a percentage of the pods' *requests*: a CPU (or memory) utilisation HPA does
//! nothing (the HPA reports `FailedGetResourceMetric`) unless every container of the target
//! requests that resource. The builders that create scalable targets set CPU requests
//! (ModelService: the user's, AIM: 4 per GPU); a caller scaling a target without them must
//! pick a [`Metric::Pods`] or [`Metric::External`] metric instead.

use std::collections::BTreeMap;

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, ExternalMetricSource, HorizontalPodAutoscaler,
    HorizontalPodAutoscalerSpec, MetricIdentifier, MetricSpec, MetricTarget, PodsMetricSource,
    ResourceMetricSource,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::meta::{Parent, object_meta};
use crate::naming::Dns1035Label;

/// CPU utilisation target when none is given.
pub const DEFAULT_CPU_UTILIZATION: i32 = 80;

/// The scaled object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// `apps/v1`.
    pub api_version: String,
    /// `Deployment`.
    pub kind: String,
    /// Its name (the HPA's too).
    pub name: Dns1035Label,
}

/// The metric to scale on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "type"
)]
pub enum Metric {
    /// Average CPU utilisation in percent of requests.
    Cpu {
        /// Percent.
        average_utilization: i32,
    },
    /// Average memory utilisation in percent of requests.
    Memory {
        /// Percent.
        average_utilization: i32,
    },
    /// A per-pod custom metric (e.g. `vllm:num_requests_waiting`) averaged over pods.
    Pods {
        /// Metric name.
        name: String,
        /// Target average (a quantity).
        average_value: String,
    },
    /// An external metric.
    External {
        /// Metric name.
        name: String,
        /// Selector labels of the metric.
        #[serde(default)]
        selector: BTreeMap<String, String>,
        /// Target total value.
        #[serde(default)]
        value: Option<String>,
        /// Target per-pod average.
        #[serde(default)]
        average_value: Option<String>,
    },
}

/// A resolved autoscaling request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HpaInput {
    /// The parent.
    pub parent: Parent,
    /// `app.kubernetes.io/name`.
    pub app: String,
    /// `app.kubernetes.io/component`.
    pub component: String,
    /// What to scale.
    pub target: Target,
    /// Minimum replicas (at least 1).
    pub min_replicas: i32,
    /// Maximum replicas (at least `min_replicas`).
    pub max_replicas: i32,
    /// Metric; CPU at [`DEFAULT_CPU_UTILIZATION`] when absent.
    #[serde(default)]
    pub metric: Option<Metric>,
}

/// The HPA; see the module contract.
pub fn horizontal_pod_autoscaler(input: &HpaInput) -> Result<HorizontalPodAutoscaler, Error> {
    if input.min_replicas < 1 || input.max_replicas < input.min_replicas {
        return Err(Error::Input {
            field: "minReplicas",
            reason: format!(
                "need 1 <= minReplicas ({}) <= maxReplicas ({})",
                input.min_replicas, input.max_replicas
            ),
        });
    }
    let metric = input.metric.clone().unwrap_or(Metric::Cpu {
        average_utilization: DEFAULT_CPU_UTILIZATION,
    });
    Ok(HorizontalPodAutoscaler {
        metadata: object_meta(
            input.target.name.as_str(),
            Some(input.parent.namespace.as_str()),
            input.parent.labels(&input.app, &input.component).all(),
            BTreeMap::new(),
        ),
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some(input.target.api_version.clone()),
                kind: input.target.kind.clone(),
                name: input.target.name.to_string(),
            },
            min_replicas: Some(input.min_replicas),
            max_replicas: input.max_replicas,
            metrics: Some(vec![metric_spec(&metric)?]),
            behavior: None,
        }),
        status: None,
    })
}

fn metric_spec(metric: &Metric) -> Result<MetricSpec, Error> {
    let utilization = |resource: &str, percent: i32| MetricSpec {
        type_: "Resource".to_owned(),
        resource: Some(ResourceMetricSource {
            name: resource.to_owned(),
            target: MetricTarget {
                type_: "Utilization".to_owned(),
                average_utilization: Some(percent),
                ..MetricTarget::default()
            },
        }),
        ..MetricSpec::default()
    };
    Ok(match metric {
        Metric::Cpu {
            average_utilization,
        } => utilization("cpu", *average_utilization),
        Metric::Memory {
            average_utilization,
        } => utilization("memory", *average_utilization),
        Metric::Pods {
            name,
            average_value,
        } => MetricSpec {
            type_: "Pods".to_owned(),
            pods: Some(PodsMetricSource {
                metric: MetricIdentifier {
                    name: name.clone(),
                    selector: None,
                },
                target: MetricTarget {
                    type_: "AverageValue".to_owned(),
                    average_value: Some(quantity("metric.averageValue", average_value)?),
                    ..MetricTarget::default()
                },
            }),
            ..MetricSpec::default()
        },
        Metric::External {
            name,
            selector,
            value,
            average_value,
        } => {
            let target = match (value, average_value) {
                (Some(v), None) => MetricTarget {
                    type_: "Value".to_owned(),
                    value: Some(quantity("metric.value", v)?),
                    ..MetricTarget::default()
                },
                (None, Some(v)) => MetricTarget {
                    type_: "AverageValue".to_owned(),
                    average_value: Some(quantity("metric.averageValue", v)?),
                    ..MetricTarget::default()
                },
                _ => {
                    return Err(Error::Input {
                        field: "metric",
                        reason: "an external metric needs exactly one of value and averageValue"
                            .to_owned(),
                    });
                }
            };
            MetricSpec {
                type_: "External".to_owned(),
                external: Some(ExternalMetricSource {
                    metric: MetricIdentifier {
                        name: name.clone(),
                        selector: (!selector.is_empty()).then(|| LabelSelector {
                            match_labels: Some(selector.clone()),
                            match_expressions: None,
                        }),
                    },
                    target,
                }),
                ..MetricSpec::default()
            }
        }
    })
}

fn quantity(field: &'static str, value: &str) -> Result<Quantity, Error> {
    kinfer_api::quantity::parse(value)
        .map(|_| Quantity(value.to_owned()))
        .ok_or_else(|| Error::Quantity {
            field,
            value: value.to_owned(),
        })
}
