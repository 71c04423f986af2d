//! Gateway API HTTPRoutes: one to a KServe predictor Service (AIM), one to an InferencePool
//! (ModelService), both attached to a configurable Gateway.
//!
//! Contract:
//! - predictor route: a `PathPrefix` match on the service path, a `URLRewrite` of that prefix
//!   to `/`, backend `<isvc>-predictor` port 80, an optional request timeout, the caller's
//!   annotations; named as aim-engine names it ([`naming::aim::route_name`]:
//!   `<service>-<8 hex of the namespace>`, always hashed), with the InferenceService derived
//!   from the same rules ([`naming::aim::inference_service_name`]);
//! - pool route: named `<ms>` with labels `Selector(<ms>, "epp")` as otterscale's; its rule
//!   matches otterscale's `OtterScale-Model-Name: <ms>` header under `/` (kept so clients of
//!   the adopted route keep working) **or** the model-name header (the OpenAI model, NOTES g9)
//!   under `/`; backend the InferencePool; request (and optional backend) timeouts, because
//!   gateway defaults (15s in Envoy) cut long generations;
//! - the two route kinds never share a name in one namespace: the predictor route always ends
//!   in the namespace hash, the pool route is the ModelService's own name (two objects of the
//!   same name and kind cannot exist), so they coincide only for a ModelService literally named
//!   `<aim service>-<that hash>`;
//! - timeouts are checked as Gateway API durations (GEP-2257) and paths must be absolute.

use std::collections::BTreeMap;
use std::str::FromStr;

use gateway_api::httproutes::{
    HttpRoute, HttpRouteParentRefs, HttpRouteRules, HttpRouteRulesBackendRefs,
    HttpRouteRulesFilters, HttpRouteRulesFiltersType, HttpRouteRulesFiltersUrlRewrite,
    HttpRouteRulesFiltersUrlRewritePath, HttpRouteRulesFiltersUrlRewritePathType,
    HttpRouteRulesMatches, HttpRouteRulesMatchesHeaders, HttpRouteRulesMatchesHeadersType,
    HttpRouteRulesMatchesPath, HttpRouteRulesMatchesPathType, HttpRouteRulesTimeouts,
    HttpRouteSpec,
};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::meta::{Parent, non_empty_vec, object_meta};
use crate::naming;

/// The header that carries the model name on pool routes unless configured otherwise (the
/// KServe / Gateway API Inference Extension convention).
pub const MODEL_NAME_HEADER: &str = "X-Gateway-Model-Name";
/// otterscale's routing header, matched against the ModelService's name.
pub const OTTERSCALE_MODEL_HEADER: &str = "OtterScale-Model-Name";

/// The Gateway a route attaches to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayRef {
    /// Gateway name.
    pub name: String,
    /// Gateway namespace; the route's when absent.
    #[serde(default)]
    pub namespace: Option<String>,
    /// A listener of the Gateway.
    #[serde(default)]
    pub section_name: Option<String>,
}

impl GatewayRef {
    fn parent_ref(&self) -> HttpRouteParentRefs {
        HttpRouteParentRefs {
            group: Some("gateway.networking.k8s.io".to_owned()),
            kind: Some("Gateway".to_owned()),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            section_name: self.section_name.clone(),
            port: None,
        }
    }
}

/// Route timeouts (Gateway API durations such as `300s`, `5m`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeouts {
    /// The whole request.
    #[serde(default)]
    pub request: Option<String>,
    /// One attempt to the backend.
    #[serde(default)]
    pub backend_request: Option<String>,
}

impl Timeouts {
    fn build(&self) -> Result<Option<HttpRouteRulesTimeouts>, Error> {
        for (field, value) in [
            ("timeouts.request", &self.request),
            ("timeouts.backendRequest", &self.backend_request),
        ] {
            if let Some(value) = value {
                gateway_api::Duration::from_str(value).map_err(|e| Error::Input {
                    field,
                    reason: format!("{value:?} is not a Gateway API duration: {e}"),
                })?;
            }
        }
        Ok(
            (self.request.is_some() || self.backend_request.is_some()).then(|| {
                HttpRouteRulesTimeouts {
                    request: self.request.clone(),
                    backend_request: self.backend_request.clone(),
                }
            }),
        )
    }
}

/// A route to an AIMService's KServe predictor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PredictorRouteInput {
    /// The AIMService.
    pub parent: Parent,
    /// The path prefix clients use (rendered and normalised by the caller), e.g. `/team/chat`.
    pub path: String,
    /// The Gateway.
    pub gateway: GatewayRef,
    /// Timeouts.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// Annotations for gateway implementations.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// The HTTPRoute to a KServe predictor; see the module contract.
