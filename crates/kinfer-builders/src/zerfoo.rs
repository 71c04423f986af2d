//! Zerfoo (upstream zerfoo `serve/operator`): the children of a ZerfooInferenceService.
//!
//! Contract (names from [`naming::zerfoo`]; every object carries the standard labels
//! `app.kubernetes.io/{name: zerfoo, instance: <service>, component, managed-by}`):
//! - [`deployment`]: `<name>-primary` or `<name>-canary`; container `zerfoo` running
//!   `serve --model <modelRef> --port 8080` from the given image; cpu and memory as both
//!   request and limit; with a [`Gpu`], one GPU of its resource, a required node affinity on
//!   the vendor's GPU-memory label ([`gpu_affinity`]) and no surge pod; startup, readiness
//!   and liveness probes ([`probes`]: HTTP on the [`HealthProbe`] path, TCP on the serving
//!   port without one); the restricted security
//!   context (UID/GID 65532); selector and pod labels `{name, instance, component: primary |
//!   canary}`. `replicas: None` leaves the field out (an HPA owns it).
//! - [`shared_service`]: `<name>-svc`, selecting both tracks (no component in the selector),
//!   so without a Gateway traffic splits in proportion to ready pods; [`track_service`]:
//!   `<name>-primary` / `<name>-canary`, one track each. ClusterIP, port 80 to the pods'
//!   `http` port.
//! - [`autoscaler`]: `<name>-hpa` (autoscaling/v2) on `<name>-primary` between min and max on
//!   average CPU utilisation.
//! - [`route`]: `<name>-route` ([`crate::gateway_weighted`]) sending `100 - weight` percent to
//!   the primary track Service and `weight` percent to the canary's; only the primary (weight
//!   100) without a canary.
//!
//! Pure. Inputs are resolved: durations are whole seconds, GPU memory is bytes.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{
    Affinity, Container, HTTPGetAction, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, Service,
    TCPSocketAction,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

use crate::autoscaling::{HpaInput, Metric, Target, horizontal_pod_autoscaler};
use crate::error::Error;
use crate::gateway::GatewayRef;
use crate::gateway_weighted::{WeightedBackend, WeightedRouteInput, weighted_route};
use crate::meta::{Parent, object_meta};
use crate::naming::zerfoo::{Names, names};
use crate::service::{Port, service_named};
use crate::{deployment as workload, labels, pod, security};

/// `app.kubernetes.io/name` of every Zerfoo child.
pub const APP: &str = "zerfoo";
/// The container port's name (probes and Services target it).
pub const PORT_NAME: &str = "http";
/// The port the model server listens on (`zerfoo serve --port`).
pub const SERVER_PORT: i32 = 8080;
/// The port the Services expose.
pub const SERVICE_PORT: i32 = 80;
/// UID and GID the model server runs as (the distroless `nonroot` user).
pub const RUN_AS: i64 = 65532;
/// The component label of the Service selecting both tracks.
pub const SERVICE_COMPONENT: &str = "service";
/// The component label of the HPA.
pub const AUTOSCALER_COMPONENT: &str = "autoscaler";
/// The component label of the HTTPRoute.
pub const ROUTE_COMPONENT: &str = "route";
/// AMD GPU memory sizes (GiB) the AMD node labeller reports as `amd.com/gpu.vram: <n>G`
/// (Instinct MI and Radeon cards). The label is not a number, so `Gt` cannot compare it; the
/// affinity lists the sizes that suffice. A card with a size missing here is not selected
/// (extend the list when a new card appears).
pub const AMD_VRAM_GIB: [u64; 16] = [
    4, 8, 12, 16, 20, 24, 32, 48, 64, 80, 96, 128, 192, 256, 288, 432,
];

/// Whose GPUs the cluster has: decides the extended resource a pod requests and the node label
/// its GPU memory is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuVendor {
    /// `nvidia.com/gpu`; memory from GPU feature discovery's `nvidia.com/gpu.memory` (MiB).
    #[default]
    Nvidia,
    /// `amd.com/gpu`; memory from the AMD node labeller's `amd.com/gpu.vram` (`192G`, GiB).
    Amd,
}

impl GpuVendor {
    /// The extended resource of one GPU.
    pub fn resource(self) -> &'static str {
        match self {
            Self::Nvidia => "nvidia.com/gpu",
            Self::Amd => "amd.com/gpu",
        }
    }

    /// The node label carrying the memory of the node's GPUs.
    pub fn memory_label(self) -> &'static str {
        match self {
            Self::Nvidia => "nvidia.com/gpu.memory",
            Self::Amd => "amd.com/gpu.vram",
        }
    }
}

