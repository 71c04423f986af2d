//! The ModelService pipeline on the kinfer reconcile engine: [`fetch`] -> [`compose`] ->
//! [`plan`], with [`resolve`] and [`build`] (pure) turning a valid spec into objects, and
//! [`status`] mapping the engine's result to `ModelServiceStatus`.
//!
//! Contract: the engine ([`kinfer_state::Engine`]) lists children, applies with server-side
//! apply, deletes orphans (a removed prefill role, disabled monitors) and writes status only
//! when it changed. A pipeline is built for one set of [`OptionalCrds`] (the engine reads the
//! child kinds once): when the set changes the controller builds a new pipeline and engine
//! ([`crate::controller::run`]); a kind whose CRD is missing is neither listed nor applied.

pub mod adopt;
pub mod build;
pub mod compose;
pub mod fetch;
pub mod legacy;
pub mod plan;
pub mod resolve;
pub mod status;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::modelservice::ModelService;
use kinfer_builders::naming::NameError;
use kinfer_state::category::{Categorize, ErrorCategory};
use kinfer_state::condition::ConditionSet;
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredError, Observation, Pipeline, PlanResult,
};
use kinfer_state::{CategorizedError, LabelScheme, OverallStatus, OwnerIndex};
use kube::Client;
use kube::core::DynamicObject;

use crate::config::{OperatorConfig, ParseFlagError};
use crate::optional_crds::OptionalCrds;

pub use compose::State;
pub use fetch::Fetched;

/// Field manager and `kinfer.dev/managed-by` value of every object this operator writes.
pub const MANAGER: &str = "kinfer-modelservice";
/// The finalizer that removes the Endpoint Picker's cluster RBAC (upstream's name, so objects
/// upstream finalized are cleaned up by kinfer after migration).
pub const FINALIZER: &str = "model.otterscale.io/epp-cluster-rbac";
/// Extra Endpoint Picker flags of one ModelService, one `name=value` per line.
pub const EPP_FLAGS_ANNOTATION: &str = "model.otterscale.io/epp-flags";

/// The engine's label scheme: `model.otterscale.io/modelservice.name=<ms>` on owned children.
pub fn label_scheme() -> LabelScheme {
    LabelScheme {
        domain: "model.otterscale.io".to_owned(),
        controller: "modelservice".to_owned(),
        manager: MANAGER.to_owned(),
    }
}

