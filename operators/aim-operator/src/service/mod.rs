//! AIMService: a model run with a template as a KServe InferenceService.
//!
//! [`fetch`] (runtime config, models, templates, Nodes) -> [`compose`] (model, template and
//! routing resolution; components `RuntimeConfig`, `Model`, `Template` upstream and
//! `InferenceService`, `HTTPRoute` downstream) -> plan (below: the auto-created AIMModel
//! without owner, the derived template, the InferenceService once model and template are
//! Ready, the HTTPRoute when routing is on). [`path`] renders route paths.
//!
//! The InferenceService references the template's ServingRuntime / ClusterServingRuntime
//! (named after the template, kaiwo design): GPU resources come from the template's
//! `status.resolvedHardware`, node affinity from its `status.resolvedNodeAffinity` through
//! the runtime; env layers runtime config < profile id, metric, precision < template env <
//! discovered profile env < `AIM_MODEL_ID` < service env (`AIM_ENGINE_ARGS` JSON deep-merged,
//! [`kinfer_builders::kserve::AimEnv`]); pull secrets model, template, service; replicas, or
//! min/max with an external autoscaler. Its name follows the upstream hash rule; a namespace
//! too long for `<isvc>-predictor-<namespace>` is InvalidSpec `NameTooLong`.
//!
//! Status: `resolvedModel`, `resolvedTemplate`, `resolvedRuntimeConfig` (kept while Ready),
//! `routing.path`, `runtime`, `status` (`Pending`, `Starting`, `Running`, `Degraded`,
//! `Failed`, `NotAvailable`), conditions, `observedGeneration`.
//!
//! Not wired yet: template caches and artifacts (the InferenceService does not wait for a
//! cache and mounts none), the `template-cache-cleanup` finalizer, InferenceService pod
//! diagnosis and the HPA component.

pub mod compose;
pub mod fetch;
pub mod path;

use std::sync::Arc;

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::aim::service::{AIMServiceRoutingStatus, AIMServiceRuntimeStatus};
use kinfer_api::aim::{AIMModel, AIMService, AIMServiceState, AIMServiceStatus};
use kinfer_api::kserve::InferenceService;
use kinfer_builders::kserve::{AimEnv, Gpu, InferenceServiceInput, Scaling};
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use kinfer_state::health::ComponentHealth;
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredError, DesiredObject, Observation, Pipeline, PlanResult,
};
use kinfer_state::{
    Categorize, CategorizedError, ComponentState, ErrorCategory, OverallStatus, Reason,
};
use kube::{Client, ResourceExt};

use self::compose::{ModelChoice, Route, TemplateChoice};
use self::fetch::{Fetched, ModelInfo, TemplateInfo};
use crate::context::Context;
use crate::runtime_config::{Resolved, resolve};
use crate::scheme;

/// `aim.eai.amd.com/origin` of derived templates.
pub const DERIVED: &str = "derived";

/// The InferenceService component.
pub const INFERENCE_SERVICE: &str = "InferenceService";

