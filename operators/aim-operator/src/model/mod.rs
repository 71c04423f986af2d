//! AIMModel / AIMClusterModel: the catalog entries.
//!
//! One pipeline ([`ModelPipeline`]) serves both kinds through [`ModelKind`]:
//! [`fetch`] (runtime config, image metadata) -> [`compose`] (components, desired templates)
//! -> plan (below: the desired templates as owned children, so templates the metadata no
//! longer lists are pruned by the engine's orphan deletion; a requeue after the inspector's tag
//! TTL for registry-inspected images). [`templates`] holds the naming and spec rules.
//!
//! Status: `imageMetadata` (from spec or registry), `sourceType`, `resolvedRuntimeConfig`,
//! `status` mapped from the overall state, conditions, `observedGeneration`.

pub mod compose;
pub mod fetch;
pub mod templates;

use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::aim::model::AIMModelSourceType;
use kinfer_api::aim::{
    AIMClusterModel, AIMClusterServiceTemplate, AIMClusterServiceTemplateSpec, AIMModel,
    AIMModelSpec, AIMModelStatus, AIMServiceTemplate, AIMServiceTemplateSpec,
    AIMServiceTemplateSpecCommon, AIMServiceTemplateStatus,
};
use kinfer_api::phase::Phase;
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredError, DesiredObject, Observation, Pipeline, PlanResult, ScopeKind,
};
use kinfer_state::{Categorize, ErrorCategory, OverallStatus};
use kube::api::ObjectMeta;
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use self::compose::{ModelState, metadata_health, name_error, templates_health};
use self::fetch::{Fetched, Metadata};
use crate::context::Context;
use crate::runtime_config::resolve;
use crate::scheme;

/// A template kind a model generates.
pub trait GeneratedTemplate:
    Resource<DynamicType = (), Scope: ScopeKind>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// A template from its parts.
    fn build(
        name: &str,
        namespace: Option<&str>,
        labels: std::collections::BTreeMap<String, String>,
        spec: AIMServiceTemplateSpecCommon,
    ) -> Self;
    /// Its status.
    fn template_status(&self) -> Option<&AIMServiceTemplateStatus>;
}

impl GeneratedTemplate for AIMServiceTemplate {
    fn build(
        name: &str,
        namespace: Option<&str>,
        labels: std::collections::BTreeMap<String, String>,
        spec: AIMServiceTemplateSpecCommon,
    ) -> Self {
        let mut t = AIMServiceTemplate::new(
            name,
            AIMServiceTemplateSpec {
                common: spec,
                caching: None,
            },
        );
        t.metadata = meta(name, namespace, labels);
        t
    }
    fn template_status(&self) -> Option<&AIMServiceTemplateStatus> {
        self.status.as_ref()
    }
}

impl GeneratedTemplate for AIMClusterServiceTemplate {
    fn build(
        name: &str,
        _namespace: Option<&str>,
        labels: std::collections::BTreeMap<String, String>,
        spec: AIMServiceTemplateSpecCommon,
    ) -> Self {
        let mut t = AIMClusterServiceTemplate::new(name, AIMClusterServiceTemplateSpec(spec));
        t.metadata = meta(name, None, labels);
        t
    }
    fn template_status(&self) -> Option<&AIMServiceTemplateStatus> {
        self.status.as_ref()
    }
}

