//! The runtime configs' own controller: a validity condition on each config.
//!
//! Contract: no children, no reads beyond the object. compose runs the kind's `validate()`
//! (InvalidSpec errors: `ConfigValid=False`, `Ready=False`, reason `InvalidRuntimeConfig`) and
//! reports warnings in the `Config` component's message; plan is empty; status is
//! `conditions` + `observedGeneration`.

use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::aim::{
    AIMClusterRuntimeConfig, AIMRuntimeConfig, AIMRuntimeConfigSpec, AIMRuntimeConfigStatus,
    Validate,
};
use kinfer_state::health::ComponentHealth;
use kinfer_state::pipeline::{ChildKind, Children, Observation, Pipeline, PlanResult};
use kinfer_state::{
    Categorize, CategorizedError, ComponentState, ErrorCategory, OverallStatus, Reason,
};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::Context;

/// AIMRuntimeConfig and AIMClusterRuntimeConfig, as the pipeline sees them.
pub trait RuntimeConfigKind:
    Resource<DynamicType = ()>
    + Validate
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// The controller's short name.
    const CONTROLLER: &'static str;
    /// The spec.
    fn config_spec(&self) -> &AIMRuntimeConfigSpec;
}

impl RuntimeConfigKind for AIMRuntimeConfig {
    const CONTROLLER: &'static str = crate::scheme::controller::RUNTIME_CONFIG;
    fn config_spec(&self) -> &AIMRuntimeConfigSpec {
        &self.spec
    }
}

impl RuntimeConfigKind for AIMClusterRuntimeConfig {
    const CONTROLLER: &'static str = crate::scheme::controller::CLUSTER_RUNTIME_CONFIG;
    fn config_spec(&self) -> &AIMRuntimeConfigSpec {
        &self.spec
    }
}

/// The plan never fails.
#[derive(Debug, thiserror::Error)]
#[error("runtime configs plan nothing")]
pub struct NoPlanError;

impl Categorize for NoPlanError {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::InvalidSpec
    }
}

/// The pipeline of one runtime config kind.
#[derive(Debug)]
pub struct RuntimeConfigPipeline<K> {
    _ctx: Arc<Context>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K> RuntimeConfigPipeline<K> {
    /// A pipeline sharing `ctx`.
    pub fn new(ctx: Arc<Context>) -> Self {
        Self {
            _ctx: ctx,
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K: RuntimeConfigKind> Pipeline for RuntimeConfigPipeline<K> {
    type Object = K;
    type Fetched = ();
    type State = ();
    type PlanError = NoPlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        Vec::new()
    }

    async fn fetch(&self, _client: &Client, _object: &K, _children: &Children) {}

    fn compose(&self, object: &K, _children: &Children, (): ()) -> Observation<()> {
        let mut obs = Observation::new(());
        let health = match object.validate() {
            Ok(()) => {
                let warnings: Vec<String> =
                    object.warnings().iter().map(ToString::to_string).collect();
                let message = if warnings.is_empty() {
                    "runtime config is valid".to_owned()
                } else {
                    format!("runtime config is valid; warnings: {}", warnings.join("; "))
                };
                ComponentHealth::with_state(
                    "Config",
                    ComponentState::Ready,
                    Reason::custom("ConfigurationValid"),
                    message,
                )
            }
            Err(errors) => ComponentHealth::new("Config").upstream().error(
                CategorizedError::new(ErrorCategory::InvalidSpec, errors.to_string())
                    .with_reason(Reason::custom("InvalidRuntimeConfig")),
            ),
        };
        obs.components.push(health);
        obs
    }

    fn plan(&self, _object: &K, _observation: &Observation<()>) -> Result<PlanResult, NoPlanError> {
        Ok(PlanResult::default())
    }

    fn status(
        &self,
        object: &K,
        _observation: &Observation<()>,
        _status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value {
        let status = AIMRuntimeConfigStatus {
            conditions,
            observed_generation: object.meta().generation,
        };
        serde_json::to_value(status).unwrap_or_default()
    }
}