/// The service's composed state.
#[derive(Debug, Clone)]
pub struct ServiceState {
    /// The resolved runtime config.
    pub runtime_config: Option<Resolved>,
    /// The model (existing or to create).
    pub model: Option<ModelChoice>,
    /// The template to run with and the derived template to keep.
    pub template: TemplateChoice,
    /// The InferenceService's input, when model and template are Ready.
    pub isvc: Option<InferenceServiceInput>,
    /// The routing decision.
    pub route: Route,
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

fn scaling(svc: &AIMService) -> Scaling {
    let s = &svc.spec;
    if s.auto_scaling.is_some() || s.min_replicas.is_some() || s.max_replicas.is_some() {
        let min = s.min_replicas.unwrap_or(1);
        Scaling::External {
            min,
            max: s.max_replicas.unwrap_or(min).max(min),
        }
    } else {
        Scaling::Fixed {
            replicas: s.replicas,
        }
    }
}

fn k8s_env(
    env: &[kinfer_api::env::EnvVar],
) -> Result<Vec<k8s_openapi::api::core::v1::EnvVar>, kinfer_builders::Error> {
    env.iter()
        .cloned()
        .map(|e| {
            k8s_openapi::api::core::v1::EnvVar::try_from(e).map_err(|e| {
                kinfer_builders::Error::Input {
                    field: "env",
                    reason: e.to_string(),
                }
            })
        })
        .collect()
}

fn profile_str<T: serde::Serialize>(v: Option<T>) -> Option<String> {
    v.and_then(|v| serde_json::to_value(v).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
}

/// The InferenceService input of a service with its model and Ready template.
pub fn isvc_input(
    svc: &AIMService,
    model: &ModelInfo,
    t: &TemplateInfo,
    rc: Option<&Resolved>,
    manager: &str,
) -> Result<InferenceServiceInput, kinfer_builders::Error> {
    let status = t.status.as_ref();
    let meta = status
        .and_then(|s| s.profile.as_ref())
        .and_then(|p| p.metadata.as_ref());
    let gpu = status
        .and_then(|s| s.resolved_hardware.as_ref())
        .or(t.spec.parameters.hardware.as_ref())
        .and_then(|h| h.gpu.as_ref())
        .and_then(|g| {
            let count = i64::from(g.requests.unwrap_or(0));
            (count > 0).then(|| Gpu {
                count,
                resource_name: Some(g.resource_name.clone()),
            })
        });
    let mut secrets: Vec<String> = Vec::new();
    for s in model
        .spec
        .image_pull_secrets
        .iter()
        .chain(&t.spec.image_pull_secrets)
        .chain(&svc.spec.image_pull_secrets)
    {
        if !secrets.contains(&s.name) {
            secrets.push(s.name.clone());
        }
    }
    let model_id = t
        .spec
        .model_sources
        .first()
        .or(model.spec.model_sources.first())
        .map(|s| s.model_id.clone());
    Ok(InferenceServiceInput {
        parent: kinfer_builders::Parent {
            name: Dns1123Subdomain::new(svc.name_any())?,
            namespace: Dns1123Label::new(svc.namespace().unwrap_or_default())?,
            managed_by: manager.to_owned(),
        },
        runtime: t.name.clone(),
        model: model.name.clone(),
        gpu,
        template_resources: t.spec.resources.clone(),
        service_resources: svc.spec.resources.clone(),
        env: AimEnv {
            runtime_config: k8s_env(rc.map(|r| r.spec.env.as_slice()).unwrap_or_default())?,
            profile_id: t.spec.profile_id.clone(),
            metric: t
                .spec
                .parameters
                .metric
                .clone()
                .or_else(|| profile_str(meta.and_then(|m| m.metric))),
            precision: t
                .spec
                .parameters
                .precision
                .clone()
                .or_else(|| profile_str(meta.and_then(|m| m.precision))),
            template: k8s_env(&t.spec.env)?,
            profile: status
                .and_then(|s| s.profile.as_ref())
                .map(|p| p.env_vars.clone())
                .unwrap_or_default(),
            model_id,
            service: k8s_env(&svc.spec.env)?,
        },
        caches: Vec::new(),
        scaling: scaling(svc),
        service_account_name: svc
            .spec
            .service_account_name
            .clone()
            .or_else(|| t.spec.service_account_name.clone()),
        image_pull_secrets: secrets,
        pod_identity: kinfer_builders::security::PodIdentity::default(),
    })
}

fn isvc_name(svc: &AIMService) -> Result<String, CategorizedError> {
    kinfer_builders::naming::aim::inference_service_name(
        &svc.name_any(),
        &svc.namespace().unwrap_or_default(),
    )
    .map(|n| n.to_string())
    .map_err(|e| {
        CategorizedError::new(
            ErrorCategory::InvalidSpec,
            format!("InferenceService name: {e}"),
        )
        .with_reason(Reason::custom("NameTooLong"))
    })
}

impl Pipeline for ServicePipeline {
    type Object = AIMService;
    type Fetched = Fetched;
    type State = ServiceState;
    type PlanError = ServicePlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        vec![
            ChildKind::of::<InferenceService>(),
            ChildKind::of::<HttpRoute>(),
            // Derived templates stay while the service keeps using one (garbage collected
            // with the service).
            ChildKind::of::<kinfer_api::aim::AIMServiceTemplate>().prune(false),
            ChildKind::of::<AIMModel>().prune(false),
        ]
    }

    async fn fetch(&self, client: &Client, object: &AIMService, _children: &Children) -> Fetched {
        let ns = object.namespace().unwrap_or_default();
        fetch::fetch(
            &self.ctx,
            client,
            &ns,
            object.spec.runtime_config_name.as_deref(),
        )
        .await
    }

    fn compose(
        &self,
        object: &AIMService,
        children: &Children,
        fetched: Fetched,
    ) -> Observation<ServiceState> {
        let manager = scheme::manager(scheme::controller::SERVICE);
        let ns = object.namespace().unwrap_or_default();
        let mut components = Vec::new();
        let (rc_health, rc) = resolve::resolve(&fetched.runtime_config);
        components.push(rc_health);

        let (model_health, model) = match &fetched.models {
            Ok(models) => compose::resolve_model(object, models),
            Err(e) => (
                ComponentHealth::new(compose::MODEL)
                    .upstream()
                    .error(e.clone()),
                None,
            ),
        };
        components.push(model_health);

        let ready_model = match &model {
            Some(ModelChoice::Use(m)) if m.phase != kinfer_api::phase::Phase::Pending => Some(m),
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
        components.push(template_health);

        let name = isvc_name(object);
        let model_ready = matches!(&model, Some(ModelChoice::Use(m))
            if matches!(m.phase, kinfer_api::phase::Phase::Ready | kinfer_api::phase::Phase::Degraded));
        let built = match (&model, &template.template, &name) {
            (Some(ModelChoice::Use(m)), Some(t), Ok(_)) if model_ready => {
                Some(isvc_input(object, m, t, rc.as_ref(), &manager))
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
        let isvc = built.and_then(Result::ok);
        let isvc_health = match (&name, &build_error) {
            (Err(e), _) | (_, Some(e)) => ComponentHealth::new(INFERENCE_SERVICE)
                .downstream()
                .error(e.clone()),
            (Ok(n), None) => match children.fetch::<InferenceService>(Some(&ns), n) {
                Ok(Some(live)) if isvc.is_some() => kinfer_state::inspect::inference_service(
                    &serde_json::to_value(&live).unwrap_or_default(),
                )
                .downstream(),
                Err(e) => ComponentHealth::new(INFERENCE_SERVICE)
                    .downstream()
                    .error(e),
                _ if isvc.is_some() => ComponentHealth::with_state(
                    INFERENCE_SERVICE,
                    ComponentState::Progressing,
                    Reason::custom("Creating"),
                    format!("creating InferenceService {n}"),
                )
                .downstream(),
                _ => ComponentHealth::with_state(
                    INFERENCE_SERVICE,
                    ComponentState::Pending,
                    Reason::custom("WaitingForDependencies"),
                    "the InferenceService is created once the model and template are Ready",
                )
                .downstream(),
            },
        };
        components.push(isvc_health);

        let route = compose::route(object, rc.as_ref(), &manager);
        match &route {
            Route::Off => {}
            Route::Broken(h) => components.push(h.as_ref().clone()),
            Route::On(_) => {
                let rname = kinfer_builders::naming::aim::route_name(&object.name_any(), &ns)
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                components.push(match children.fetch::<HttpRoute>(Some(&ns), &rname) {
                    Ok(Some(live)) => kinfer_state::inspect::http_route(
                        &serde_json::to_value(&live).unwrap_or_default(),
                    )
                    .downstream(),
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
                });
            }
        }

        let mut obs = Observation::new(ServiceState {
            runtime_config: rc,
            model,
            template,
            isvc,
            route,
        });
        obs.components = components;
        if let Some(rc) = &obs.state.runtime_config {
            obs.labels = rc.propagation();
        }
        obs
    }

    fn plan(
        &self,
        _object: &AIMService,
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
        if let Some(input) = &state.isvc {
            let built = kinfer_builders::kserve::inference_service(input)
                .map_err(|e| ServicePlanError::Build("InferenceService", e))?;
            plan.apply
                .push(DesiredObject::from_typed(&built.inference_service)?);
            if let Route::On(r) = &state.route {
                let route = kinfer_builders::gateway::predictor_route(r)
                    .map_err(|e| ServicePlanError::Build("HTTPRoute", e))?;
                plan.apply.push(DesiredObject::from_typed(&route)?);
            }
        }
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
        let runtime = match scaling(object) {
            Scaling::Fixed { replicas } => AIMServiceRuntimeStatus {
                replicas: Some(replicas.to_string()),
                ..AIMServiceRuntimeStatus::default()
            },
            Scaling::External { min, max } => AIMServiceRuntimeStatus {
                min_replicas: Some(min),
                max_replicas: Some(max),
                ..AIMServiceRuntimeStatus::default()
            },
        };
        let s = AIMServiceStatus {
            cache: previous.and_then(|p| p.cache.clone()),
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
            runtime: Some(runtime),
            status: AIMServiceState::from(scheme::phase(status)),
        };
        serde_json::to_value(s).unwrap_or_default()
    }
}
