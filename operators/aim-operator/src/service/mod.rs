//! AIMService: a model run with a template as a KServe InferenceService.
//!
//! [`fetch`] (runtime config, models, templates, Nodes, template caches, pods) -> [`compose`]
//! (model, template and routing resolution; components `RuntimeConfig`, `Model`, `Template`
//! upstream) and [`downstream`] (components `Cache`, `InferenceService`,
//! `InferenceServicePods`, `HPA`, `HTTPRoute`) -> plan (below: the auto-created AIMModel
//! without owner, the derived template, the template cache ([`cache`]: shared without owner,
//! dedicated owned), and once model, template and cache are Ready the InferenceService
//! ([`isvc`]), its HPA when autoscaling ([`runtime`]) and the HTTPRoute when routing is on).
//! [`path`] renders route paths; [`cleanup`] is the finalizer.
//!
//! Status: `resolvedModel`, `resolvedTemplate`, `resolvedRuntimeConfig` (kept while Ready),
//! `cache.templateCacheRef`, `routing.path`, `runtime` (replicas, or min/max with the HPA's
//! current and desired counts), `status` (`Pending`, `Starting`, `Running`, `Degraded`,
//! `Failed`, `NotAvailable`), conditions, `observedGeneration`.
//!
//! Finalizer `aim.eai.amd.com/template-cache-cleanup`: on deletion the non-Ready template
//! caches this service created are deleted (Ready shared caches stay for other services); the
//! engine skips the cleanup in a terminating namespace (or one it may not read), so namespace
//! deletion is never blocked; a cleanup refused with 401/403 keeps the finalizer and is
//! retried (`CleanupForbidden`).

pub mod cache;
pub mod cleanup;
pub mod compose;
pub mod downstream;
pub mod fetch;
pub mod isvc;
pub mod path;
pub mod runtime;
pub mod selection;
pub mod validation;

use std::sync::Arc;

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::aim::service::{AIMServiceCacheStatus, AIMServiceRoutingStatus};
use kinfer_api::aim::{
    AIMModel, AIMService, AIMServiceState, AIMServiceStatus, AIMServiceTemplate, AIMTemplateCache,
};
use kinfer_api::kserve::InferenceService;
use kinfer_api::phase::Phase;
use kinfer_builders::autoscaling::HpaInput;
use kinfer_builders::kserve::InferenceServiceInput;
use kinfer_state::Reason;
use kinfer_state::health::ComponentHealth;
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredError, DesiredObject, ObjectKey, Observation, Pipeline, PlanResult,
};
use kinfer_state::{Categorize, CategorizedError, ComponentState, ErrorCategory, OverallStatus};
use kube::{Client, ResourceExt};

use self::cache::CacheChoice;
use self::compose::{ModelChoice, Route, TemplateChoice};
use self::fetch::{Fetched, TemplateInfo};
use crate::context::Context;
use crate::runtime_config::{Resolved, resolve};
use crate::scheme;

/// `aim.eai.amd.com/origin` of derived templates.
pub const DERIVED: &str = crate::scheme::labels::ORIGIN_DERIVED;

/// The InferenceService component.
pub const INFERENCE_SERVICE: &str = "InferenceService";

/// The service's finalizer (NOTES row 23).
pub const FINALIZER: &str = "aim.eai.amd.com/template-cache-cleanup";

/// The service's composed state.
#[derive(Debug, Clone)]
pub struct ServiceState {
    /// The resolved runtime config.
    pub runtime_config: Option<Resolved>,
    /// The model (existing or to create).
    pub model: Option<ModelChoice>,
    /// The template to run with and the derived template to keep.
    pub template: TemplateChoice,
    /// The template cache, once a template is resolved.
    pub cache: Option<CacheChoice>,
    /// The InferenceService's input, when model, template and cache are Ready.
    pub isvc: Option<InferenceServiceInput>,
    /// The HPA's input, with the InferenceService when autoscaling.
    pub hpa: Option<HpaInput>,
    /// The live HPA (for `status.runtime`).
    pub live_hpa: Option<HorizontalPodAutoscaler>,
    /// The routing decision.
    pub route: Route,
    /// The runtime config resolved without error: a routing decision of `Off` is the user's
    /// (not a config that could not be read), so a live route may be removed.
    pub routing_settled: bool,
}

