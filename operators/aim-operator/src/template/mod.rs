//! AIMServiceTemplate / AIMClusterServiceTemplate.
//!
//! One pipeline ([`TemplatePipeline`]) serves both kinds through [`TemplateKind`]:
//! [`fetch`] (runtime config, model, Nodes, discovery Job and log, the discovery decision with
//! throttling) -> [`compose`] (components) -> plan (below: the discovery Job while it is
//! wanted, the ServingRuntime / ClusterServingRuntime once the template can run; requeue at
//! the backoff or throttle deadline). [`gpu`], [`discovery`] and [`parse`] are the pure rules.
//!
//! Status: `profile`, `modelSources`, `discovery` (attempts, last attempt and failure, spec
//! hash), `discoveryJob`, `resolvedModel`, `resolvedHardware`, `hardwareSummary`,
//! `resolvedNodeAffinity`, `resolvedRuntimeConfig`, the `Discovered` condition (never
//! overwritten once decided, section g #1), `status`, `observedGeneration`; with
//! `spec.caching.enabled` (namespace templates) the template's own AIMTemplateCache
//! ([`cache`]), `resolvedCache` and the `CacheWarm` condition.

pub mod cache;
pub mod compose;
pub mod discovery;
pub mod fetch;
pub mod gpu;
pub mod parse;

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::NodeSelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::aim::common::ResolvedReference;
use kinfer_api::aim::template::AIMTemplateCachingConfig;
use kinfer_api::aim::{
    AIMClusterServiceTemplate, AIMGpuRequirements, AIMHardwareRequirements, AIMServiceTemplate,
    AIMServiceTemplateSpecCommon, AIMServiceTemplateStatus, AIMTemplateCache,
};
use kinfer_api::kserve::{ClusterServingRuntime, ServingRuntime};
use kinfer_builders::kserve::{Gpu, RuntimeInput};
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use kinfer_state::condition::{ConditionSet, ConditionStatus, ConditionType};
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredError, DesiredObject, Observation, Pipeline, PlanResult, ScopeKind,
};
use kinfer_state::{Categorize, ErrorCategory, OverallStatus, Reason};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use self::compose::TemplateState;
use self::discovery::Decision;
use self::fetch::{Fetched, TemplateFacts};
use crate::context::Context;
use crate::scheme;

/// AIMServiceTemplate and AIMClusterServiceTemplate, as the pipeline sees them.
pub trait TemplateKind:
    Resource<DynamicType = ()>
    + kinfer_api::aim::Validate
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The serving runtime kind it builds.
    type Runtime: Resource<DynamicType = (), Scope: ScopeKind>
        + Serialize
        + DeserializeOwned
        + Clone
        + Debug
        + Send
        + Sync
        + 'static;
    /// The controller's short name.
    const CONTROLLER: &'static str;
    /// The runtime component's name.
    const RUNTIME_COMPONENT: &'static str;
    /// The shared spec.
    fn common(&self) -> &AIMServiceTemplateSpecCommon;
    /// The status.
    fn template_status(&self) -> Option<&AIMServiceTemplateStatus>;
    /// Whether the kind can cache its model sources (`spec.caching`; namespace templates).
    const CACHES: bool = false;
    /// `spec.caching`, for kinds that have it.
    fn caching(&self) -> Option<&AIMTemplateCachingConfig> {
        None
    }
    /// The serving runtime.
    fn runtime(
        input: &RuntimeInput,
        namespace: Option<&str>,
    ) -> Result<Self::Runtime, kinfer_builders::Error>;
}