/// Resolving the spec failed (a user-fixable problem).
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The object's name or namespace is not usable for children.
    #[error("metadata.name: {0}")]
    Name(#[source] NameError),
    /// The EPP flags annotation does not parse. The message names the field as a path
    /// (`metadata.annotations[<key>]`), as spec violations name theirs.
    #[error("metadata.annotations[{EPP_FLAGS_ANNOTATION}]: {0}")]
    EppFlags(#[source] ParseFlagError),
    /// An engine env variable cannot be expressed for this Kubernetes version.
    #[error("spec.engine.env {name}: {reason}")]
    Env {
        /// The variable.
        name: String,
        /// Why.
        reason: String,
    },
}

/// Building the objects failed (a user-fixable problem: builders reject only bad input).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A builder refused the resolved input.
    #[error(transparent)]
    Builder(#[from] kinfer_builders::Error),
    /// A built object does not serialise.
    #[error(transparent)]
    Desired(#[from] DesiredError),
}

/// The plan step's error.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The spec is invalid; nothing is applied and existing children keep serving.
    #[error("{0}")]
    InvalidSpec(String),
}

impl Categorize for PlanError {
    fn category(&self) -> ErrorCategory {
        match self {
            Self::InvalidSpec(_) => ErrorCategory::InvalidSpec,
        }
    }
}

/// The ModelService pipeline.
#[derive(Debug, Clone)]
pub struct ModelServicePipeline {
    config: Arc<OperatorConfig>,
    crds: OptionalCrds,
    index: Option<Arc<OwnerIndex>>,
}

impl ModelServicePipeline {
    /// A pipeline with `config` for a cluster serving the optional CRDs `crds`.
    pub fn new(config: OperatorConfig, crds: OptionalCrds) -> Self {
        Self {
            config: Arc::new(config),
            crds,
            index: None,
        }
    }

    /// The same pipeline for another set of optional CRDs (and no index: each start of the
    /// controllers watches afresh).
    #[must_use]
    pub fn with_crds(&self, crds: OptionalCrds) -> Self {
        Self {
            config: Arc::clone(&self.config),
            crds,
            index: None,
        }
    }

    /// This pipeline reading the metrics-auth ClusterRoleBinding from `index` (the engine's,
    /// fed by the controllers' watches: [`crate::cluster_rbac`]) before it reads it by name.
    #[must_use]
    pub fn with_index(mut self, index: Arc<OwnerIndex>) -> Self {
        self.index = Some(index);
        self
    }

    /// The operator configuration.
    pub fn config(&self) -> &OperatorConfig {
        &self.config
    }

    /// The optional CRDs this pipeline is for.
    pub fn crds(&self) -> OptionalCrds {
        self.crds
    }
}

/// The kinds the engine lists as a ModelService's children, given the optional CRDs. The
/// Endpoint Picker's token Secret is owned but deliberately not listed (nor watched): the
/// operator needs no cluster-wide list/watch of Secrets; the engine reads it by name and the
/// plan rechecks it periodically ([`plan`]).
pub fn child_kinds(crds: OptionalCrds) -> Vec<ChildKind> {
    let mut kinds = vec![
        ChildKind::of::<Deployment>(),
        ChildKind::of::<Service>(),
        ChildKind::of::<ConfigMap>(),
        ChildKind::of::<ServiceAccount>(),
        ChildKind::of::<Role>(),
        ChildKind::of::<RoleBinding>(),
    ];
    if crds.inference_pool {
        kinds.push(ChildKind::of::<kinfer_api::inference_pool::InferencePool>());
    }
    if crds.gateway_api {
        kinds.push(ChildKind::of::<gateway_api::httproutes::HttpRoute>());
    }
    if crds.istio {
        kinds.push(ChildKind::of::<kinfer_api::istio::DestinationRule>());
    }
    if crds.monitoring {
        kinds.push(ChildKind::of::<kinfer_api::monitoring::PodMonitor>());
        kinds.push(ChildKind::of::<kinfer_api::monitoring::ServiceMonitor>());
    }
    kinds
}

impl Pipeline for ModelServicePipeline {
    type Object = ModelService;
    type Fetched = Fetched;
    type State = State;
    type PlanError = PlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        child_kinds(self.crds())
    }

    async fn fetch(&self, client: &Client, object: &ModelService, children: &Children) -> Fetched {
        fetch::fetch(
            client,
            object,
            &self.config,
            (self.crds(), children),
            self.index.as_deref(),
        )
        .await
    }

    fn compose(
        &self,
        object: &ModelService,
        children: &Children,
        fetched: Fetched,
    ) -> Observation<State> {
        compose::compose(object, &self.config, children, fetched)
    }

    fn plan(
        &self,
        _object: &ModelService,
        observation: &Observation<State>,
    ) -> Result<PlanResult, PlanError> {
        plan::plan(&observation.state, self.config.recheck_interval)
    }

    fn decorate(
        &self,
        _object: &ModelService,
        observation: &Observation<State>,
        conditions: &mut ConditionSet,
    ) {
        status::decorate(&observation.state, conditions);
    }

    fn finalizer(&self) -> Option<String> {
        Some(FINALIZER.to_owned())
    }

    fn needs_finalizer(&self, object: &ModelService) -> bool {
        resolve::wants_cluster_rbac(&self.config, object)
    }

    /// The cleanup deletes cluster-scoped objects (and at most a Secret, where 404 is success),
    /// which do not go with the namespace: it must run in a terminating namespace too.
    fn finalize_in_terminating_namespace(&self) -> bool {
        true
    }

    async fn finalize(
        &self,
        client: &Client,
        object: &ModelService,
    ) -> Result<(), CategorizedError> {
        crate::finalizer::cleanup(client, object, !self.config.metrics_endpoint_auth).await
    }

    fn adoptable(&self, object: &ModelService, live: &DynamicObject) -> bool {
        adopt::adoptable(object, live)
    }

    fn status(
        &self,
        object: &ModelService,
        observation: &Observation<State>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value {
        status::status(object, &observation.state, status, conditions)
    }
}