pub fn predictor_route(input: &PredictorRouteInput) -> Result<HttpRoute, Error> {
    let parent = &input.parent;
    if !input.path.starts_with('/') {
        return Err(Error::Input {
            field: "path",
            reason: format!("{:?} must start with /", input.path),
        });
    }
    let (svc, ns) = (parent.name.as_str(), parent.namespace.as_str());
    let name = naming::aim::route_name(svc, ns)?;
    let isvc = naming::aim::inference_service_name(svc, ns)?;
    let rule = HttpRouteRules {
        matches: Some(vec![HttpRouteRulesMatches {
            path: Some(HttpRouteRulesMatchesPath {
                r#type: Some(HttpRouteRulesMatchesPathType::PathPrefix),
                value: Some(input.path.clone()),
            }),
            ..HttpRouteRulesMatches::default()
        }]),
        filters: Some(vec![HttpRouteRulesFilters {
            r#type: HttpRouteRulesFiltersType::UrlRewrite,
            url_rewrite: Some(HttpRouteRulesFiltersUrlRewrite {
                hostname: None,
                path: Some(HttpRouteRulesFiltersUrlRewritePath {
                    r#type: HttpRouteRulesFiltersUrlRewritePathType::ReplacePrefixMatch,
                    replace_prefix_match: Some("/".to_owned()),
                    replace_full_path: None,
                }),
            }),
            ..HttpRouteRulesFilters::default()
        }]),
        backend_refs: Some(vec![HttpRouteRulesBackendRefs {
            group: Some(String::new()),
            kind: Some("Service".to_owned()),
            name: format!("{isvc}-predictor"),
            port: Some(80),
            ..HttpRouteRulesBackendRefs::default()
        }]),
        timeouts: input.timeouts.build()?,
        ..HttpRouteRules::default()
    };
    Ok(route(
        name.as_str(),
        parent,
        parent.labels(crate::kserve::APP, "route").all(),
        &input.gateway,
        input.annotations.clone(),
        None,
        rule,
    ))
}

/// A route to a ModelService's InferencePool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolRouteInput {
    /// The ModelService.
    pub parent: Parent,
    /// The model name clients send (OpenAI `model`), matched in [`Self::header`].
    pub model_name: String,
    /// The header carrying the model name; [`MODEL_NAME_HEADER`] when absent.
    #[serde(default)]
    pub header: Option<String>,
    /// The Gateway.
    pub gateway: GatewayRef,
    /// Route hostnames.
    #[serde(default)]
    pub hostnames: Vec<String>,
    /// Timeouts.
    #[serde(default)]
    pub timeouts: Timeouts,
}

/// The HTTPRoute to an InferencePool; see the module contract. Named like the pool.
pub fn pool_route(input: &PoolRouteInput) -> Result<HttpRoute, Error> {
    let parent = &input.parent;
    let pool = crate::inference_pool::pool_name(parent)?;
    let header_match = |header: &str, value: &str| HttpRouteRulesMatches {
        headers: Some(vec![HttpRouteRulesMatchesHeaders {
            name: header.to_owned(),
            r#type: Some(HttpRouteRulesMatchesHeadersType::Exact),
            value: value.to_owned(),
        }]),
        path: Some(HttpRouteRulesMatchesPath {
            r#type: Some(HttpRouteRulesMatchesPathType::PathPrefix),
            value: Some("/".to_owned()),
        }),
        ..HttpRouteRulesMatches::default()
    };
    let header = input.header.as_deref().unwrap_or(MODEL_NAME_HEADER);
    let mut matches = vec![header_match(OTTERSCALE_MODEL_HEADER, parent.name.as_str())];
    if !(header.eq_ignore_ascii_case(OTTERSCALE_MODEL_HEADER)
        && input.model_name == parent.name.as_str())
    {
        matches.push(header_match(header, &input.model_name));
    }
    let rule = HttpRouteRules {
        matches: Some(matches),
        backend_refs: Some(vec![HttpRouteRulesBackendRefs {
            group: Some(crate::inference_pool::GROUP.to_owned()),
            kind: Some("InferencePool".to_owned()),
            name: pool.to_string(),
            ..HttpRouteRulesBackendRefs::default()
        }]),
        timeouts: input.timeouts.build()?,
        ..HttpRouteRules::default()
    };
    Ok(route(
        pool.as_str(),
        parent,
        crate::labels::otterscale::object(parent.name.as_str(), "epp", &parent.managed_by),
        &input.gateway,
        BTreeMap::new(),
        non_empty_vec(input.hostnames.clone()),
        rule,
    ))
}

fn route(
    name: &str,
    parent: &Parent,
    labels: BTreeMap<String, String>,
    gateway: &GatewayRef,
    annotations: BTreeMap<String, String>,
    hostnames: Option<Vec<String>>,
    rule: HttpRouteRules,
) -> HttpRoute {
    HttpRoute {
        metadata: object_meta(name, Some(parent.namespace.as_str()), labels, annotations),
        spec: HttpRouteSpec {
            hostnames,
            parent_refs: Some(vec![gateway.parent_ref()]),
            rules: Some(vec![rule]),
        },
        status: None,
    }
}