impl TemplateKind for AIMServiceTemplate {
    type Runtime = ServingRuntime;
    const CONTROLLER: &'static str = scheme::controller::TEMPLATE;
    const RUNTIME_COMPONENT: &'static str = "ServingRuntime";
    const CACHES: bool = true;
    fn common(&self) -> &AIMServiceTemplateSpecCommon {
        &self.spec.common
    }
    fn caching(&self) -> Option<&AIMTemplateCachingConfig> {
        self.spec.caching.as_ref()
    }
    fn template_status(&self) -> Option<&AIMServiceTemplateStatus> {
        self.status.as_ref()
    }
    fn runtime(
        input: &RuntimeInput,
        namespace: Option<&str>,
    ) -> Result<ServingRuntime, kinfer_builders::Error> {
        let ns = Dns1123Label::new(namespace.unwrap_or_default())?;
        kinfer_builders::kserve::serving_runtime(input, &ns)
    }
}

impl TemplateKind for AIMClusterServiceTemplate {
    type Runtime = ClusterServingRuntime;
    const CONTROLLER: &'static str = scheme::controller::CLUSTER_TEMPLATE;
    const RUNTIME_COMPONENT: &'static str = "ClusterServingRuntime";
    fn common(&self) -> &AIMServiceTemplateSpecCommon {
        &self.spec.0
    }
    fn template_status(&self) -> Option<&AIMServiceTemplateStatus> {
        self.status.as_ref()
    }
    fn runtime(
        input: &RuntimeInput,
        _namespace: Option<&str>,
    ) -> Result<ClusterServingRuntime, kinfer_builders::Error> {
        kinfer_builders::kserve::cluster_serving_runtime(input)
    }
}

