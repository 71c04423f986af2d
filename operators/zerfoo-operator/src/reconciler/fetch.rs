//! Fetch: everything a ZerfooInferenceService depends on.
//!
//! Contract: a service depends only on the children it creates, and the engine has already
//! listed those by label (one list per kind); fetch picks them out by name as typed
//! [`FetchResult`]s. It may not write and needs no further reads, so it does not use the
//! client. A kind whose listing failed answers with that error (never "absent"): an API read
//! error is an error, never a reason to create.

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kinfer_api::zerfoo::ZerfooInferenceService;
use kinfer_builders::naming::NameError;
use kinfer_state::{CategorizedError, Children, FetchResult};
use kube::ResourceExt;

use crate::names::{Names, names};

/// The live children of one service.
#[derive(Debug)]
pub struct Fetched {
    /// The children's names.
    pub names: Names,
    /// `<name>-primary`.
    pub primary: FetchResult<Deployment, CategorizedError>,
    /// `<name>-canary`.
    pub canary: FetchResult<Deployment, CategorizedError>,
    /// `<name>-hpa`.
    pub hpa: FetchResult<HorizontalPodAutoscaler, CategorizedError>,
    /// `<name>-route`.
    pub route: FetchResult<HttpRoute, CategorizedError>,
}

/// Picks the children of `object` out of what the engine listed (routes only when `routes`:
/// the cluster serves HTTPRoutes); fails only when the children's names cannot be derived.
pub fn fetch(
    object: &ZerfooInferenceService,
    children: &Children,
    routes: bool,
) -> Result<Fetched, NameError> {
    let names = names(&object.name_any())?;
    let ns = object.namespace();
    let ns = ns.as_deref();
    Ok(Fetched {
        primary: children.fetch(ns, names.primary.as_str()),
        canary: children.fetch(ns, names.canary.as_str()),
        hpa: children.fetch(ns, names.hpa.as_str()),
        route: if routes {
            children.fetch(ns, names.route.as_str())
        } else {
            Ok(None)
        },
        names,
    })
}
