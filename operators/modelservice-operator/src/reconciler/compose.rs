//! Compose: validation, the desired objects, and one health per component.
//!
//! Contract: pure (no client, no clock). The spec is validated ([`Validate`]); a valid spec is
//! resolved and built into the desired objects (kept in [`State`] for plan); each component is
//! judged from the listed children: `Decode`, `Prefill`, `EndpointPicker`, `InferencePool`,
//! `HTTPRoute`, `Monitoring`, `DestinationRule` (provider istio) and `MetricsAuth` (only on a
//! cluster RBAC name clash or read error). The cluster RBAC is desired only while the object
//! carries the finalizer and wants it ([`resolve::wants_cluster_rbac`]). A component whose CRD is missing is `Degraded` with reason
//! `CRDNotInstalled` and **no error**, so the engine still applies everything else.

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::apps::v1::Deployment;
use kinfer_api::inference_pool::InferencePool;
use kinfer_api::istio::DestinationRule;
use kinfer_api::modelservice::{ModelService, Validate};
use kinfer_api::monitoring::PodMonitor;
use kinfer_state::condition::Reason;
use kinfer_state::health::{ComponentHealth, ComponentState, FetchResult};
use kinfer_state::pipeline::{Children, Observation};
use kinfer_state::{CategorizedError, ErrorCategory, downstream, inspect};
use kube::ResourceExt;
use serde_json::Value;

use super::build::{self, Desired};
use super::fetch::{self, ClusterRbacOwner, Fetched};
use super::resolve;
use crate::config::{OperatorConfig, Provider};
use crate::optional_crds::OptionalCrds;

/// What compose learnt, for plan, decorate and status.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// The optional CRDs of this reconcile.
    pub crds: OptionalCrds,
    /// Why the spec cannot be reconciled (every violation with its field path).
    pub invalid: Option<String>,
    /// Accepted values that are probably not what the user meant.
    pub warnings: Vec<String>,
    /// The objects to own (valid specs only).
    pub desired: Option<Desired>,
    /// The live decode Deployment.
    pub decode: Option<Deployment>,
    /// The live prefill Deployment, when `spec.prefill` is set.
    pub prefill: Option<Deployment>,
    /// Whether `spec.prefill` is set.
    pub prefill_wanted: bool,
    /// The live Endpoint Picker Deployment.
    pub epp: Option<Deployment>,
    /// The live InferencePool, as JSON.
    pub pool: Option<Value>,
    /// The live HTTPRoute, as JSON.
    pub route: Option<Value>,
    /// A route is wanted (spec or default Gateway).
    pub route_wanted: bool,
    /// What an earlier operator left that the plan deletes first ([`super::legacy`]).
    pub retire: Vec<kinfer_state::pipeline::Retire>,
}

/// The component names: the engine writes `<name>Ready`, except for the components whose API
/// condition types replace it ([`super::status::SUPERSEDED`]).
pub mod components {
    /// The decode Deployment.
    pub const DECODE: &str = "Decode";
    /// The prefill Deployment.
    pub const PREFILL: &str = "Prefill";
    /// The Endpoint Picker Deployment.
    pub const EPP: &str = "EndpointPicker";
    /// The InferencePool.
    pub const POOL: &str = "InferencePool";
    /// The HTTPRoute.
    pub const ROUTE: &str = "HTTPRoute";
    /// PodMonitors and the EPP ServiceMonitor.
    pub const MONITORING: &str = "Monitoring";
    /// The Istio DestinationRule.
    pub const DESTINATION_RULE: &str = "DestinationRule";
    /// The metrics-auth cluster RBAC (reported only when its name is taken).
    pub const METRICS_AUTH: &str = "MetricsAuth";
}

/// The reason of `MetricsAuthReady` False when another ModelService holds the cluster RBAC
/// name.
pub const CLUSTER_RBAC_CONFLICT: &str = "ClusterRBACConflict";
/// The engine's condition of the [`components::METRICS_AUTH`] component.
pub const METRICS_AUTH_CONDITION: &str = "MetricsAuthReady";

fn crd_missing(component: &'static str, crds: &str) -> ComponentHealth {
    ComponentHealth::with_state(
        component,
        ComponentState::Degraded,
        Reason::custom("CRDNotInstalled"),
        format!("{crds} not installed; {component} is skipped, everything else is applied"),
    )
    .downstream()
}

fn ready(component: &'static str, reason: &'static str, message: &str) -> ComponentHealth {
    ComponentHealth::with_state(
        component,
        ComponentState::Ready,
        Reason::custom(reason),
        message,
    )
    .downstream()
}

fn live<K>(result: &FetchResult<K, CategorizedError>) -> Option<K>
where
    K: Clone,
{
    result.as_ref().ok().and_then(Clone::clone)
}

