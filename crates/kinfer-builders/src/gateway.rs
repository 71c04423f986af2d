//! Gateway API HTTPRoutes: one to a KServe predictor Service (AIM), one to an InferencePool
//! (ModelService), both attached to a configurable Gateway.
//!
//! Contract:
//! - predictor route: a `PathPrefix` match on the service path, a `URLRewrite` of that prefix
//!   to `/`, backend `<isvc>-predictor` port 80, an optional request timeout, the caller's
//!   annotations; named like the InferenceService's parent (`<service>`, hashed when needed);
//! - pool route: a header match on the model name (the routing key, not the Kubernetes name)
//!   under `/`, backend the InferencePool, request (and optional backend) timeouts, because
//!   gateway defaults (15s in Envoy) cut long generations;
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
use crate::naming::{self, Dns1035Label};

/// The header that carries the model name on pool routes unless configured otherwise (the
/// KServe / Gateway API Inference Extension convention).
pub const MODEL_NAME_HEADER: &str = "X-Gateway-Model-Name";

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
    /// The InferenceService's name ([`naming::inference_service_name`]).
    pub inference_service: Dns1035Label,
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
    let name = naming::child_name(
        &[parent.name.as_str()],
        &[parent.name.as_str(), parent.namespace.as_str()],
        63,
    )?;
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
            name: format!("{}-predictor", input.inference_service),
            port: Some(80),
            ..HttpRouteRulesBackendRefs::default()
        }]),
        timeouts: input.timeouts.build()?,
        ..HttpRouteRules::default()
    };
    Ok(route(
        &name,
        parent,
        crate::kserve::APP,
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
    /// The InferencePool's name.
    pub pool: Dns1035Label,
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
    let rule = HttpRouteRules {
        matches: Some(vec![HttpRouteRulesMatches {
            headers: Some(vec![HttpRouteRulesMatchesHeaders {
                name: input
                    .header
                    .clone()
                    .unwrap_or_else(|| MODEL_NAME_HEADER.to_owned()),
                r#type: Some(HttpRouteRulesMatchesHeadersType::Exact),
                value: input.model_name.clone(),
            }]),
            path: Some(HttpRouteRulesMatchesPath {
                r#type: Some(HttpRouteRulesMatchesPathType::PathPrefix),
                value: Some("/".to_owned()),
            }),
            ..HttpRouteRulesMatches::default()
        }]),
        backend_refs: Some(vec![HttpRouteRulesBackendRefs {
            group: Some(crate::inference_pool::GROUP.to_owned()),
            kind: Some("InferencePool".to_owned()),
            name: input.pool.to_string(),
            ..HttpRouteRulesBackendRefs::default()
        }]),
        timeouts: input.timeouts.build()?,
        ..HttpRouteRules::default()
    };
    Ok(route(
        &input.pool,
        &input.parent,
        crate::deployment::APP,
        &input.gateway,
        BTreeMap::new(),
        non_empty_vec(input.hostnames.clone()),
        rule,
    ))
}

fn route(
    name: &Dns1035Label,
    parent: &Parent,
    app: &str,
    gateway: &GatewayRef,
    annotations: BTreeMap<String, String>,
    hostnames: Option<Vec<String>>,
    rule: HttpRouteRules,
) -> HttpRoute {
    HttpRoute {
        metadata: object_meta(
            name.as_str(),
            Some(parent.namespace.as_str()),
            parent.labels(app, "route").all(),
            annotations,
        ),
        spec: HttpRouteSpec {
            hostnames,
            parent_refs: Some(vec![gateway.parent_ref()]),
            rules: Some(vec![rule]),
        },
        status: None,
    }
}
