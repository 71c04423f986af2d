//! The ZerfooInferenceService reconciler: the [`Pipeline`] the kinfer engine runs.
//!
//! Steps, one module each: [`fetch`] (the live children), [`compose`] (health per component),
//! [`plan`] (validated spec to children). Applying, orphan deletion, conditions, events,
//! backoff and metrics are the engine's ([`kinfer_state::Engine`]). Status (here) maps the
//! derived status and the live Deployments to the kind's status: `ready`, `replicas` and
//! `readyReplicas` over both tracks, a message, the conditions and `observedGeneration`.

pub mod compose;
pub mod fetch;
pub mod plan;

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::zerfoo::{ZerfooInferenceService, ZerfooInferenceServiceStatus};
use kinfer_builders::naming::NameError;
use kinfer_state::{
    ChildKind, Children, LabelScheme, Observation, OverallStatus, Pipeline, PlanResult,
};
use kube::Client;

use crate::config::OperatorConfig;
use compose::State;
use plan::PlanError;

/// Label domain of the children (`zerfoo.feza.ai/inferenceservice.name`, the paused
/// annotation `zerfoo.feza.ai/reconciliation-paused`).
pub const DOMAIN: &str = "zerfoo.feza.ai";
/// The controller's short name in the parent label.
pub const CONTROLLER: &str = "inferenceservice";
/// The field manager and `app.kubernetes.io/managed-by` value.
pub const MANAGER: &str = "kinfer-zerfoo-operator";

/// The label scheme of this operator.
pub fn label_scheme() -> LabelScheme {
    LabelScheme {
        domain: DOMAIN.to_owned(),
        controller: CONTROLLER.to_owned(),
        manager: MANAGER.to_owned(),
    }
}

/// The ZerfooInferenceService pipeline.
#[derive(Debug, Clone)]
pub struct ZerfooPipeline {
    config: OperatorConfig,
    manager: String,
    routes: bool,
}

impl ZerfooPipeline {
    /// A pipeline with these settings and the standard field manager.
    pub fn new(config: OperatorConfig) -> Self {
        Self {
            config,
            manager: MANAGER.to_owned(),
            routes: true,
        }
    }

    /// Whether the cluster serves Gateway API HTTPRoutes (on by default). Without them the
    /// operator neither lists nor creates routes, and a service that asks for a Gateway gets
    /// `RouteReady=False` (MissingUpstreamDependency) instead of every service failing on a
    /// list of an unknown kind.
    #[must_use]
    pub fn with_routes(mut self, routes: bool) -> Self {
        self.routes = routes;
        self
    }

    /// Whether HTTPRoutes are managed.
    pub fn routes(&self) -> bool {
        self.routes
    }

    /// The settings.
    pub fn config(&self) -> &OperatorConfig {
        &self.config
    }
}

fn replicas(d: Option<&Deployment>, ready: bool) -> i32 {
    d.map_or(0, |d| {
        if ready {
            d.status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0)
        } else {
            d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
        }
    })
}

/// The status written for `object`; pure.
pub fn status_of(
    object: &ZerfooInferenceService,
    state: &State,
    status: OverallStatus,
    conditions: Vec<Condition>,
) -> ZerfooInferenceServiceStatus {
    let ready = status == OverallStatus::Ready;
    let message = if ready {
        "all tracks available".to_owned()
    } else {
        conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| c.message.clone())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| status.to_string())
    };
    let live = [state.primary.as_ref(), state.canary.as_ref()];
    ZerfooInferenceServiceStatus {
        ready,
        replicas: Some(live.iter().map(|d| replicas(*d, false)).sum()),
        ready_replicas: Some(live.iter().map(|d| replicas(*d, true)).sum()),
        message: Some(message),
        observed_generation: object.metadata.generation,
        conditions,
    }
}

/// [`status_of`] as the JSON the engine writes; an error instead of `null` when it does not
/// serialise.
pub fn status_value(
    object: &ZerfooInferenceService,
    state: &State,
    status: OverallStatus,
    conditions: Vec<Condition>,
) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::to_value(status_of(object, state, status, conditions))
}

impl Pipeline for ZerfooPipeline {
    type Object = ZerfooInferenceService;
    type Fetched = Result<fetch::Fetched, NameError>;
    type State = State;
    type PlanError = PlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        let mut kinds = vec![
            ChildKind::of::<Deployment>(),
            ChildKind::of::<Service>(),
            ChildKind::of::<HorizontalPodAutoscaler>(),
        ];
        if self.routes {
            kinds.push(ChildKind::of::<HttpRoute>());
        }
        kinds
    }

    async fn fetch(
        &self,
        _client: &Client,
        object: &ZerfooInferenceService,
        children: &Children,
    ) -> Self::Fetched {
        fetch::fetch(object, children, self.routes)
    }

    fn compose(
        &self,
        object: &ZerfooInferenceService,
        _children: &Children,
        fetched: Self::Fetched,
    ) -> Observation<State> {
        compose::compose(object, fetched, &self.config, self.routes)
    }

    fn plan(
        &self,
        object: &ZerfooInferenceService,
        observation: &Observation<State>,
    ) -> Result<PlanResult, PlanError> {
        plan::plan(object, observation, &self.config, &self.manager)
    }

    fn status(
        &self,
        object: &ZerfooInferenceService,
        observation: &Observation<State>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value {
        status_value(object, &observation.state, status, conditions).unwrap_or_else(|error| {
            // `Pipeline::status` cannot fail, so the error is logged and the stored status is
            // written back unchanged (never `status: null`, which would wipe it).
            tracing::error!(
                name = %object.metadata.name.as_deref().unwrap_or_default(),
                %error,
                "status does not serialise; keeping the stored status"
            );
            serde_json::to_value(&object.status)
                .ok()
                .filter(serde_json::Value::is_object)
                .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()))
        })
    }
}

#[cfg(test)]
mod tests {
    use kinfer_api::zerfoo::{ZerfooInferenceService, ZerfooInferenceServiceSpec};
    use kinfer_state::{Observation, OverallStatus, Pipeline};

    use super::{State, ZerfooPipeline, status_value};
    use crate::config::OperatorConfig;

    fn service() -> ZerfooInferenceService {
        let mut zis = ZerfooInferenceService::new(
            "my-llama",
            ZerfooInferenceServiceSpec {
                model_ref: "m".into(),
                replicas: 1,
                min_replicas: None,
                max_replicas: None,
                resources: None,
                canary: None,
                health_check: None,
                gateway_ref: None,
            },
        );
        zis.metadata.generation = Some(3);
        zis
    }

    #[test]
    fn the_status_is_an_object_never_null() {
        let zis = service();
        let value = status_value(&zis, &State::default(), OverallStatus::Ready, Vec::new())
            .expect("serialises");
        assert!(value.is_object(), "{value}");
        assert_eq!(value["ready"], true);
        assert_eq!(value["observedGeneration"], 3);
        let pipeline = ZerfooPipeline::new(OperatorConfig::default());
        let written = pipeline.status(
            &zis,
            &Observation::new(State::default()),
            OverallStatus::Ready,
            Vec::new(),
        );
        assert_eq!(written, value);
    }
}
