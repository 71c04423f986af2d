//! Compose: what was fetched, as an observation.
//!
//! Contract: one [`ComponentHealth`] per condition the status carries, in this order:
//! `Primary`, `Canary`, `Autoscaling`, `Route` (giving `PrimaryReady`, `CanaryReady`,
//! `AutoscalingReady`, `RouteReady`). A part the spec does not ask for (no canary, no
//! autoscaling, no gateway) is Ready with reason `NotConfigured` (one autoscaling bound alone
//! says so in its message: the spec's warning); a Gateway on a cluster
//! without HTTPRoutes is a missing upstream dependency of the route alone (a downstream
//! component, so the tracks and Services are still applied, and no route is planned). The
//! [`State`] keeps the live objects plan and status need. No client, no clock.

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use kinfer_api::zerfoo::{Validate as _, ZerfooInferenceService};
use kinfer_builders::gateway::GatewayRef;
use kinfer_builders::naming::NameError;
use kinfer_state::{
    CategorizedError, ComponentHealth, ComponentState, ErrorCategory, Observation, Reason,
    downstream, inspect,
};

use super::fetch::Fetched;
use crate::config::OperatorConfig;
use crate::names::Names;

/// What plan and status read.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// The children's names (`None` when they cannot be derived; a component carries why).
    pub names: Option<Names>,
    /// The live primary Deployment.
    pub primary: Option<Deployment>,
    /// The live canary Deployment.
    pub canary: Option<Deployment>,
    /// The live HPA.
    pub hpa: Option<HorizontalPodAutoscaler>,
    /// The Gateway the route attaches to, when a route is to be applied (a Gateway is
    /// configured and the cluster serves HTTPRoutes).
    pub gateway: Option<GatewayRef>,
}

/// The Gateway a service's route attaches to: `spec.gatewayRef`, else the operator default.
pub fn gateway(object: &ZerfooInferenceService, config: &OperatorConfig) -> Option<GatewayRef> {
    object
        .spec
        .gateway_ref
        .as_ref()
        .map(|g| GatewayRef {
            name: g.name.clone(),
            namespace: g.namespace.clone(),
            section_name: g.section_name.clone(),
        })
        .or_else(|| config.default_gateway.clone())
}

fn not_configured(component: &'static str, message: &str) -> ComponentHealth {
    ComponentHealth::with_state(
        component,
        ComponentState::Ready,
        Reason::custom("NotConfigured"),
        message,
    )
    .downstream()
}

/// HPA health: the kinfer-state inspector, except that an HPA whose controller has reported
/// replicas but no conditions yet counts as Ready (not as awaiting metrics).
///
/// Why it stays local: for this operator the HPA is an optional scaler of a Deployment that
/// serves on its own; `AutoscalingReady` must not hold `Ready` back while the HPA controller
/// has scaled (it wrote `currentReplicas`) but not yet written conditions, which happens on
/// clusters whose HPA controller sets conditions only after the first metrics arrive, and on
/// the test cluster's simulator, which writes `currentReplicas` only. Other operators whose
/// HPA readiness gates something else should keep kinfer-state's stricter reading, so the
/// exception is not pushed into `kinfer_state::inspect::hpa`. Once the HPA reports
/// conditions, the inspector decides (ScalingActive=False, for example, is then Degraded).
fn hpa_health(hpa: &HorizontalPodAutoscaler) -> ComponentHealth {
    let status = hpa.status.as_ref();
    let has_conditions =
        status.is_some_and(|s| s.conditions.as_ref().is_some_and(|c| !c.is_empty()));
    match status.and_then(|s| s.current_replicas) {
        Some(current) if !has_conditions => ComponentHealth::with_state(
            "HorizontalPodAutoscaler",
            ComponentState::Ready,
            Reason::custom("Scaling"),
            format!("{current} current replicas"),
        ),
        _ => inspect::hpa(hpa),
    }
}

fn value<T>(result: &Result<Option<T>, CategorizedError>) -> Option<T>
where
    T: Clone,
{
    result.as_ref().ok().cloned().flatten()
}

/// Route health from the Gateway API inspector; a route that does not serialise is an error,
/// not an inspection of `null`.
fn route_health(route: &HttpRoute) -> ComponentHealth {
    match serde_json::to_value(route) {
        Ok(value) => inspect::http_route(&value),
        Err(e) => ComponentHealth::new("Route").error(CategorizedError::new(
            ErrorCategory::Infrastructure,
            format!("the live HTTPRoute does not serialise: {e}"),
        )),
    }
}

/// The observation of one service; see the module contract.
pub fn compose(
    object: &ZerfooInferenceService,
    fetched: Result<Fetched, NameError>,
    config: &OperatorConfig,
    routes: bool,
) -> Observation<State> {
    let gateway = gateway(object, config);
    let fetched =
        match fetched {
            Ok(f) => f,
            Err(e) => {
                let mut obs = Observation::new(State {
                    gateway,
                    ..State::default()
                });
                obs.components
                    .push(ComponentHealth::new("Primary").downstream().error(
                        CategorizedError::new(
                            ErrorCategory::InvalidSpec,
                            format!("metadata.name: cannot derive child names: {e}"),
                        ),
                    ));
                return obs;
            }
        };
    let spec = &object.spec;
    let mut components = vec![downstream("Primary", &fetched.primary, inspect::deployment)];
    components.push(if spec.canary.is_some() {
        downstream("Canary", &fetched.canary, inspect::deployment)
    } else {
        not_configured("Canary", "no canary configured")
    });
    components.push(if spec.autoscaling().is_some() {
        downstream("Autoscaling", &fetched.hpa, hpa_health)
    } else {
        // One bound alone is accepted, as upstream accepts it, and said here (the spec's
        // warning): the user asked for a bound.
        match spec.warnings().first() {
            Some(warning) => not_configured("Autoscaling", &warning.to_string()),
            None => not_configured("Autoscaling", "autoscaling not configured"),
        }
    });
    components.push(if gateway.is_some() && !routes {
        // Downstream: the route is ours to create, so its missing kind degrades only the
        // route; the tracks and Services are still applied and serve.
        ComponentHealth::new("Route")
            .downstream()
            .error(CategorizedError::new(
                ErrorCategory::MissingUpstreamDependency,
                "a Gateway is configured but the cluster does not serve Gateway API HTTPRoutes \
             (install the Gateway API CRDs; the operator picks them up without a restart)",
            ))
    } else if gateway.is_some() {
        downstream("Route", &fetched.route, route_health)
    } else {
        not_configured(
            "Route",
            "no gateway configured; traffic splits by replica count through the Service",
        )
    });
    let primary = value(&fetched.primary);
    let state = State {
        primary,
        canary: value(&fetched.canary),
        hpa: value(&fetched.hpa),
        names: Some(fetched.names),
        gateway: gateway.filter(|_| routes),
    };
    let mut obs = Observation::new(state);
    obs.components = components;
    obs
}