/// Errors of the service's plan step (InvalidSpec).
#[derive(Debug, thiserror::Error)]
pub enum ServicePlanError {
    /// A child could not be built.
    #[error("build {0}: {1}")]
    Build(&'static str, #[source] kinfer_builders::Error),
    /// A child does not serialise.
    #[error(transparent)]
    Serialize(#[from] DesiredError),
}

impl Categorize for ServicePlanError {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::InvalidSpec
    }
}

/// The AIMService pipeline.
#[derive(Debug)]
pub struct ServicePipeline {
    ctx: Arc<Context>,
}

impl ServicePipeline {
    /// A pipeline sharing `ctx`.
    pub fn new(ctx: Arc<Context>) -> Self {
        Self { ctx }
    }
}

/// `obs` with its components and the runtime config's label propagation (every serving
/// pipeline keeps its resolved runtime config in its state).
pub(crate) fn observed<S: HasRuntimeConfig>(
    mut obs: Observation<S>,
    components: Vec<ComponentHealth>,
) -> Observation<S> {
    obs.components = components;
    if let Some(rc) = obs.state.runtime_config() {
        obs.labels = rc.propagation();
    }
    obs
}

/// A composed state that carries the resolved runtime config.
pub(crate) trait HasRuntimeConfig {
    /// The resolved runtime config.
    fn runtime_config(&self) -> Option<&Resolved>;
}

impl HasRuntimeConfig for ServiceState {
    fn runtime_config(&self) -> Option<&Resolved> {
        self.runtime_config.as_ref()
    }
}

fn upstream(
    object: &AIMService,
    fetched: &Fetched,
) -> (Vec<ComponentHealth>, Option<ModelChoice>, TemplateChoice) {
    let (model_health, model) = match &fetched.models {
        Ok(models) => compose::resolve_model(object, models),
        Err(e) => (
            ComponentHealth::new(compose::MODEL)
                .upstream()
                .error(e.clone()),
            None,
        ),
    };
    let ready_model = match &model {
        Some(ModelChoice::Use(m)) if m.phase != Phase::Pending => Some(m),
        _ => None,
    };
    let (template_health, template) = match (ready_model, &fetched.templates, &fetched.gpus) {
        (Some(m), Ok(ts), Ok(gpus)) => compose::resolve_template(object, m, ts, gpus),
        (_, Err(e), _) | (_, _, Err(e)) => (
            ComponentHealth::new(compose::TEMPLATE)
                .upstream()
                .error(e.clone()),
            TemplateChoice::default(),
        ),
        (None, _, _) => (
            ComponentHealth::with_state(
                compose::TEMPLATE,
                ComponentState::Pending,
                Reason::custom("WaitingForModel"),
                "waiting for the model",
            )
            .upstream(),
            TemplateChoice::default(),
        ),
    };
    (vec![model_health, template_health], model, template)
}

/// The route and HPA to delete because routing or autoscaling is switched off (the only way
/// serving children go before the service does; see [`ServicePipeline::child_kinds`]).
fn removed(object: &AIMService, state: &ServiceState) -> Vec<(ChildKind, ObjectKey)> {
    let ns = object.namespace().unwrap_or_default();
    let key = |kind: &ChildKind, name: String| ObjectKey {
        kind: kind.resource.kind.clone(),
        group: kind.resource.group.clone(),
        namespace: Some(ns.clone()),
        name,
    };
    let mut out = Vec::new();
    if matches!(state.route, Route::Off)
        && state.routing_settled
        && let Ok(name) = kinfer_builders::naming::aim::route_name(&object.name_any(), &ns)
    {
        let kind = ChildKind::of::<HttpRoute>();
        out.push((kind.clone(), key(&kind, name.to_string())));
    }
    if matches!(
        isvc::scaling(object),
        kinfer_builders::kserve::Scaling::Fixed { .. }
    ) && let Ok(isvc) = isvc::isvc_name(object)
        && let Ok(name) = runtime::predictor(&isvc)
    {
        let kind = ChildKind::of::<HorizontalPodAutoscaler>();
        out.push((kind.clone(), key(&kind, name.to_string())));
    }
    out
}

impl Pipeline for ServicePipeline {
    type Object = AIMService;
    type Fetched = Fetched;
    type State = ServiceState;
    type PlanError = ServicePlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        vec![
            // Serving is never torn down by a resolution gap (a template re-discovering, a
            // model Progressing, a selection waiting): these are applied while everything is
            // Ready and otherwise kept as they are (upstream only applies). The route and the
            // HPA are deleted explicitly when routing or autoscaling is switched off; the
            // InferenceService goes with the service.
            ChildKind::of::<InferenceService>().prune(false),
            ChildKind::of::<HttpRoute>().prune(false),
            ChildKind::of::<HorizontalPodAutoscaler>().prune(false),
            // Derived templates stay while the service keeps using one (garbage collected
            // with the service); so do dedicated caches (a transient resolution gap must not
            // throw a download away).
            ChildKind::of::<AIMServiceTemplate>().prune(false),
            ChildKind::of::<AIMTemplateCache>().prune(false),
            ChildKind::of::<AIMModel>().prune(false),
        ]
    }

