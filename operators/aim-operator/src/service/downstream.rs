//! Service compose, downstream half: the cache, the InferenceService, its pods and HPA, the
//! route. Pure.
//!
//! Contract:
//! - `Cache` ([`super::cache`]) once a template is resolved; before, Pending
//!   `WaitingForTemplate`.
//! - The InferenceService input is built only when the model is Ready (or Degraded: some
//!   template works), the template is Ready and the cache is Ready (its artifacts become the
//!   volume mounts); until then `InferenceService` is Pending `WaitingForDependencies`, naming
//!   what it waits for; while an upstream component has a user-fixable error (the service is
//!   Failed and the engine plans nothing) it is Pending `WaitingForDependencies` naming those
//!   components, never `Creating`. Once the InferenceService exists it is kept with its live cache
//!   volumes while the cache is not Ready (upstream: created once the cache is Ready, then
//!   always re-applied). Nor does a template or model that is not Ready for a while (a
//!   re-discovery, a selection waiting) delete it: the InferenceService, its HPA and route
//!   are not pruned, only left as they are until everything is Ready again (see
//!   [`super::ServicePipeline`]). A name that cannot fit or an input that does not build is
//!   InvalidSpec.
//! - `InferenceServicePods` once the InferenceService exists, `HPA` when autoscaling
//!   ([`super::runtime`]).
//! - `HTTPRoute` when routing is on ([`super::compose::route`]): the live route's parent
//!   status, Progressing `HTTPRoutePending` while it is being created (with the
//!   InferenceService), Pending `WaitingForDependencies` before; a broken route is its
//!   component.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kinfer_api::aim::AIMService;
use kinfer_api::kserve::InferenceService;
use kinfer_api::phase::Phase;
use kinfer_builders::autoscaling::HpaInput;
use kinfer_builders::kserve::InferenceServiceInput;
use kinfer_state::health::ComponentHealth;
use kinfer_state::pipeline::Children;
use kinfer_state::{CategorizedError, ComponentState, ErrorCategory, Reason};
use kube::ResourceExt;

use super::cache::{self, CacheChoice};
use super::compose::{self, ModelChoice, Route};
use super::fetch::{Fetched, TemplateInfo};
use super::{INFERENCE_SERVICE, isvc, runtime};

/// What upstream resolution produced.
#[derive(Debug, Clone, Copy)]
pub struct Resolved<'a> {
    /// The runtime config.
    pub rc: Option<&'a crate::runtime_config::Resolved>,
    /// The model.
    pub model: Option<&'a ModelChoice>,
    /// The Ready template.
    pub template: Option<&'a TemplateInfo>,
    /// The service controller's field manager.
    pub manager: &'a str,
    /// The upstream components with a user-fixable error ([`failed_upstream`]).
    pub failed_upstream: &'a [String],
}

/// The upstream components with a user-fixable error (Auth, InvalidSpec, MissingUpstream):
/// the engine plans nothing while there are any (kinfer-state's engine contract, step 4),
/// so nothing is being created. Infrastructure errors hold the plan too, but only for a
/// moment: they leave the components as they were, so a blip does not rewrite the status.
pub fn failed_upstream<'a>(
    components: impl IntoIterator<Item = &'a ComponentHealth>,
) -> Vec<String> {
    components
        .into_iter()
        .filter(|c| c.effective_direction() == kinfer_state::Direction::Upstream)
        .filter(|c| c.errors.iter().any(|e| e.category.is_user_fixable()))
        .map(|c| c.component.to_string())
        .collect()
}

/// The downstream half of the observation.
#[derive(Debug)]
pub struct Downstream {
    /// Components, in display order.
    pub components: Vec<ComponentHealth>,
    /// The cache.
    pub cache: Option<CacheChoice>,
    /// The InferenceService input.
    pub isvc: Option<InferenceServiceInput>,
    /// The HPA input.
    pub hpa: Option<HpaInput>,
    /// The live HPA.
    pub live_hpa: Option<HorizontalPodAutoscaler>,
    /// The routing decision.
    pub route: Route,
}