/// Errors of the template's plan step.
#[derive(Debug, thiserror::Error)]
pub enum TemplatePlanError {
    /// The discovery Job could not be built. Category: InvalidSpec.
    #[error("build discovery job: {0}")]
    BuildJob(#[source] kinfer_builders::Error),
    /// The serving runtime could not be built. Category: InvalidSpec.
    #[error("build serving runtime: {0}")]
    BuildRuntime(#[source] kinfer_builders::Error),
    /// A child does not serialise. Category: InvalidSpec.
    #[error(transparent)]
    Serialize(#[from] DesiredError),
}

impl Categorize for TemplatePlanError {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::InvalidSpec
    }
}

/// The pipeline of one template kind.
#[derive(Debug)]
pub struct TemplatePipeline<K> {
    ctx: Arc<Context>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K> TemplatePipeline<K> {
    /// A pipeline sharing `ctx`.
    pub fn new(ctx: Arc<Context>) -> Self {
        Self {
            ctx,
            _kind: std::marker::PhantomData,
        }
    }
}

fn resolved_hardware(
    spec: &AIMServiceTemplateSpecCommon,
    state: &TemplateState,
) -> Option<AIMHardwareRequirements> {
    let mut hw = spec.parameters.hardware.clone();
    let meta = state.profile.as_ref().and_then(|p| p.metadata.as_ref());
    if let Some(m) = meta
        && (m.gpu.is_some() || m.gpu_count.is_some())
    {
        let h = hw.get_or_insert_with(AIMHardwareRequirements::default);
        let g = h.gpu.get_or_insert_with(AIMGpuRequirements::default);
        if g.min_vram.is_none() && m.gpu.is_some() {
            g.model.clone_from(&m.gpu);
        }
        if m.gpu_count.is_some() {
            g.requests = m.gpu_count;
        }
    }
    hw
}

fn runtime_input<K: TemplateKind>(
    object: &K,
    state: &TemplateState,
    manager: &str,
) -> Result<Option<RuntimeInput>, TemplatePlanError> {
    let Some(model) = &state.model else {
        return Ok(None);
    };
    let hw = resolved_hardware(object.common(), state);
    let gpu = hw.as_ref().and_then(|h| h.gpu.as_ref()).and_then(|g| {
        let count = i64::from(g.requests.unwrap_or(0));
        (count > 0).then(|| Gpu {
            count,
            resource_name: Some(g.resource_name.clone()),
        })
    });
    let node_affinity: Option<NodeSelector> = state.node_affinity().and_then(|a| {
        a.required_during_scheduling_ignored_during_execution
            .clone()
    });
    let mut secrets: Vec<String> = model
        .spec
        .image_pull_secrets
        .iter()
        .map(|s| s.name.clone())
        .collect();
    for s in &object.common().image_pull_secrets {
        if !secrets.contains(&s.name) {
            secrets.push(s.name.clone());
        }
    }
    Ok(Some(RuntimeInput {
        template: Dns1123Subdomain::new(object.name_any())
            .map_err(|e| TemplatePlanError::BuildRuntime(e.into()))?,
        managed_by: manager.to_owned(),
        model: object.common().model_name.clone(),
        image: model.spec.image.clone(),
        image_pull_secrets: secrets,
        gpu,
        node_affinity,
        shm_size: None,
    }))
}

impl<K: TemplateKind> Pipeline for TemplatePipeline<K> {
    type Object = K;
    type Fetched = Fetched;
    type State = TemplateState;
    type PlanError = TemplatePlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        let mut kinds = vec![
            ChildKind::of::<k8s_openapi::api::batch::v1::Job>(),
            ChildKind::of::<K::Runtime>(),
        ];
        if K::CACHES {
            kinds.push(ChildKind::of::<AIMTemplateCache>());
        }
        kinds
    }

    async fn fetch(&self, client: &Client, object: &K, children: &Children) -> Fetched {
        // The watch cache may not show the status this controller just wrote (a profile):
        // an undiscovered template is re-read so a finished discovery is never run twice.
        // Inline sources never get a profile: nothing to re-read.
        let fresh = if object
            .template_status()
            .is_some_and(|s| s.profile.is_some())
            || !object.common().model_sources.is_empty()
        {
            None
        } else {
            fresh(client, object).await
        };
        let status = fresh
            .as_ref()
            .and_then(TemplateKind::template_status)
            .or_else(|| object.template_status());
        let manager = scheme::manager(K::CONTROLLER);
        let name = object.name_any();
        let facts = TemplateFacts {
            name: &name,
            namespace: object.meta().namespace.as_deref(),
            spec: object.common(),
            has_profile: status.is_some_and(|s| s.profile.is_some()),
            previous: status.and_then(|s| s.discovery.as_ref()),
            counted_uid: status
                .and_then(|s| s.discovery_job.as_ref())
                .and_then(|r| r.uid.as_deref()),
            manager: &manager,
        };
        let mut fetched = fetch::fetch(&self.ctx, client, facts, children).await;
        fetched.fresh_status = fresh.as_ref().and_then(|f| f.template_status().cloned());
        fetched.cache_by_name = cache_by_name(client, object, children).await;
        fetched
    }

    fn compose(
        &self,
        object: &K,
        children: &Children,
        fetched: Fetched,
    ) -> Observation<TemplateState> {
        // The status fetch decided on: re-read when the cached copy had no profile yet.
        let fresh = fetched.fresh_status.clone();
        let fetched_cache = fetched.cache_by_name.clone();
        let status = fresh.as_ref().or_else(|| object.template_status());
        // A listing error (the kind not served: KServe not installed) is the runtime
        // component's; an undecodable runtime counts as missing (the apply repairs it).
        let runtime_exists = match children.list_error(&ChildKind::of::<K::Runtime>()) {
            Some(e) => Err(e.clone()),
            None => Ok(children
                .typed::<K::Runtime>(object.meta().namespace.as_deref(), &object.name_any())
                .is_ok_and(|r| r.is_some())),
        };
        let previous = compose::Previous {
            profile: status.and_then(|s| s.profile.as_ref()),
            model_sources: status
                .map(|s| s.model_sources.as_slice())
                .unwrap_or_default(),
            affinity: status.and_then(|s| s.resolved_node_affinity.as_ref()),
            job_uid: status
                .and_then(|s| s.discovery_job.as_ref())
                .and_then(|r| r.uid.as_deref()),
        };
        let (state, components) = compose::compose(
            fetched,
            &object.common().model_sources,
            previous,
            K::RUNTIME_COMPONENT,
            runtime_exists,
            self.ctx.settings.discovery.max_active,
        );
        // An invalid spec puts its violations on upstream components: nothing is planned.
        let components = compose::with_fields(
            components,
            crate::service::validation::place(object, compose::placed),
            &object.common().model_name,
            object.meta().namespace.as_deref(),
        );
        let mut state = state;
        if K::CACHES {
            let (name, ns) = (object.name_any(), object.namespace().unwrap_or_default());
            let live = children
                .typed::<AIMTemplateCache>(Some(&ns), &name)
                .ok()
                .flatten()
                .or(fetched_cache);
            let live = match live {
                None => cache::LiveCache::Absent,
                Some(c) if controlled_by(&c, object.uid().as_deref()) => {
                    cache::LiveCache::Own(Box::new(c))
                }
                Some(_) => cache::LiveCache::Foreign,
            };
            let sources_known = !state.model_sources.is_empty();
            state.cache = cache::compose(
                (&name, &ns),
                object.common(),
                object.caching(),
                sources_known,
                live,
            );
        }
        let mut obs = Observation::new(state);
        obs.components = components;
        if let Some(rc) = &obs.state.runtime_config {
            obs.labels = rc.propagation();
        }
        obs
    }

    fn plan(
        &self,
        object: &K,
        observation: &Observation<TemplateState>,
    ) -> Result<PlanResult, TemplatePlanError> {
        let state = &observation.state;
        let s = &self.ctx.settings.discovery;
        let mut plan = PlanResult::default();
        let keep_job = matches!(
            state.decision,
            Decision::Running
                | Decision::Create
                | Decision::Failed {
                    retry_in: Some(_),
                    ..
                }
        );
        if keep_job && let Some(input) = &state.job {
            let job = kinfer_builders::discovery_job::discovery_job(input)
                .map_err(TemplatePlanError::BuildJob)?;
            plan.apply.push(DesiredObject::from_typed(&job)?);
        }
        if state.runtime_planned
            && let Some(input) = runtime_input(object, state, &scheme::manager(K::CONTROLLER))?
        {
            let rt = K::runtime(&input, object.meta().namespace.as_deref())
                .map_err(TemplatePlanError::BuildRuntime)?;
            plan.apply.push(DesiredObject::from_typed(&rt)?);
        }
        if let Some(c) = state.cache.as_ref().and_then(|c| c.desired.as_ref()) {
            plan.apply.push(DesiredObject::from_typed(c)?);
        }
        plan.requeue_after = match &state.decision {
            Decision::Failed {
                retry_in: Some(d), ..
            }
            | Decision::Backoff { retry_in: d, .. } => Some(*d),
            Decision::Failed { retry_in: None, .. } => Some(Duration::from_secs(1)),
            Decision::Throttled => Some(s.throttle_recheck),
            // Pods are not watched: a running Job's pod is checked for a stuck start this often.
            Decision::Running => Some(s.pod_recheck),
            _ => None,
        };
        Ok(plan)
    }

    fn decorate(
        &self,
        _object: &K,
        observation: &Observation<TemplateState>,
        conditions: &mut ConditionSet,
    ) {
        let (ok, reason, message) = compose::discovered_condition(&observation.state);
        conditions.set(
            &ConditionType::Domain(compose::DISCOVERED.into()),
            ConditionStatus::from_bool(ok),
            &Reason::custom(reason),
            message,
        );
        if let Some(c) = &observation.state.cache {
            let (ok, reason, message) = c.condition();
            conditions.set(
                &ConditionType::Domain(cache::CACHE_WARM.into()),
                ConditionStatus::from_bool(ok),
                &Reason::custom(reason),
                message,
            );
        }
    }

    fn status(
        &self,
        object: &K,
        observation: &Observation<TemplateState>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value {
        let state = &observation.state;
        let hw = resolved_hardware(object.common(), state);
        let gpu_meta = state.profile.as_ref().and_then(|p| p.metadata.as_ref());
        let summary = gpu::summary(
            hw.as_ref(),
            gpu_meta.and_then(|m| m.gpu.as_deref()),
            gpu_meta.and_then(|m| m.gpu_count),
        );
        let discovery_job = match (&state.job, object.common().model_sources.is_empty()) {
            (Some(j), true) => kinfer_builders::discovery_job::discovery_job(j)
                .ok()
                .map(|job| ResolvedReference {
                    kind: Some("Job".into()),
                    name: Some(job.name_any()),
                    namespace: job.namespace(),
                    scope: None,
                    uid: state.job_uid.clone(),
                }),
            _ => None,
        };
        let s = AIMServiceTemplateStatus {
            conditions,
            discovery: state.discovery.clone(),
            discovery_job,
            hardware_summary: Some(summary),
            model_sources: state.model_sources.clone(),
            observed_generation: object.meta().generation,
            profile: state.profile.clone(),
            resolved_cache: state
                .cache
                .as_ref()
                .and_then(cache::TemplateCache::reference),
            resolved_hardware: hw,
            resolved_model: state.model.as_ref().map(|m| m.reference.clone()),
            resolved_node_affinity: state.node_affinity().cloned(),
            resolved_runtime_config: state.runtime_config.as_ref().map(|r| r.reference.clone()),
            status: scheme::phase(status),
        };
        serde_json::to_value(s).unwrap_or_default()
    }
}

/// The cache of the template's name when caching is on and it is not among the children
/// (see [`fetch::Fetched::cache_by_name`]); a failed read counts as absent (the apply that
/// follows reads the name again and refuses a foreign object).
async fn cache_by_name<K: TemplateKind>(
    client: &Client,
    object: &K,
    children: &Children,
) -> Option<AIMTemplateCache> {
    if !K::CACHES || !object.caching().is_some_and(|c| c.enabled) {
        return None;
    }
    let (name, ns) = (object.name_any(), object.namespace()?);
    if children
        .typed::<AIMTemplateCache>(Some(&ns), &name)
        .ok()
        .flatten()
        .is_some()
    {
        return None;
    }
    let api: kube::Api<AIMTemplateCache> = kube::Api::namespaced(client.clone(), &ns);
    api.get_opt(&name).await.ok().flatten()
}

/// Whether `cache` has a controller reference to the object of `uid`.
fn controlled_by(cache: &AIMTemplateCache, uid: Option<&str>) -> bool {
    uid.is_some() && scheme::controller_uid(&cache.metadata) == uid
}

async fn fresh<K: TemplateKind>(client: &Client, object: &K) -> Option<K> {
    let resource = kube::core::ApiResource::erase::<K>(&());
    let api =
        kinfer_state::apply::parent_api(client, &resource, object.meta().namespace.as_deref());
    let live = api.get_opt(&object.name_any()).await.ok().flatten()?;
    serde_json::to_value(live)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}

/// The name of the discovery Job a template would run (for tests and tools).
pub fn discovery_job_name(
    template: &str,
    namespace: Option<&str>,
    spec: &AIMServiceTemplateSpecCommon,
    model: &fetch::ModelRef,
    ctx: &Context,
    controller: &str,
) -> Option<String> {
    let manager = scheme::manager(controller);
    let facts = TemplateFacts {
        name: template,
        namespace,
        spec,
        has_profile: false,
        previous: None,
        counted_uid: None,
        manager: &manager,
    };
    let ns = namespace.unwrap_or(&ctx.settings.system_namespace);
    let input = fetch::job_input(facts, model, ns, &ctx.settings.jobs.discovery).ok()?;
    kinfer_builders::discovery_job::discovery_job(&input)
        .ok()
        .map(|j| j.name_any())
}
