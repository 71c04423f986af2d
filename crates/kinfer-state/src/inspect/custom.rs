//! HTTPRoute, InferencePool and KServe InferenceService health from their JSON status.

use serde_json::Value;

use super::health;
use crate::category::{CategorizedError, ErrorCategory};
use crate::condition::Reason;
use crate::health::{ComponentHealth, ComponentState};

/// `(status, reason, message)` of the condition `type_` in a conditions array.
fn condition<'a>(conditions: &'a Value, type_: &str) -> Option<(&'a str, &'a str, &'a str)> {
    conditions
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or("Unknown"),
                c["reason"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or(""),
            )
        })
}

/// Shared logic of Gateway-API style parent statuses (`Accepted`, `ResolvedRefs`).
fn parents(component: &'static str, parents: Option<&Vec<Value>>) -> ComponentHealth {
    let parents = parents.map(Vec::as_slice).unwrap_or_default();
    if parents.is_empty() {
        return health(
            component,
            ComponentState::Progressing,
            "NotYetAccepted",
            "no parent has reported status yet",
        );
    }
    for p in parents {
        let conds = &p["conditions"];
        let parent = p["parentRef"]["name"].as_str().unwrap_or("parent");
        match condition(conds, "Accepted") {
            Some(("True", _, _)) => {}
            Some(("False", reason, message)) => {
                let reason = if reason.is_empty() {
                    "NotAccepted"
                } else {
                    reason
                };
                let category = if reason == "Pending" {
                    None
                } else {
                    Some(ErrorCategory::InvalidSpec)
                };
                let msg = format!("{parent}: {message}");
                return match category {
                    Some(c) => ComponentHealth::new(component).error(
                        CategorizedError::new(c, msg)
                            .with_reason(Reason::custom(reason.to_owned())),
                    ),
                    None => ComponentHealth::with_state(
                        component,
                        ComponentState::Progressing,
                        Reason::custom(reason.to_owned()),
                        msg,
                    ),
                };
            }
            _ => {
                return health(
                    component,
                    ComponentState::Progressing,
                    "NotYetAccepted",
                    format!("{parent} has not accepted it yet"),
                );
            }
        }
        if let Some(("False", reason, message)) = condition(conds, "ResolvedRefs") {
            let reason = if reason.is_empty() {
                "UnresolvedRefs"
            } else {
                reason
            };
            let msg = format!("{parent}: {message}");
            if matches!(reason, "RefNotPermitted" | "InvalidKind") {
                return ComponentHealth::new(component).error(
                    CategorizedError::new(ErrorCategory::InvalidSpec, msg)
                        .with_reason(Reason::custom(reason.to_owned())),
                );
            }
            return ComponentHealth::with_state(
                component,
                ComponentState::Progressing,
                Reason::custom(reason.to_owned()),
                msg,
            );
        }
    }
    health(component, ComponentState::Ready, "Accepted", "")
}

/// A Gateway API HTTPRoute: Ready when every parent accepted it and resolved its references.
/// A refusal (`NotAllowedByListeners`, `NoMatchingParent`, ...) and `RefNotPermitted` are
/// InvalidSpec; `BackendNotFound` is Progressing (the backend may still be created).
pub fn http_route(route: &Value) -> ComponentHealth {
    parents("HTTPRoute", route["status"]["parents"].as_array())
}

