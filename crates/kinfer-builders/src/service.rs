//! ClusterIP Services for workloads, and the stable/canary pair of a canary split.
//!
//! Contract: a Service is named `<parent>-<component>` (hashed when needed), labelled with the
//! standard labels, and selects exactly the given pod labels; a canary pair adds
//! `kinfer.dev/track: stable|canary` to name and selector, so traffic can be split by weight
//! between two Services.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::labels::TRACK;
use crate::meta::{Parent, object_meta};
use crate::naming;

/// One Service port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Port {
    /// Port name (an IANA service name, at most 15 characters).
    pub name: String,
    /// Service port.
    pub port: i32,
    /// Container port name or number.
    pub target_port: IntOrString,
}

impl Port {
    /// A TCP port forwarding to the same number.
    pub fn same(name: &str, port: i32) -> Self {
        Self {
            name: name.to_owned(),
            port,
            target_port: IntOrString::Int(port),
        }
    }
}

/// A workload Service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceInput {
    /// The parent.
    pub parent: Parent,
    /// `app.kubernetes.io/name`.
    pub app: String,
    /// The component, also the name suffix.
    pub component: String,
    /// The pod labels to select.
    pub selector: BTreeMap<String, String>,
    /// Ports.
    pub ports: Vec<Port>,
}

/// A canary track.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Track {
    /// The primary version.
    Stable,
    /// The canary version.
    Canary,
}

impl Track {
    /// `stable` or `canary`.
    pub fn as_str(self) -> &'static str {
        match self {
            Track::Stable => "stable",
            Track::Canary => "canary",
        }
    }
}

/// A ClusterIP Service with an exact name, labels and selector (for children whose names and
/// labels follow an upstream operator's rules).
pub fn service_named(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    selector: BTreeMap<String, String>,
    ports: &[Port],
) -> Service {
    Service {
        metadata: object_meta(name, Some(namespace), labels, BTreeMap::new()),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            selector: Some(selector),
            ports: Some(ports.iter().map(Port::build).collect()),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

impl Port {
    fn build(&self) -> ServicePort {
        ServicePort {
            name: Some(self.name.clone()),
            port: self.port,
            target_port: Some(self.target_port.clone()),
            protocol: Some("TCP".to_owned()),
            ..ServicePort::default()
        }
    }
}

/// The Service; see the module contract.
pub fn service(input: &ServiceInput) -> Result<Service, Error> {
    build(input, None)
}

/// The Service of one canary track.
pub fn track_service(input: &ServiceInput, track: Track) -> Result<Service, Error> {
    build(input, Some(track))
}

fn build(input: &ServiceInput, track: Option<Track>) -> Result<Service, Error> {
    let parent = &input.parent;
    let name = parent.name.as_str();
    let mut parts = vec![name, input.component.as_str()];
    let mut selector = input.selector.clone();
    let mut labels = parent.labels(&input.app, &input.component).all();
    if let Some(track) = track {
        parts.push(track.as_str());
        selector.insert(TRACK.to_owned(), track.as_str().to_owned());
        labels.insert(TRACK.to_owned(), track.as_str().to_owned());
    }
    let service_name = naming::child_name(&parts, &[name], 63)?;
    Ok(service_named(
        service_name.as_str(),
        parent.namespace.as_str(),
        labels,
        selector,
        &input.ports,
    ))
}