fn pending(component: &'static str, reason: &str, message: String) -> ComponentHealth {
    ComponentHealth::with_state(
        component,
        ComponentState::Pending,
        Reason::custom(reason.to_owned()),
        message,
    )
    .downstream()
}

fn cache_part(
    object: &AIMService,
    fetched: &Fetched,
    r: &Resolved<'_>,
) -> (ComponentHealth, Option<CacheChoice>) {
    match (r.template, &fetched.caches, &fetched.peers) {
        (Some(t), Ok(caches), Ok(peers)) => cache::compose(object, t, r.rc, caches, peers),
        (Some(_), Err(e), _) | (Some(_), _, Err(e)) => (
            ComponentHealth::new(cache::CACHE)
                .downstream()
                .error(e.clone()),
            None,
        ),
        (None, _, _) => (
            pending(
                cache::CACHE,
                "WaitingForTemplate",
                "the template cache is created once a template is resolved".into(),
            ),
            None,
        ),
    }
}

fn waiting_for(model_ready: bool, r: &Resolved<'_>, cache: Option<&CacheChoice>) -> String {
    if !r.failed_upstream.is_empty() {
        return format!(
            "the InferenceService is created or updated once the errors of {} are fixed",
            r.failed_upstream.join(", ")
        );
    }
    let mut missing = Vec::new();
    if !model_ready {
        missing.push("model");
    }
    if r.template.is_none() {
        missing.push("template");
    }
    if cache.and_then(|c| c.mounts.as_ref()).is_none() {
        missing.push("template cache");
    }
    format!(
        "the InferenceService is created once the {} {} Ready",
        missing.join(", "),
        if missing.len() == 1 { "is" } else { "are" }
    )
}