/// Compose; see the module contract.
#[allow(clippy::needless_pass_by_value)] // the pipeline hands over what fetch returned
pub fn compose(
    ms: &ModelService,
    config: &OperatorConfig,
    children: &Children,
    fetched: Fetched,
) -> Observation<State> {
    let crds = fetched.crds;
    let mut state = State {
        crds,
        warnings: ms.warnings().iter().map(ToString::to_string).collect(),
        prefill_wanted: ms.spec.prefill.is_some(),
        ..State::default()
    };
    let mut components = Vec::new();
    if let Err(errors) = ms.validate() {
        state.invalid = Some(errors.to_string());
        return Observation {
            state,
            ..Observation::new(State::default())
        };
    }
    let ns = ms.namespace();
    let ns = ns.as_deref();

    // The cluster RBAC name is upstream's, ambiguous across namespaces: a binding whose parent
    // labels name another ModelService (or that binds another Endpoint Picker) is left alone.
    let mut conflict = false;
    match &fetched.cluster_binding {
        Some(Ok(Some(binding)))
            if fetch::cluster_rbac_owner(binding, ms) == ClusterRbacOwner::Other =>
        {
            conflict = true;
            components.push(
                ComponentHealth::with_state(
                    components::METRICS_AUTH,
                    ComponentState::Degraded,
                    Reason::custom(CLUSTER_RBAC_CONFLICT),
                    format!(
                        "ClusterRoleBinding {} belongs to another ModelService; it is left alone and this Endpoint Picker's metrics need their own RBAC",
                        binding.name_any()
                    ),
                )
                .downstream(),
            );
        }
        Some(Err(e)) => components.push(
            ComponentHealth::new(components::METRICS_AUTH)
                .downstream()
                .error(kinfer_state::categorized_kube_error(
                    e,
                    kinfer_state::Direction::Downstream,
                )),
        ),
        _ => {}
    }
    // Cluster RBAC is applied only while the finalizer that removes it is on the object (the
    // engine adds it first, so a new ModelService gets its cluster RBAC one reconcile later).
    let cluster_rbac =
        !conflict && resolve::wants_cluster_rbac(config, ms) && crate::finalizer::has_finalizer(ms);
    // What is replaced goes first; a binding whose old role could not be read is held back.
    let retirements =
        super::legacy::retirements(ms, fetched.live_binding(), &fetched.legacy, cluster_rbac);
    if let Some(waiting) = &retirements.waiting {
        components.push(
            ComponentHealth::new(components::METRICS_AUTH)
                .downstream()
                .error(CategorizedError::new(
                    ErrorCategory::Infrastructure,
                    waiting.clone(),
                )),
        );
    }
    let cluster_rbac = cluster_rbac && retirements.waiting.is_none();
    state.retire = retirements.retire;

    let resolved = match resolve::resolve(ms, config, crds) {
        Ok(r) => r,
        Err(e) => {
            state.invalid = Some(e.to_string());
            return Observation {
                state,
                ..Observation::new(State::default())
            };
        }
    };
    let desired = match build::build(&resolved, cluster_rbac) {
        Ok(d) => d,
        Err(e) => {
            state.invalid = Some(e.to_string());
            return Observation {
                state,
                ..Observation::new(State::default())
            };
        }
    };
    state.warnings.extend(desired.warnings.iter().cloned());
    let names = desired.names.clone();

    let decode = children.fetch::<Deployment>(ns, &names.decode);
    components.push(downstream(components::DECODE, &decode, inspect::deployment));
    state.decode = live(&decode);
    if let Some(prefill_name) = &names.prefill {
        let prefill = children.fetch::<Deployment>(ns, prefill_name);
        components.push(downstream(
            components::PREFILL,
            &prefill,
            inspect::deployment,
        ));
        state.prefill = live(&prefill);
    }
    let epp = children.fetch::<Deployment>(ns, &names.epp);
    components.push(downstream(components::EPP, &epp, inspect::deployment));
    state.epp = live(&epp);

    state.route_wanted = resolved.route_wanted;
    if crds.inference_pool {
        let pool = children.fetch::<InferencePool>(ns, &names.pool);
        state.pool = live(&pool).and_then(|p| serde_json::to_value(p).ok());
        let has_parents = state.pool.as_ref().is_some_and(|p| {
            p["status"]["parents"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        });
        components.push(downstream(components::POOL, &pool, |p| {
            if resolved.route.is_some() || has_parents {
                inspect::inference_pool(&serde_json::to_value(p).unwrap_or_default())
            } else {
                ready(
                    components::POOL,
                    "NoParentGateway",
                    "no HTTPRoute of this ModelService attaches the pool to a Gateway",
                )
            }
        }));
    } else {
        components.push(crd_missing(
            components::POOL,
            crate::optional_crds::INFERENCE_POOL_CRD,
        ));
    }
    if resolved.route_wanted {
        if crds.gateway_api {
            let route = children.fetch::<HttpRoute>(ns, &names.pool);
            state.route = live(&route).and_then(|r| serde_json::to_value(r).ok());
            components.push(downstream(components::ROUTE, &route, |r| {
                inspect::http_route(&serde_json::to_value(r).unwrap_or_default())
            }));
        } else {
            components.push(crd_missing(
                components::ROUTE,
                crate::optional_crds::HTTP_ROUTE_CRD,
            ));
        }
    }
    if resolved.monitoring.is_some() {
        if crds.monitoring {
            let monitor = children.fetch::<PodMonitor>(ns, &names.decode);
            components.push(downstream(components::MONITORING, &monitor, |_| {
                ready(components::MONITORING, "MonitorsCreated", "")
            }));
        } else {
            components.push(crd_missing(
                components::MONITORING,
                crds.missing_monitoring(),
            ));
        }
    }
    if config.provider == Provider::Istio {
        if crds.istio {
            let dr = children.fetch::<DestinationRule>(ns, &names.epp);
            components.push(downstream(components::DESTINATION_RULE, &dr, |_| {
                ready(components::DESTINATION_RULE, "DestinationRuleCreated", "")
            }));
        } else {
            components.push(crd_missing(
                components::DESTINATION_RULE,
                crate::optional_crds::DESTINATION_RULE_CRD,
            ));
        }
    }
    state.desired = Some(desired);
    let mut observation = Observation::new(state);
    observation.components = components;
    observation
}