impl fmt::Display for GpuVendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Nvidia => "nvidia",
            Self::Amd => "amd",
        })
    }
}

/// A GPU vendor name that is neither `nvidia` nor `amd`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown GPU vendor {0:?} (expected nvidia or amd)")]
pub struct ParseVendorError(String);

impl FromStr for GpuVendor {
    type Err = ParseVendorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "nvidia" => Ok(Self::Nvidia),
            "amd" => Ok(Self::Amd),
            _ => Err(ParseVendorError(s.to_owned())),
        }
    }
}

/// A track of a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Track {
    /// The primary model.
    Primary,
    /// The canary model.
    Canary,
}

impl Track {
    /// `primary` or `canary` (the component label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Primary => "primary",
            Self::Canary => "canary",
        }
    }

    fn name(self, names: &Names) -> &str {
        match self {
            Self::Primary => names.primary.as_str(),
            Self::Canary => names.canary.as_str(),
        }
    }
}

/// A resolved GPU request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Gpu {
    /// The extended resource one GPU is requested as (the vendor's, or e.g. a MIG resource).
    pub resource: String,
    /// Whose GPUs: the memory label and how it is compared.
    pub vendor: GpuVendor,
    /// The GPU memory the model needs, bytes.
    pub memory_bytes: u64,
}

/// Resolved readiness and liveness probe settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthProbe {
    /// The HTTP path.
    pub path: String,
    /// Seconds between probes (at least 1).
    pub period_seconds: i32,
    /// Seconds before a probe times out (at least 1).
    pub timeout_seconds: i32,
}

/// What one track's Deployment is built from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentInput {
    /// The service.
    pub parent: Parent,
    /// Which track (name and component).
    pub track: Track,
    /// The model served.
    pub model_ref: String,
    /// The model server image.
    pub image: String,
    /// Replicas; `None` leaves the field to the HPA.
    #[serde(default)]
    pub replicas: Option<i32>,
    /// CPU request and limit.
    #[serde(default)]
    pub cpu: Option<String>,
    /// Memory request and limit.
    #[serde(default)]
    pub memory: Option<String>,
    /// One GPU, when the service asks for GPU memory.
    #[serde(default)]
    pub gpu: Option<Gpu>,
    /// Probes.
    #[serde(default)]
    pub health: Option<HealthProbe>,
}

/// The node-affinity requirement "GPU memory at least `bytes`" on the vendor's label:
/// NVIDIA's `nvidia.com/gpu.memory` holds MiB, compared with `Gt` (MiB needed − 1); AMD's
/// `amd.com/gpu.vram` holds `<n>G`, matched with `In` over the sizes of [`AMD_VRAM_GIB`] that
/// suffice (or exactly the request, rounded up to GiB, when it exceeds them all).
pub fn gpu_affinity(vendor: GpuVendor, bytes: u64) -> NodeSelectorRequirement {
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    let (operator, values) = match vendor {
        GpuVendor::Nvidia => {
            let mib = bytes.div_ceil(MIB);
            ("Gt", vec![mib.saturating_sub(1).to_string()])
        }
        GpuVendor::Amd => {
            let gib = bytes.div_ceil(GIB);
            let mut sizes: Vec<String> = AMD_VRAM_GIB
                .iter()
                .filter(|s| **s >= gib)
                .map(|s| format!("{s}G"))
                .collect();
            if sizes.is_empty() {
                sizes.push(format!("{gib}G"));
            }
            ("In", sizes)
        }
    };
    NodeSelectorRequirement {
        key: vendor.memory_label().to_owned(),
        operator: operator.to_owned(),
        values: Some(values),
    }
}

fn http_probe(health: &HealthProbe, period_seconds: i32, failure_threshold: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(health.path.clone()),
            port: IntOrString::String(PORT_NAME.to_owned()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period_seconds.max(1)),
        timeout_seconds: Some(health.timeout_seconds.max(1)),
        failure_threshold: Some(failure_threshold),
        ..Probe::default()
    }
}

/// A TCP connect to the serving port, with the shared probe timings of [`pod`].
fn tcp_probe(timings: pod::ProbeTimings) -> Probe {
    Probe {
        tcp_socket: Some(TCPSocketAction {
            port: IntOrString::String(PORT_NAME.to_owned()),
            host: None,
        }),
        period_seconds: Some(timings.period_seconds),
        timeout_seconds: Some(TCP_TIMEOUT_SECONDS),
        failure_threshold: Some(timings.failure_threshold),
        ..Probe::default()
    }
}

/// Seconds a default TCP probe waits for the connection.
pub const TCP_TIMEOUT_SECONDS: i32 = 5;