/// An HTTPRoute as AIM Engine reads it: Ready once at least one parent accepted it and resolved
/// its references, the parents that did not named (with their reason) in the message; with no
/// such parent, [`http_route`]'s reading (the first refusal or wait). A route attached to
/// several Gateways serves through the one that took it.
pub fn http_route_any_parent(route: &Value) -> ComponentHealth {
    let list = route["status"]["parents"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let serving = |p: &Value| {
        matches!(
            condition(&p["conditions"], "Accepted"),
            Some(("True", _, _))
        ) && !matches!(
            condition(&p["conditions"], "ResolvedRefs"),
            Some(("False", _, _))
        )
    };
    let name = |p: &Value| {
        p["parentRef"]["name"]
            .as_str()
            .unwrap_or("parent")
            .to_owned()
    };
    let (serving, others): (Vec<&Value>, Vec<&Value>) = list.iter().partition(|p| serving(p));
    if serving.is_empty() {
        return http_route(route);
    }
    let message = if others.is_empty() {
        String::new()
    } else {
        let why = |p: &Value| {
            let conds = &p["conditions"];
            let reason = match (
                condition(conds, "Accepted"),
                condition(conds, "ResolvedRefs"),
            ) {
                (Some(("True", _, _)), Some((_, reason, _))) | (Some((_, reason, _)), _) => reason,
                (None, _) => "",
            };
            let reason = if reason.is_empty() {
                "NotYetAccepted"
            } else {
                reason
            };
            format!("{} ({reason})", name(p))
        };
        format!(
            "accepted by {}; not by {}",
            serving
                .iter()
                .map(|p| name(p))
                .collect::<Vec<_>>()
                .join(", "),
            others.iter().map(|p| why(p)).collect::<Vec<_>>().join(", ")
        )
    };
    health("HTTPRoute", ComponentState::Ready, "Accepted", message)
}

/// A Gateway API Inference Extension InferencePool (`v1` `status.parents`, `v1alpha2`
/// `status.parent`): same rules as [`http_route`].
pub fn inference_pool(pool: &Value) -> ComponentHealth {
    let st = &pool["status"];
    let list = st["parents"].as_array().or_else(|| st["parent"].as_array());
    parents("InferencePool", list)
}

/// A KServe InferenceService: `Ready=True` is Ready. `ServerlessModeRejected` is InvalidSpec
/// (configure RawDeployment); a `modelStatus.lastFailureInfo` is Degraded with its reason;
/// otherwise the first false condition explains Progressing.
pub fn inference_service(isvc: &Value) -> ComponentHealth {
    let st = &isvc["status"];
    let conds = &st["conditions"];
    if let Some(("True", _, _)) = condition(conds, "Ready") {
        return health(
            "InferenceService",
            ComponentState::Ready,
            "InferenceServiceReady",
            "",
        );
    }
    let all = conds.as_array().map(Vec::as_slice).unwrap_or_default();
    if let Some(c) = all.iter().find(|c| c["reason"] == "ServerlessModeRejected") {
        let msg = format!(
            "{} (configure KServe to use RawDeployment mode)",
            c["message"].as_str().unwrap_or("serverless mode rejected")
        );
        return ComponentHealth::new("InferenceService").error(
            CategorizedError::new(ErrorCategory::InvalidSpec, msg)
                .with_reason(Reason::custom("ServerlessModeRejected")),
        );
    }
    let failure = &st["modelStatus"]["lastFailureInfo"];
    if let Some(reason) = failure["reason"].as_str() {
        let message = failure["message"].as_str().unwrap_or("").to_owned();
        return ComponentHealth::with_state(
            "InferenceService",
            ComponentState::Degraded,
            Reason::custom(reason.to_owned()),
            message,
        );
    }
    if let Some(c) = all
        .iter()
        .find(|c| c["status"] == "False" && c["type"] != "Ready")
    {
        let reason = c["reason"].as_str().filter(|r| !r.is_empty()).map_or_else(
            || format!("{}NotReady", c["type"].as_str().unwrap_or("Component")),
            str::to_owned,
        );
        let message = c["message"].as_str().unwrap_or("").to_owned();
        return ComponentHealth::with_state(
            "InferenceService",
            ComponentState::Progressing,
            Reason::custom(reason),
            message,
        );
    }
    health(
        "InferenceService",
        ComponentState::Progressing,
        "InferenceServiceNotReady",
        "waiting for KServe",
    )
}