    fn finalizer(&self) -> Option<String> {
        Some(FINALIZER.to_owned())
    }

    async fn finalize(&self, client: &Client, object: &AIMService) -> Result<(), CategorizedError> {
        cleanup::remove_unready_caches(client, object).await
    }

    async fn fetch(&self, client: &Client, object: &AIMService, _children: &Children) -> Fetched {
        let ns = object.namespace().unwrap_or_default();
        let isvc = isvc::isvc_name(object).ok();
        // Boxed: the joined reads make a large future.
        let mut fetched = Box::pin(fetch::fetch(
            &self.ctx,
            client,
            &ns,
            object.spec.runtime_config_name.as_deref(),
            isvc.as_deref(),
        ))
        .await;
        // The cache the resolved template runs from, when the read does not have it; then
        // the other name of a Dedicated cache whose upstream name that read showed taken.
        let template = upstream(object, &fetched).2.template;
        let mut confirmed: Option<String> = None;
        for _ in 0..2 {
            let caches = fetched.caches.as_deref().unwrap_or_default();
            let Some(name) = template
                .as_ref()
                .and_then(|t| cache::name_for(object, t, caches))
                .filter(|n| confirmed.as_ref() != Some(n))
            else {
                break;
            };
            fetch::confirm_cache(client, &ns, &name, &mut fetched).await;
            confirmed = Some(name);
        }
        fetched
    }

    fn compose(
        &self,
        object: &AIMService,
        children: &Children,
        fetched: Fetched,
    ) -> Observation<ServiceState> {
        let manager = scheme::manager(scheme::controller::SERVICE);
        let (rc_health, rc) = resolve::resolve(&fetched.runtime_config);
        let rc_health = validation::at_field(
            rc_health,
            "spec.runtimeConfigName",
            ErrorCategory::MissingUpstreamDependency,
        );
        let routing_settled = rc_health.errors.is_empty();
        let mut components = vec![rc_health];
        let (up, model, template) = upstream(object, &fetched);
        components.extend(up);
        let violations = validation::violations(object);
        let failed_upstream =
            downstream::failed_upstream(components.iter().chain(violations.iter()));
        let down = downstream::compose(
            object,
            children,
            &fetched,
            &downstream::Resolved {
                rc: rc.as_ref(),
                model: model.as_ref(),
                template: template.template.as_ref(),
                manager: &manager,
                failed_upstream: &failed_upstream,
            },
        );
        components.extend(down.components);
        validation::replace(&mut components, violations);
        let obs = Observation::new(ServiceState {
            runtime_config: rc,
            model,
            template,
            cache: down.cache,
            isvc: down.isvc,
            hpa: down.hpa,
            live_hpa: down.live_hpa,
            route: down.route,
            routing_settled,
        });
        observed(obs, components)
    }

