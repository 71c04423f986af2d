//! Status: the engine's derived status and conditions to `ModelServiceStatus`.
//!
//! Contract: pure. One condition per component, no duplicates: the engine writes `Ready`,
//! `ConfigValid`, `AuthValid`, `DependenciesReachable` and `<Component>Ready`; for the
//! components the API documents its own types for (decode, prefill, Endpoint Picker,
//! InferencePool, HTTPRoute: the per-component conditions upstream lacks, NOTES g13), the
//! engine's `<Component>Ready` is left out of the status ([`superseded`]) and only the API's
//! types are written. `MonitoringReady` (an API type that is the engine's name too),
//! `DestinationRuleReady` and `MetricsAuthReady` stay the engine's. [`decorate`] writes the
//! API's documented types
//! ([`condition_types`]): `SpecValid` (False with every violation; True with the warnings, e.g.
//! a user-set accelerator count, as message and reason `SpecValidWithWarnings`),
//! `DecodeAvailable` / `PrefillAvailable` / `EndpointPickerAvailable` with upstream's reasons
//! and ready counts, `InferencePoolAccepted` / `InferencePoolResolvedRefs` from the pool's
//! `status.parents`, and `HTTPRouteAccepted`. The phase: `Failed` for an invalid spec or a
//! failed component, `Pending` until the decode Deployment exists, `Ready` when every component
//! is, `Running` otherwise.

use std::borrow::Cow;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::modelservice::{
    ModelService, ModelServicePhase, ModelServiceStatus, condition_reasons, condition_types,
};
use kinfer_state::OverallStatus;
use kinfer_state::condition::{ConditionSet, ConditionStatus, ConditionType, Reason};
use serde_json::Value;

use super::State;

fn set(
    conditions: &mut ConditionSet,
    type_: &'static str,
    ok: bool,
    reason: impl Into<Cow<'static, str>>,
    message: impl Into<String>,
) {
    conditions.set(
        &ConditionType::Domain(Cow::Borrowed(type_)),
        ConditionStatus::from_bool(ok),
        &Reason::custom(reason),
        message,
    );
}

/// `(ready, desired)` of a Deployment.
pub fn counts(d: &Deployment) -> (i32, i32) {
    let desired = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let ready = d
        .status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0);
    (ready, desired)
}

fn available(conditions: &mut ConditionSet, type_: &'static str, d: Option<&Deployment>) {
    let Some(d) = d else {
        set(
            conditions,
            type_,
            false,
            condition_reasons::DEPLOYMENT_NOT_FOUND,
            "the Deployment does not exist yet",
        );
        return;
    };
    let (ready, desired) = counts(d);
    let message = format!("{ready}/{desired} replicas ready");
    if ready >= desired {
        set(
            conditions,
            type_,
            true,
            condition_reasons::ALL_REPLICAS_READY,
            message,
        );
    } else if ready == 0 {
        set(
            conditions,
            type_,
            false,
            condition_reasons::PODS_STARTING,
            message,
        );
    } else {
        set(
            conditions,
            type_,
            false,
            condition_reasons::PARTIALLY_READY,
            message,
        );
    }
}

