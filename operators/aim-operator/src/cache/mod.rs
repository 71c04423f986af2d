//! AIMTemplateCache: one AIMArtifact per model source of a template (NOTES rows 20-21, 23).
//!
//! [`fetch`] (runtime config, the template's sources when the spec lists none, the
//! namespace's artifacts) -> [`compose`] (components `RuntimeConfig`, `Template` upstream and
//! `Artifacts` downstream, the artifact of each source) -> plan (below: created shared
//! artifacts without owner, dedicated artifacts owned by the cache). Status: `artifacts` (per
//! model id: name, uid, status, PVC, mount point), `resolvedTemplateKind`,
//! `resolvedRuntimeConfig`, `status`, conditions (`ArtifactsReady`, ...),
//! `observedGeneration`.
//!
//! Finalizer `aim.eai.amd.com/artifactcleanup`: on deletion the non-Ready artifacts this cache
//! created are deleted, except those another live cache uses or is about to use, which are
//! handed over to it ([`finalize`]). Ready shared artifacts stay for reuse.

pub mod compose;
pub mod fetch;
pub mod finalize;

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::aim::{AIMArtifact, AIMTemplateCache, AIMTemplateCacheStatus, CachingMode};
use kinfer_state::health::ComponentHealth;
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredError, DesiredObject, Observation, Pipeline, PlanResult,
};
use kinfer_state::{CategorizedError, OverallStatus};
use kube::Client;

use self::compose::SourceArtifact;
use self::fetch::Fetched;
use crate::context::Context;
use crate::runtime_config::{Resolved, resolve};
use crate::scheme;
use crate::service::{HasRuntimeConfig, observed};

/// The controller's short name (`aim-template-cache-controller`).
pub const CONTROLLER: &str = scheme::controller::TEMPLATE_CACHE;
/// The cache's finalizer.
pub const FINALIZER: &str = "aim.eai.amd.com/artifactcleanup";

/// The cache's composed state.
#[derive(Debug, Clone)]
pub struct CacheState {
    /// The resolved runtime config.
    pub runtime_config: Option<Resolved>,
    /// The template's kind, when it was read.
    pub template_kind: Option<&'static str>,
    /// The artifact of each source.
    pub artifacts: Vec<SourceArtifact>,
}

/// The AIMTemplateCache pipeline.
#[derive(Debug)]
pub struct CachePipeline {
    ctx: Arc<Context>,
}

impl CachePipeline {
    /// A pipeline sharing `ctx`.
    pub fn new(ctx: Arc<Context>) -> Self {
        Self { ctx }
    }
}

impl HasRuntimeConfig for CacheState {
    fn runtime_config(&self) -> Option<&Resolved> {
        self.runtime_config.as_ref()
    }
}

impl Pipeline for CachePipeline {
    type Object = AIMTemplateCache;
    type Fetched = Fetched;
    type State = CacheState;
    type PlanError = DesiredError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        // Artifacts hold downloads: never pruned (owned ones go with the cache).
        vec![ChildKind::of::<AIMArtifact>().prune(false)]
    }

    fn finalizer(&self) -> Option<String> {
        Some(FINALIZER.to_owned())
    }

    async fn finalize(
        &self,
        client: &Client,
        object: &AIMTemplateCache,
    ) -> Result<(), CategorizedError> {
        finalize::finalize(client, object).await
    }

    async fn fetch(
        &self,
        client: &Client,
        object: &AIMTemplateCache,
        _children: &Children,
    ) -> Fetched {
        fetch::fetch(&self.ctx, client, object).await
    }

    fn compose(
        &self,
        object: &AIMTemplateCache,
        _children: &Children,
        fetched: Fetched,
    ) -> Observation<CacheState> {
        let (rc_health, rc) = resolve::resolve(&fetched.runtime_config);
        let (template_health, read_sources, template_kind) =
            compose::template_health(&object.spec.template_name, fetched.template.as_ref());
        let sources = if object.spec.model_sources.is_empty() {
            read_sources
        } else {
            Some(object.spec.model_sources.clone())
        };
        let mut components = vec![rc_health, template_health];
        let mut artifacts = Vec::new();
        match (sources, &fetched.artifacts) {
            (Some(sources), Ok(existing)) => {
                match compose::artifacts(object, &sources, existing, rc.as_ref()) {
                    Ok(list) => {
                        components.push(compose::artifacts_health(&list));
                        artifacts = list;
                    }
                    Err(e) => components.push(
                        ComponentHealth::new(compose::ARTIFACTS)
                            .downstream()
                            .error(e),
                    ),
                }
            }
            (_, Err(e)) => components.push(
                ComponentHealth::new(compose::ARTIFACTS)
                    .downstream()
                    .error(e.clone()),
            ),
            (None, Ok(_)) => components.push(
                ComponentHealth::with_state(
                    compose::ARTIFACTS,
                    kinfer_state::ComponentState::Pending,
                    kinfer_state::Reason::custom("WaitingForTemplate"),
                    "waiting for the template's model sources",
                )
                .downstream(),
            ),
        }
        let obs = Observation::new(CacheState {
            runtime_config: rc,
            template_kind,
            artifacts,
        });
        observed(obs, components)
    }

    fn plan(
        &self,
        object: &AIMTemplateCache,
        observation: &Observation<CacheState>,
    ) -> Result<PlanResult, DesiredError> {
        let mut plan = PlanResult::default();
        for a in &observation.state.artifacts {
            if let Some(d) = &a.desired {
                let d = DesiredObject::from_typed(d)?;
                match object.spec.mode {
                    CachingMode::Dedicated => plan.apply.push(d),
                    CachingMode::Shared => plan.apply_without_owner.push(d),
                }
            }
        }
        Ok(plan)
    }

    fn status(
        &self,
        object: &AIMTemplateCache,
        observation: &Observation<CacheState>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value {
        let state = &observation.state;
        let previous = object.status.as_ref();
        let s = AIMTemplateCacheStatus {
            artifacts: compose::status_artifacts(&state.artifacts),
            conditions,
            observed_generation: object.metadata.generation,
            resolved_runtime_config: state.runtime_config.as_ref().map(|r| r.reference.clone()),
            resolved_template_kind: state
                .template_kind
                .map(str::to_owned)
                .or_else(|| previous.and_then(|p| p.resolved_template_kind.clone())),
            status: scheme::phase(status),
        };
        serde_json::to_value(s).unwrap_or_default()
    }
}