/// The downstream components and inputs; see the module contract.
pub fn compose(
    object: &AIMService,
    children: &Children,
    fetched: &Fetched,
    r: &Resolved<'_>,
) -> Downstream {
    let ns = object.namespace().unwrap_or_default();
    let mut out = Downstream {
        components: Vec::new(),
        cache: None,
        isvc: None,
        hpa: None,
        live_hpa: None,
        route: Route::Off,
    };
    let (cache_health, cache) = cache_part(object, fetched, r);
    out.components.push(cache_health);

    let name = isvc::isvc_name(object);
    let model = match r.model {
        Some(ModelChoice::Use(m)) if matches!(m.phase, Phase::Ready | Phase::Degraded) => {
            Some(m.as_ref())
        }
        _ => None,
    };
    // Once the InferenceService exists it is kept: a cache that is not Ready for a moment
    // (recreated, re-listed) must not take serving down, so its live cache volumes stay.
    let live_mounts = match &name {
        Ok(n) => children
            .fetch::<InferenceService>(Some(&ns), n)
            .ok()
            .flatten()
            .map(|live| isvc::cache_mounts(&live)),
        Err(_) => None,
    };
    let mounts = cache
        .as_ref()
        .and_then(|c| c.mounts.clone())
        .or(live_mounts);
    let built = match (model, r.template, &name, mounts) {
        (Some(m), Some(t), Ok(_), Some(mounts)) if r.failed_upstream.is_empty() => {
            Some(isvc::isvc_input(object, m, t, r.rc, mounts, r.manager))
        }
        _ => None,
    };
    let build_error = match &built {
        Some(Err(e)) => Some(
            CategorizedError::new(ErrorCategory::InvalidSpec, format!("InferenceService: {e}"))
                .with_reason(Reason::custom("InvalidInferenceService")),
        ),
        _ => None,
    };
    out.isvc = built.and_then(Result::ok);
    let scaling = isvc::scaling(object);
    let hpa = match (&out.isvc, &name) {
        (Some(input), Ok(n)) => runtime::hpa_input(object, &input.parent, n, scaling),
        _ => Ok(None),
    };
    let hpa_error = hpa.as_ref().err().map(|e| {
        CategorizedError::new(ErrorCategory::InvalidSpec, format!("HPA: {e}"))
            .with_reason(Reason::custom("InvalidAutoscaling"))
    });
    out.hpa = hpa.ok().flatten();

    let mut live_isvc_ready = None;
    let isvc_health = match (&name, &build_error) {
        (Err(e), _) | (_, Some(e)) => ComponentHealth::new(INFERENCE_SERVICE)
            .downstream()
            .error(e.clone()),
        (Ok(n), None) => match children.fetch::<InferenceService>(Some(&ns), n) {
            Ok(Some(live)) if out.isvc.is_some() => {
                let h = kinfer_state::inspect::inference_service(
                    &serde_json::to_value(&live).unwrap_or_default(),
                )
                .downstream();
                live_isvc_ready = Some(h.effective_state() == ComponentState::Ready);
                h
            }
            Err(e) => ComponentHealth::new(INFERENCE_SERVICE)
                .downstream()
                .error(e),
            _ if out.isvc.is_some() => ComponentHealth::with_state(
                INFERENCE_SERVICE,
                ComponentState::Progressing,
                Reason::custom("Creating"),
                format!("creating InferenceService {n}"),
            )
            .downstream(),
            _ => pending(
                INFERENCE_SERVICE,
                "WaitingForDependencies",
                waiting_for(model.is_some(), r, cache.as_ref()),
            ),
        },
    };
    out.components.push(isvc_health);
    if let (Some(ready), Ok(n)) = (live_isvc_ready, &name) {
        out.components.push(match &fetched.pods {
            Ok(pods) => runtime::pods_health(n, pods, ready),
            Err(e) => ComponentHealth::new(runtime::PODS)
                .downstream()
                .error(e.clone()),
        });
    }
    if let Some(e) = hpa_error {
        out.components
            .push(ComponentHealth::new(runtime::HPA).downstream().error(e));
    } else if let Some(h) = &out.hpa {
        let hname = h.target.name.to_string();
        out.components.push(
            match children.fetch::<HorizontalPodAutoscaler>(Some(&ns), &hname) {
                Ok(live) => {
                    let health = runtime::hpa_health(live.as_ref(), &hname);
                    out.live_hpa = live;
                    health
                }
                Err(e) => ComponentHealth::new(runtime::HPA).downstream().error(e),
            },
        );
    }
    out.cache = cache;
    out.route = compose::route(object, r.rc, r.manager);
    if let Some(h) = route_health(object, children, &out.route, out.isvc.is_some()) {
        out.components.push(h);
    }
    out
}

/// The route's component; `planned`: the route is applied in this reconcile (it goes with
/// the InferenceService), else an absent route is waited for, not being created.
fn route_health(
    object: &AIMService,
    children: &Children,
    route: &Route,
    planned: bool,
) -> Option<ComponentHealth> {
    let ns = object.namespace().unwrap_or_default();
    match route {
        Route::Off => None,
        Route::Broken(h) => Some(h.as_ref().clone()),
        Route::On(_) => {
            let rname = kinfer_builders::naming::aim::route_name(&object.name_any(), &ns)
                .map(|n| n.to_string())
                .unwrap_or_default();
            Some(
                match children.fetch::<gateway_api::httproutes::HttpRoute>(Some(&ns), &rname) {
                    // Ready once one Gateway accepted it, as AIM Engine counts it.
                    Ok(Some(live)) => kinfer_state::inspect::http_route_any_parent(
                        &serde_json::to_value(&live).unwrap_or_default(),
                    )
                    .downstream(),
                    Ok(None) if !planned => pending(
                        compose::HTTP_ROUTE,
                        "WaitingForDependencies",
                        format!("HTTPRoute {rname} is created with the InferenceService"),
                    ),
                    Ok(None) => ComponentHealth::with_state(
                        compose::HTTP_ROUTE,
                        ComponentState::Progressing,
                        Reason::custom("HTTPRoutePending"),
                        format!("creating HTTPRoute {rname}"),
                    )
                    .downstream(),
                    Err(e) => ComponentHealth::new(compose::HTTP_ROUTE)
                        .downstream()
                        .error(e),
                },
            )
        }
    }
}
