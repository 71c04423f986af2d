//! The InferencePool (`inference.networking.k8s.io/v1`) of a ModelService.
//!
//! Contract: named `<ms>` and labelled `Selector(<ms>, "epp")` as otterscale's (NOTES section
//! b row 19), it selects every serving pod of the parent ([`crate::deployment::pool_labels`]:
//! decode and prefill alike), targets the engine port, and points at the endpoint picker's
//! Service ([`naming::modelservice::epp_name`]) and ext-proc port. The failure mode is explicit
//! on every pool (FailClose unless the caller chose otherwise), never left to a default that
//! differs between code paths (NOTES g8).

use std::collections::BTreeMap;

use kinfer_api::inference_pool::{
    EndpointPickerRef, FailureMode, InferencePool, InferencePoolSpec, LabelSelector, Port,
};
use serde::{Deserialize, Serialize};

use crate::deployment;
use crate::error::Error;
use crate::labels;
use crate::meta::{Parent, object_meta};
use crate::naming::{self, Dns1123Subdomain};

/// The InferencePool API group.
pub const GROUP: &str = "inference.networking.k8s.io";

/// A resolved pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolInput {
    /// The ModelService.
    pub parent: Parent,
    /// The engine port (behind a routing proxy: the proxy's port).
    pub target_port: i32,
    /// The EPP Service's ext-proc port.
    pub endpoint_picker_port: i32,
    /// Behaviour when the EPP is down; FailClose when absent.
    #[serde(default)]
    pub failure_mode: Option<FailureMode>,
}

/// The pool's name, `<ms>` ([`naming::modelservice::pool_name`]).
pub fn pool_name(parent: &Parent) -> Result<Dns1123Subdomain, Error> {
    Ok(naming::modelservice::pool_name(parent.name.as_str())?)
}

/// The InferencePool; see the module contract.
pub fn inference_pool(input: &PoolInput) -> Result<InferencePool, Error> {
    let parent = &input.parent;
    let name = pool_name(parent)?;
    Ok(InferencePool {
        metadata: object_meta(
            name.as_str(),
            Some(parent.namespace.as_str()),
            labels::otterscale::object(parent.name.as_str(), "epp", &parent.managed_by),
            BTreeMap::new(),
        ),
        spec: InferencePoolSpec {
            selector: LabelSelector {
                match_labels: deployment::pool_labels(parent),
            },
            target_ports: vec![Port {
                number: input.target_port,
            }],
            endpoint_picker_ref: EndpointPickerRef {
                group: Some(String::new()),
                kind: Some("Service".to_owned()),
                name: naming::modelservice::epp_name(parent.name.as_str())?.to_string(),
                port: Some(Port {
                    number: input.endpoint_picker_port,
                }),
                failure_mode: Some(input.failure_mode.unwrap_or_default()),
            },
        },
        status: None,
    })
}
