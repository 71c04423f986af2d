//! Pod parts shared by several builders: `/dev/shm`, HTTP probes, pull secrets, GPU node
//! affinity, scratch volumes.
//!
//! Contract: pure constructors of k8s-openapi values; no defaults hidden elsewhere.

use k8s_openapi::api::core::v1::{
    Affinity, ContainerPort, EmptyDirVolumeSource, HTTPGetAction, LocalObjectReference,
    NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Probe, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

/// Where tools with a read-only root filesystem get a writable `emptyDir` (`HOME` and `TMPDIR`
/// point there).
pub const TMP_DIR: &str = "/tmp";

/// A named TCP container port (the one way kinfer builds container ports).
pub fn tcp_port(name: &str, port: i32) -> ContainerPort {
    ContainerPort {
        name: Some(name.to_owned()),
        container_port: port,
        protocol: Some("TCP".to_owned()),
        ..ContainerPort::default()
    }
}

/// Name of the shared-memory volume.
pub const SHM_VOLUME: &str = "dshm";
/// Default `/dev/shm` size for model servers (NCCL/RCCL with tensor parallelism needs it).
pub const DEFAULT_SHM_SIZE: &str = "8Gi";

/// The memory-backed `/dev/shm` volume of `size`.
pub fn shm_volume(size: &str) -> Volume {
    Volume {
        name: SHM_VOLUME.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: Some("Memory".to_owned()),
            size_limit: Some(Quantity(size.to_owned())),
        }),
        ..Volume::default()
    }
}

/// The `/dev/shm` mount.
pub fn shm_mount() -> VolumeMount {
    mount(SHM_VOLUME, "/dev/shm", false)
}

/// A volume mount.
pub fn mount(volume: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: volume.to_owned(),
        mount_path: path.to_owned(),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

/// A disk-backed scratch `emptyDir`, bounded when `size` is given.
pub fn scratch_volume(name: &str, size: Option<&str>) -> Volume {
    Volume {
        name: name.to_owned(),
        empty_dir: Some(EmptyDirVolumeSource {
            medium: None,
            size_limit: size.map(|s| Quantity(s.to_owned())),
        }),
        ..Volume::default()
    }
}

/// Pull secrets by name.
pub fn pull_secrets(names: &[String]) -> Option<Vec<LocalObjectReference>> {
    (!names.is_empty()).then(|| {
        names
            .iter()
            .map(|n| LocalObjectReference { name: n.clone() })
            .collect()
    })
}

/// Probe timings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeTimings {
    /// Seconds between probes.
    pub period_seconds: i32,
    /// Consecutive failures before the probe fails.
    pub failure_threshold: i32,
}

/// Startup: up to 30 minutes for weights to download and load.
pub const STARTUP: ProbeTimings = ProbeTimings {
    period_seconds: 10,
    failure_threshold: 180,
};
/// Readiness: quick to take a pod out of rotation.
pub const READINESS: ProbeTimings = ProbeTimings {
    period_seconds: 5,
    failure_threshold: 3,
};
/// Liveness: slow to kill a busy server.
pub const LIVENESS: ProbeTimings = ProbeTimings {
    period_seconds: 15,
    failure_threshold: 4,
};

/// An HTTP GET probe of `path` on the named or numbered `port`.
pub fn http_probe(path: &str, port: IntOrString, timings: ProbeTimings) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port,
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(timings.period_seconds),
        failure_threshold: Some(timings.failure_threshold),
        timeout_seconds: Some(5),
        ..Probe::default()
    }
}

/// Startup, readiness and liveness HTTP probes on the engine's health endpoint.
pub fn engine_probes(path: &str, port: &IntOrString) -> (Probe, Probe, Probe) {
    (
        http_probe(path, port.clone(), STARTUP),
        http_probe(path, port.clone(), READINESS),
        http_probe(path, port.clone(), LIVENESS),
    )
}

/// Required node affinity from a GPU affinity resolved by `kinfer_select` (terms ORed,
/// requirements ANDed).
pub fn gpu_affinity(resolved: &kinfer_select::gpu::NodeAffinity) -> NodeSelector {
    NodeSelector {
        node_selector_terms: resolved
            .terms
            .iter()
            .map(|term| NodeSelectorTerm {
                match_expressions: Some(
                    term.requirements
                        .iter()
                        .map(|r| NodeSelectorRequirement {
                            key: r.key.clone(),
                            operator: r.operator.as_str().to_owned(),
                            values: (!r.values.is_empty()).then(|| r.values.clone()),
                        })
                        .collect(),
                ),
                match_fields: None,
            })
            .collect(),
    }
}

/// A pod affinity holding only a required node selector.
pub fn required_node_affinity(selector: &NodeSelector) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(selector.clone()),
            preferred_during_scheduling_ignored_during_execution: None,
        }),
        ..Affinity::default()
    }
}