/// The container's (startup, readiness, liveness) probes; see [`Probes`].
pub fn probes(health: Option<&HealthProbe>) -> Probes {
    match health {
        Some(h) => Probes {
            startup: http_probe(
                h,
                pod::STARTUP.period_seconds,
                pod::STARTUP.failure_threshold,
            ),
            readiness: http_probe(h, h.period_seconds, 3),
            liveness: http_probe(h, h.period_seconds, 5),
        },
        None => Probes {
            startup: tcp_probe(pod::STARTUP),
            readiness: tcp_probe(pod::READINESS),
            liveness: tcp_probe(pod::LIVENESS),
        },
    }
}

/// The serving container's probes.
///
/// With `healthCheck` ([`HealthProbe`]): HTTP GETs of its path on the `http` port, readiness
/// (failure threshold 3) and liveness (5) every `interval`, each timing out after `timeout`,
/// and a startup probe of the same path that allows [`pod::STARTUP`] (30 minutes) for the
/// model to load before liveness may restart the container.
///
/// Without it: TCP connects to the `http` port with the shared timings of [`pod`] (startup 30
/// minutes, readiness every 5 s, liveness every 15 s). A production server is never run
/// unprobed: an open port is the one signal every model server build gives, so it takes
/// hung or crashed servers out of rotation and restarts them, though it cannot tell a loaded
/// model from a loading one (set `healthCheck` for that).
#[derive(Debug, Clone, PartialEq)]
pub struct Probes {
    /// Gates readiness and liveness until the server first answers.
    pub startup: Probe,
    /// Takes a pod out of the Services while it fails.
    pub readiness: Probe,
    /// Restarts the container while it fails.
    pub liveness: Probe,
}

fn resources(input: &DeploymentInput) -> Option<ResourceRequirements> {
    let mut amounts = BTreeMap::new();
    for (name, value) in [("cpu", &input.cpu), ("memory", &input.memory)] {
        if let Some(v) = value {
            amounts.insert(name.to_owned(), Quantity(v.clone()));
        }
    }
    if let Some(gpu) = &input.gpu {
        amounts.insert(gpu.resource.clone(), Quantity("1".to_owned()));
    }
    (!amounts.is_empty()).then(|| ResourceRequirements {
        requests: Some(amounts.clone()),
        limits: Some(amounts),
        ..ResourceRequirements::default()
    })
}

/// The Deployment of one track; see the module contract.
pub fn deployment(input: &DeploymentInput) -> Result<Deployment, Error> {
    if input.model_ref.is_empty() {
        return Err(Error::Input {
            field: "modelRef",
            reason: "empty".to_owned(),
        });
    }
    let names = names(input.parent.name.as_str())?;
    let labels = input.parent.labels(APP, input.track.as_str());
    let selector = labels.selector();
    let probes = probes(input.health.as_ref());
    let container = Container {
        name: APP.to_owned(),
        image: Some(input.image.clone()),
        args: Some(vec![
            "serve".to_owned(),
            "--model".to_owned(),
            input.model_ref.clone(),
            "--port".to_owned(),
            SERVER_PORT.to_string(),
        ]),
        ports: Some(vec![pod::tcp_port(PORT_NAME, SERVER_PORT)]),
        resources: resources(input),
        startup_probe: Some(probes.startup),
        readiness_probe: Some(probes.readiness),
        liveness_probe: Some(probes.liveness),
        security_context: Some(security::container(false)),
        ..Container::default()
    };
    let affinity = input.gpu.as_ref().map(|g| Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![gpu_affinity(g.vendor, g.memory_bytes)]),
                    match_fields: None,
                }],
            }),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        ..Affinity::default()
    });
    Ok(Deployment {
        metadata: object_meta(
            input.track.name(&names),
            Some(input.parent.namespace.as_str()),
            labels.all(),
            BTreeMap::new(),
        ),
        spec: Some(DeploymentSpec {
            replicas: input.replicas,
            selector: LabelSelector {
                match_labels: Some(selector.clone()),
                match_expressions: None,
            },
            // A GPU node has no room for a surge pod.
            strategy: input.gpu.as_ref().map(|_| workload::no_surge()),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(selector),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![container],
                    affinity,
                    automount_service_account_token: Some(false),
                    security_context: Some(security::pod(Some(RUN_AS), Some(RUN_AS))),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    })
}

fn port() -> Port {
    Port {
        name: PORT_NAME.to_owned(),
        port: SERVICE_PORT,
        target_port: IntOrString::String(PORT_NAME.to_owned()),
    }
}

/// `<name>-svc`, selecting both tracks; see the module contract.
pub fn shared_service(parent: &Parent) -> Result<Service, Error> {
    let names = names(parent.name.as_str())?;
    let labels = parent.labels(APP, SERVICE_COMPONENT);
    let mut selector = labels.selector();
    selector.remove(labels::COMPONENT);
    Ok(service_named(
        names.service.as_str(),
        parent.namespace.as_str(),
        labels.all(),
        selector,
        &[port()],
    ))
}

/// The Service of one track (`<name>-primary`, `<name>-canary`).
pub fn track_service(parent: &Parent, track: Track) -> Result<Service, Error> {
    let names = names(parent.name.as_str())?;
    let labels = parent.labels(APP, track.as_str());
    Ok(service_named(
        track.name(&names),
        parent.namespace.as_str(),
        labels.all(),
        labels.selector(),
        &[port()],
    ))
}

/// A resolved autoscaling request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalerInput {
    /// The service.
    pub parent: Parent,
    /// Minimum replicas (at least 1).
    pub min_replicas: i32,
    /// Maximum replicas (at least `min_replicas`).
    pub max_replicas: i32,
    /// Average CPU utilisation target, percent of requests.
    pub cpu_target: i32,
}