    fn plan(
        &self,
        object: &AIMService,
        observation: &Observation<ServiceState>,
    ) -> Result<PlanResult, ServicePlanError> {
        let state = &observation.state;
        let mut plan = PlanResult::default();
        if let Some(ModelChoice::Create(m)) = &state.model {
            plan.apply_without_owner
                .push(DesiredObject::from_typed(m.as_ref())?);
        }
        if let Some(d) = &state.template.derived {
            plan.apply.push(DesiredObject::from_typed(d)?);
        }
        if let Some(c) = &state.cache
            && let Some(desired) = &c.desired
        {
            let d = DesiredObject::from_typed(desired)?;
            match c.mode {
                kinfer_api::aim::common::CachingMode::Dedicated => plan.apply.push(d),
                kinfer_api::aim::common::CachingMode::Shared => plan.apply_without_owner.push(d),
            }
        }
        if let Some(input) = &state.isvc {
            let built = kinfer_builders::kserve::inference_service(input)
                .map_err(|e| ServicePlanError::Build("InferenceService", e))?;
            plan.apply
                .push(DesiredObject::from_typed(&built.inference_service)?);
            if let Some(h) = &state.hpa {
                let hpa = kinfer_builders::autoscaling::horizontal_pod_autoscaler(h)
                    .map_err(|e| ServicePlanError::Build("HorizontalPodAutoscaler", e))?;
                plan.apply.push(DesiredObject::from_typed(&hpa)?);
            }
            if let Route::On(r) = &state.route {
                let route = kinfer_builders::gateway::predictor_route(r)
                    .map_err(|e| ServicePlanError::Build("HTTPRoute", e))?;
                plan.apply.push(DesiredObject::from_typed(&route)?);
            }
        }
        plan.delete.extend(removed(object, state));
        Ok(plan)
    }

    fn status(
        &self,
        object: &AIMService,
        observation: &Observation<ServiceState>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value {
        let state = &observation.state;
        let previous = object.status.as_ref();
        let resolved_model = match &state.model {
            Some(ModelChoice::Use(m)) => Some(m.reference.clone()),
            _ => previous.and_then(|p| p.resolved_model.clone()),
        };
        let resolved_template = state
            .template
            .template
            .as_ref()
            .map(TemplateInfo::reference)
            .or_else(|| previous.and_then(|p| p.resolved_template.clone()));
        let previous_cache = previous.and_then(|p| p.cache.clone());
        let cache = match state.cache.as_ref().and_then(|c| c.reference.clone()) {
            Some(r) => Some(AIMServiceCacheStatus {
                retry_attempts: previous_cache.and_then(|c| c.retry_attempts),
                template_cache_ref: Some(r),
            }),
            None => previous_cache,
        };
        let s = AIMServiceStatus {
            cache,
            conditions,
            observed_generation: object.metadata.generation,
            resolved_model,
            resolved_runtime_config: state.runtime_config.as_ref().map(|r| r.reference.clone()),
            resolved_template,
            routing: match &state.route {
                Route::On(r) => Some(AIMServiceRoutingStatus {
                    path: Some(r.path.clone()),
                }),
                _ => None,
            },
            runtime: Some(runtime::runtime_status(
                isvc::scaling(object),
                state.live_hpa.as_ref(),
            )),
            status: AIMServiceState::from(scheme::phase(status)),
        };
        serde_json::to_value(s).unwrap_or_default()
    }
}
