//! Gateway API HTTPRoutes that split traffic by weight between Services (canary releases).
//!
//! Contract: one route named `input.name` in the parent's namespace with the standard labels
//! (`app`, `component`), attached to the Gateway (group `gateway.networking.k8s.io`, kind
//! `Gateway`, its namespace and listener when given); one rule without matches (every
//! request) whose backendRefs are the given core Services, in order, each with its port and
//! weight. The Gateway API's rules are checked, so the route is never rejected at admission:
//! 1 to 16 backends, weights in `0..=1_000_000` and not all zero (a split where nothing may
//! receive traffic is a caller bug), Service names DNS-1035 labels, ports `1..=65535`.
//! Pure.

use std::collections::BTreeMap;

use gateway_api::httproutes::{
    HttpRoute, HttpRouteParentRefs, HttpRouteRules, HttpRouteRulesBackendRefs, HttpRouteSpec,
};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::gateway::GatewayRef;
use crate::meta::{Parent, object_meta};
use crate::naming::{Dns1123Subdomain, is_dns1035_label};

/// The Gateway API's limit on backendRefs per rule.
pub const MAX_BACKENDS: usize = 16;
/// The Gateway API's largest weight.
pub const MAX_WEIGHT: i32 = 1_000_000;

/// One weighted backend: a Service in the route's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedBackend {
    /// The Service's name.
    pub service: String,
    /// The Service port.
    pub port: i32,
    /// The share of traffic, relative to the other backends' weights.
    pub weight: i32,
}

/// A resolved weighted route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WeightedRouteInput {
    /// The parent (namespace and labels).
    pub parent: Parent,
    /// The route's name.
    pub name: Dns1123Subdomain,
    /// `app.kubernetes.io/name`.
    pub app: String,
    /// `app.kubernetes.io/component`.
    pub component: String,
    /// The Gateway.
    pub gateway: GatewayRef,
    /// The backends, in order.
    pub backends: Vec<WeightedBackend>,
}

fn parent_ref(gateway: &GatewayRef) -> HttpRouteParentRefs {
    HttpRouteParentRefs {
        group: Some("gateway.networking.k8s.io".to_owned()),
        kind: Some("Gateway".to_owned()),
        name: gateway.name.clone(),
        namespace: gateway.namespace.clone(),
        section_name: gateway.section_name.clone(),
        port: None,
    }
}

fn check(input: &WeightedRouteInput) -> Result<(), Error> {
    let bad = |reason: String| Error::Input {
        field: "backends",
        reason,
    };
    let n = input.backends.len();
    if n == 0 || n > MAX_BACKENDS {
        return Err(bad(format!("need 1 to {MAX_BACKENDS} backends, got {n}")));
    }
    for b in &input.backends {
        if !is_dns1035_label(&b.service) {
            return Err(bad(format!("{:?} is not a Service name", b.service)));
        }
        if !(0..=MAX_WEIGHT).contains(&b.weight) {
            return Err(bad(format!(
                "{}: weight {} is not within 0..={MAX_WEIGHT}",
                b.service, b.weight
            )));
        }
        if !(1..=65535).contains(&b.port) {
            return Err(bad(format!("{}: port {} is not a port", b.service, b.port)));
        }
    }
    if input.backends.iter().all(|b| b.weight == 0) {
        return Err(bad(
            "every weight is 0: no backend would receive traffic".to_owned()
        ));
    }
    if input.gateway.name.is_empty() {
        return Err(Error::Input {
            field: "gateway.name",
            reason: "empty".to_owned(),
        });
    }
    Ok(())
}

/// The weighted route; see the module contract.
pub fn weighted_route(input: &WeightedRouteInput) -> Result<HttpRoute, Error> {
    check(input)?;
    let backends = input
        .backends
        .iter()
        .map(|b| HttpRouteRulesBackendRefs {
            group: Some(String::new()),
            kind: Some("Service".to_owned()),
            name: b.service.clone(),
            port: Some(b.port),
            weight: Some(b.weight),
            ..HttpRouteRulesBackendRefs::default()
        })
        .collect();
    let mut route = HttpRoute::new(
        input.name.as_str(),
        HttpRouteSpec {
            parent_refs: Some(vec![parent_ref(&input.gateway)]),
            rules: Some(vec![HttpRouteRules {
                backend_refs: Some(backends),
                ..HttpRouteRules::default()
            }]),
            ..HttpRouteSpec::default()
        },
    );
    route.metadata = object_meta(
        input.name.as_str(),
        Some(input.parent.namespace.as_str()),
        input.parent.labels(&input.app, &input.component).all(),
        BTreeMap::new(),
    );
    Ok(route)
}