/// `(ok, reason, message)` of a Gateway-API parent condition over every parent.
fn parents(object: Option<&Value>, type_: &str, no_parent: &'static str) -> (bool, String, String) {
    let list = object
        .and_then(|o| o["status"]["parents"].as_array())
        .cloned()
        .unwrap_or_default();
    if list.is_empty() {
        return (
            false,
            no_parent.to_owned(),
            "no parent Gateway has reported status".to_owned(),
        );
    }
    for p in &list {
        let parent = p["parentRef"]["name"].as_str().unwrap_or("parent");
        let found = p["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == type_));
        match found {
            Some(c) if c["status"] == "True" => {}
            Some(c) => {
                return (
                    false,
                    c["reason"].as_str().unwrap_or("NotAccepted").to_owned(),
                    format!("{parent}: {}", c["message"].as_str().unwrap_or_default()),
                );
            }
            None => {
                return (
                    false,
                    "Pending".to_owned(),
                    format!("{parent}: no {type_} condition yet"),
                );
            }
        }
    }
    (true, type_.to_owned(), String::new())
}

/// Adds the API's condition types; see the module contract.
pub fn decorate(state: &State, conditions: &mut ConditionSet) {
    match &state.invalid {
        Some(message) => set(
            conditions,
            condition_types::SPEC_VALID,
            false,
            condition_reasons::INVALID_SPEC,
            message.clone(),
        ),
        None if state.warnings.is_empty() => {
            set(
                conditions,
                condition_types::SPEC_VALID,
                true,
                "SpecValid",
                "",
            );
        }
        None => set(
            conditions,
            condition_types::SPEC_VALID,
            true,
            "SpecValidWithWarnings",
            state.warnings.join("; "),
        ),
    }
    if state.desired.is_none() {
        return;
    }
    available(
        conditions,
        condition_types::DECODE_AVAILABLE,
        state.decode.as_ref(),
    );
    if state.prefill_wanted {
        available(
            conditions,
            condition_types::PREFILL_AVAILABLE,
            state.prefill.as_ref(),
        );
    }
    available(
        conditions,
        condition_types::ENDPOINT_PICKER_AVAILABLE,
        state.epp.as_ref(),
    );
    if state.crds.inference_pool {
        let no_parent = if state.route_wanted {
            "NotYetAccepted"
        } else {
            "NoParentGateway"
        };
        for (type_, parent_type) in [
            (condition_types::INFERENCE_POOL_ACCEPTED, "Accepted"),
            (
                condition_types::INFERENCE_POOL_RESOLVED_REFS,
                "ResolvedRefs",
            ),
        ] {
            let (ok, reason, message) = parents(state.pool.as_ref(), parent_type, no_parent);
            set(conditions, type_, ok, reason, message);
        }
    }
    if state.route_wanted && state.crds.gateway_api {
        let (ok, reason, message) = parents(state.route.as_ref(), "Accepted", "NotYetAccepted");
        set(
            conditions,
            condition_types::HTTP_ROUTE_ACCEPTED,
            ok,
            reason,
            message,
        );
    }
}

/// The phase of `status`; see the module contract.
pub fn phase(state: &State, status: OverallStatus) -> ModelServicePhase {
    match status {
        OverallStatus::Failed | OverallStatus::NotAvailable => ModelServicePhase::Failed,
        OverallStatus::Ready => ModelServicePhase::Ready,
        _ if state.decode.is_none() => ModelServicePhase::Pending,
        _ => ModelServicePhase::Running,
    }
}

/// The engine's `<Component>Ready` types that the API's own condition types replace.
pub const SUPERSEDED: [&str; 5] = [
    "DecodeReady",
    "PrefillReady",
    "EndpointPickerReady",
    "InferencePoolReady",
    "HTTPRouteReady",
];

/// Whether the engine's condition `type_` is replaced by the API's; see the module contract.
pub fn superseded(type_: &str) -> bool {
    SUPERSEDED.contains(&type_)
}

/// The status to write.
pub fn status(
    ms: &ModelService,
    state: &State,
    status: OverallStatus,
    mut conditions: Vec<Condition>,
) -> Value {
    conditions.retain(|c| !superseded(&c.type_));
    let decode = state.decode.as_ref().map(counts);
    let prefill = state.prefill.as_ref().map(counts);
    let epp = state.epp.as_ref().map(counts);
    let s = ModelServiceStatus {
        observed_generation: ms.metadata.generation,
        phase: Some(phase(state, status)),
        decode_ready: decode.map(|c| c.0),
        decode_replicas: decode.map(|c| c.1),
        prefill_ready: prefill.map(|c| c.0),
        prefill_replicas: prefill.map(|c| c.1),
        epp_ready: epp.map(|c| c.0),
        epp_replicas: epp.map(|c| c.1),
        conditions,
    };
    serde_json::to_value(s).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconciler::compose::components;

    #[test]
    fn superseded_types_are_the_engines_names_of_components_with_api_conditions() {
        for c in [
            components::DECODE,
            components::PREFILL,
            components::EPP,
            components::POOL,
            components::ROUTE,
        ] {
            assert!(superseded(&format!("{c}Ready")), "{c}");
        }
        for kept in [
            condition_types::READY,
            condition_types::MONITORING_READY,
            "DestinationRuleReady",
            "MetricsAuthReady",
            condition_types::DECODE_AVAILABLE,
        ] {
            assert!(!superseded(kept), "{kept}");
        }
        assert_eq!(
            format!("{}Ready", components::MONITORING),
            condition_types::MONITORING_READY
        );
    }
}