fn meta(
    name: &str,
    namespace: Option<&str>,
    labels: std::collections::BTreeMap<String, String>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

/// AIMModel and AIMClusterModel, as the pipeline sees them.
pub trait ModelKind:
    Resource<DynamicType = ()>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + kinfer_api::aim::Validate
    + 'static
{
    /// The templates it generates.
    type Template: GeneratedTemplate;
    /// The controller's short name.
    const CONTROLLER: &'static str;
    /// The templates component's name.
    const TEMPLATES_COMPONENT: &'static str;
    /// The spec.
    fn model_spec(&self) -> &AIMModelSpec;
    /// The status.
    fn model_status(&self) -> Option<&AIMModelStatus>;
}

impl ModelKind for AIMModel {
    type Template = AIMServiceTemplate;
    const CONTROLLER: &'static str = scheme::controller::MODEL;
    const TEMPLATES_COMPONENT: &'static str = "ServiceTemplates";
    fn model_spec(&self) -> &AIMModelSpec {
        &self.spec
    }
    fn model_status(&self) -> Option<&AIMModelStatus> {
        self.status.as_ref()
    }
}

impl ModelKind for AIMClusterModel {
    type Template = AIMClusterServiceTemplate;
    const CONTROLLER: &'static str = scheme::controller::CLUSTER_MODEL;
    const TEMPLATES_COMPONENT: &'static str = "ClusterServiceTemplates";
    fn model_spec(&self) -> &AIMModelSpec {
        &self.spec
    }
    fn model_status(&self) -> Option<&AIMModelStatus> {
        self.status.as_ref()
    }
}

/// Errors of the model's plan step.
#[derive(Debug, thiserror::Error)]
pub enum ModelPlanError {
    /// A template does not serialise. Category: InvalidSpec.
    #[error(transparent)]
    BuildTemplate(#[from] DesiredError),
}

impl Categorize for ModelPlanError {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::InvalidSpec
    }
}

/// The pipeline of one model kind.
#[derive(Debug)]
pub struct ModelPipeline<K> {
    ctx: Arc<Context>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K> ModelPipeline<K> {
    /// A pipeline sharing `ctx`.
    pub fn new(ctx: Arc<Context>) -> Self {
        Self {
            ctx,
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K: ModelKind> Pipeline for ModelPipeline<K> {
    type Object = K;
    type Fetched = Fetched;
    type State = ModelState;
    type PlanError = ModelPlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        vec![ChildKind::of::<K::Template>()]
    }

    async fn fetch(&self, client: &Client, object: &K, _children: &Children) -> Fetched {
        let previous = object
            .model_status()
            .and_then(|s| s.image_metadata.as_ref());
        fetch::fetch(
            &self.ctx,
            client,
            object.model_spec(),
            object.meta().namespace.as_deref(),
            previous,
        )
        .await
    }

    fn compose(
        &self,
        object: &K,
        children: &Children,
        fetched: Fetched,
    ) -> Observation<ModelState> {
        let (rc_health, runtime_config) = resolve::resolve(&fetched.runtime_config);
        let name = object.name_any();
        let ns = object.meta().namespace.clone();
        let mut state = ModelState {
            metadata: fetched.metadata,
            desired: Vec::new(),
            runtime_config,
        };
        let md = match &state.metadata {
            Metadata::Spec(m)
            | Metadata::Inspected { metadata: m, .. }
            | Metadata::Stale { metadata: m, .. }
            | Metadata::Disabled(Some(m)) => Some(m.clone()),
            _ => None,
        };
        let mut build_error = None;
        if state.metadata_known() {
            match templates::desired(&name, object.model_spec(), md.as_ref()) {
                Ok(d) => state.desired = d,
                Err(e) => build_error = Some(name_error(&e)),
            }
        }
        let phases: Vec<Option<Phase>> = state
            .desired
            .iter()
            .map(|t| {
                children
                    .fetch::<K::Template>(ns.as_deref(), &t.name)
                    .ok()
                    .flatten()
                    .map(|t| t.template_status().map(|s| s.status).unwrap_or_default())
            })
            .collect();
        let mut obs = Observation::new(state);
        obs.components.push(rc_health);
        obs.components.push(metadata_health(&obs.state.metadata));
        obs.components.push(templates_health(
            K::TEMPLATES_COMPONENT,
            &obs.state,
            &phases,
            build_error,
        ));
        // An invalid spec names its fields on upstream components (nothing is planned).
        let violations =
            crate::service::validation::place(object, compose::placed(K::TEMPLATES_COMPONENT));
        crate::service::validation::replace(&mut obs.components, violations);
        obs.components[0] = crate::service::validation::at_field(
            obs.components[0].clone(),
            "spec.runtimeConfigName",
            kinfer_state::ErrorCategory::MissingUpstreamDependency,
        );
        if let Some(rc) = &obs.state.runtime_config {
            obs.labels = rc.propagation();
        }
        obs.external = matches!(
            obs.state.metadata,
            Metadata::Inspected { .. } | Metadata::Stale { .. } | Metadata::Failed(_)
        );
        obs
    }

    fn plan(
        &self,
        object: &K,
        observation: &Observation<ModelState>,
    ) -> Result<PlanResult, ModelPlanError> {
        let ns = object.meta().namespace.as_deref();
        let mut plan = PlanResult::default();
        for t in &observation.state.desired {
            let template = K::Template::build(&t.name, ns, t.labels.clone(), t.spec.clone());
            plan.apply.push(DesiredObject::from_typed(&template)?);
        }
        if matches!(
            observation.state.metadata,
            Metadata::Inspected { .. } | Metadata::Stale { .. }
        ) {
            plan.requeue_after = Some(self.ctx.settings.inspector.tag_ttl);
        }
        Ok(plan)
    }

    fn status(
        &self,
        object: &K,
        observation: &Observation<ModelState>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value {
        let previous = object.model_status();
        let state = &observation.state;
        let s = AIMModelStatus {
            conditions,
            image_metadata: state
                .status_metadata(previous.and_then(|p| p.image_metadata.as_ref()))
                .cloned(),
            observed_generation: object.meta().generation,
            resolved_runtime_config: state.runtime_config.as_ref().map(|r| r.reference.clone()),
            source_type: Some(if object.model_spec().model_sources.is_empty() {
                AIMModelSourceType::Image
            } else {
                AIMModelSourceType::Custom
            }),
            status: scheme::phase(status),
        };
        serde_json::to_value(s).unwrap_or_default()
    }
}