/// `<name>-hpa` on the primary; see the module contract.
pub fn autoscaler(input: &AutoscalerInput) -> Result<HorizontalPodAutoscaler, Error> {
    let names = names(input.parent.name.as_str())?;
    let mut hpa = horizontal_pod_autoscaler(&HpaInput {
        parent: input.parent.clone(),
        app: APP.to_owned(),
        component: AUTOSCALER_COMPONENT.to_owned(),
        target: Target {
            api_version: "apps/v1".to_owned(),
            kind: "Deployment".to_owned(),
            name: names.primary,
        },
        min_replicas: input.min_replicas,
        max_replicas: input.max_replicas,
        metric: Some(Metric::Cpu {
            average_utilization: input.cpu_target,
        }),
    })?;
    // The generic builder names an HPA after its target; upstream's name is `<name>-hpa`.
    hpa.metadata.name = Some(names.hpa.as_str().to_owned());
    Ok(hpa)
}

/// A resolved route request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteInput {
    /// The service.
    pub parent: Parent,
    /// The Gateway.
    pub gateway: GatewayRef,
    /// The canary's percentage of traffic (clamped to `0..=100`); `None` without a canary.
    #[serde(default)]
    pub canary_weight: Option<i32>,
}

/// `<name>-route`; see the module contract.
pub fn route(input: &RouteInput) -> Result<HttpRoute, Error> {
    let names = names(input.parent.name.as_str())?;
    let weight = input.canary_weight.map(|w| w.clamp(0, 100));
    let mut backends = vec![WeightedBackend {
        service: names.primary.as_str().to_owned(),
        port: SERVICE_PORT,
        weight: 100 - weight.unwrap_or(0),
    }];
    if let Some(w) = weight {
        backends.push(WeightedBackend {
            service: names.canary.as_str().to_owned(),
            port: SERVICE_PORT,
            weight: w,
        });
    }
    weighted_route(&WeightedRouteInput {
        parent: input.parent.clone(),
        name: names.route.into(),
        app: APP.to_owned(),
        component: ROUTE_COMPONENT.to_owned(),
        gateway: input.gateway.clone(),
        backends,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_affinity_is_mib_greater_than() {
        let r = gpu_affinity(GpuVendor::Nvidia, 24 << 30);
        assert_eq!(r.key, "nvidia.com/gpu.memory");
        assert_eq!(r.operator, "Gt");
        assert_eq!(r.values.unwrap(), ["24575"]);
    }

    #[test]
    fn amd_affinity_lists_sufficient_sizes() {
        let r = gpu_affinity(GpuVendor::Amd, 100 << 30);
        assert_eq!(r.key, "amd.com/gpu.vram");
        assert_eq!(r.operator, "In");
        assert_eq!(r.values.unwrap(), ["128G", "192G", "256G", "288G", "432G"]);
        assert_eq!(
            gpu_affinity(GpuVendor::Amd, 1 << 40).values.unwrap(),
            ["1024G"]
        );
    }

    #[test]
    fn vendors_parse_and_name_their_resources() {
        assert_eq!("AMD".parse::<GpuVendor>().unwrap(), GpuVendor::Amd);
        assert!("intel".parse::<GpuVendor>().is_err());
        assert_eq!(GpuVendor::Nvidia.resource(), "nvidia.com/gpu");
        assert_eq!(GpuVendor::Amd.memory_label(), "amd.com/gpu.vram");
        assert_eq!(GpuVendor::Amd.to_string(), "amd");
    }
}
