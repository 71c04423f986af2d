//! What an input's status says about it, for settling and for the exit code.
//!
//! Contract (pure; the rule `docs/cli.md` documents). An operator-written status is judged, in
//! this order:
//! 1. [`Verdict::Retrying`]: the operator will act again by itself after a delay, so render
//!    is not settled while any input says this: a `False` condition whose reason is
//!    `InfrastructureError` (the engine's reason for transient errors, retried with backoff)
//!    or `DiscoveryThrottled` (AIM discovery re-checks for a slot on a timer), or a phase
//!    (`status.status` or `status.phase`) of `Progressing`, `Starting` or `Degraded`.
//! 2. [`Verdict::Offline`]: a condition reason `RegistryOffline`: the input needs a registry,
//!    which render never contacts. Not the input's fault; reported, not an error.
//! 3. [`Verdict::Failed`]: stopped in an error state that needs a change: a phase of `Failed`
//!    or `NotAvailable` ([`kinfer_api::phase::Phase::is_error`]), or `ConfigValid` or
//!    `AuthValid` `False` (kinds without a phase).
//! 4. [`Verdict::Fine`]: anything else (Ready, or waiting for an event such as an edit).
//!
//! The reason and message of the `Ready` condition (else the deciding one) explain the verdict.

use std::str::FromStr;

use kinfer_api::phase::Phase;
use serde_json::Value;

/// The judgement of one input's status; see the module contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing the exit code reports.
    Fine,
    /// Waiting on a timed retry: not settled.
    Retrying(String),
    /// Needs a registry, which render does not contact.
    Offline(String),
    /// In an error state.
    Failed(String),
}

/// Reasons of a `False` condition that mean a timed retry is pending.
const RETRY_REASONS: &[&str] = &["InfrastructureError", "DiscoveryThrottled"];

/// The reason render gives an input it cannot evaluate without a registry.
const OFFLINE_REASON: &str = "RegistryOffline";

fn conditions(object: &Value) -> impl Iterator<Item = &Value> {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
}

fn phase(object: &Value) -> Option<&str> {
    let status = &object["status"];
    status["status"]
        .as_str()
        .or_else(|| status["phase"].as_str())
}

/// `reason: message` of a condition (`Ready` by preference).
fn explain(object: &Value, deciding: Option<&Value>) -> String {
    let ready = conditions(object).find(|c| c["type"] == "Ready" && c["status"] != "True");
    let Some(c) = ready.or(deciding) else {
        return phase(object).map_or_else(String::new, |p| format!("status {p}"));
    };
    let reason = c["reason"].as_str().unwrap_or_default();
    match c["message"].as_str().filter(|m| !m.is_empty()) {
        Some(message) => format!("{reason}: {message}"),
        None => reason.to_owned(),
    }
}

/// Judges `object`'s status; see the module contract.
pub fn judge(object: &Value) -> Verdict {
    let false_with = |reasons: &[&str]| {
        conditions(object)
            .find(|c| c["status"] == "False" && reasons.iter().any(|r| c["reason"] == *r))
    };
    if let Some(c) = false_with(RETRY_REASONS) {
        return Verdict::Retrying(explain(object, Some(c)));
    }
    let phase = phase(object);
    if phase.is_some_and(|p| matches!(p, "Progressing" | "Starting" | "Degraded")) {
        return Verdict::Retrying(explain(object, None));
    }
    if let Some(c) = conditions(object).find(|c| c["reason"] == OFFLINE_REASON) {
        return Verdict::Offline(explain(object, Some(c)));
    }
    if phase
        .and_then(|p| Phase::from_str(p).ok())
        .is_some_and(Phase::is_error)
    {
        return Verdict::Failed(explain(object, None));
    }
    let invalid = conditions(object).find(|c| {
        matches!(c["type"].as_str(), Some("ConfigValid" | "AuthValid")) && c["status"] == "False"
    });
    if let Some(c) = invalid {
        return Verdict::Failed(explain(object, Some(c)));
    }
    Verdict::Fine
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cond(t: &str, s: &str, reason: &str) -> Value {
        json!({ "type": t, "status": s, "reason": reason, "message": format!("{reason} here") })
    }

    #[test]
    fn infrastructure_errors_and_throttling_are_retries() {
        let infra = json!({ "status": { "conditions": [
            cond("Ready", "False", "InfrastructureError"),
            cond("DependenciesReachable", "False", "InfrastructureError") ] } });
        assert_eq!(
            judge(&infra),
            Verdict::Retrying("InfrastructureError: InfrastructureError here".into())
        );
        let throttled = json!({ "status": { "status": "Pending", "conditions": [
            cond("Ready", "False", "Pending"), cond("Discovered", "False", "DiscoveryThrottled") ] } });
        assert!(matches!(judge(&throttled), Verdict::Retrying(_)));
        for phase in ["Progressing", "Starting", "Degraded"] {
            let object = json!({ "status": { "status": phase } });
            assert!(matches!(judge(&object), Verdict::Retrying(_)), "{phase}");
        }
        let ms = json!({ "status": { "phase": "Degraded" } });
        assert!(matches!(judge(&ms), Verdict::Retrying(_)));
    }

    #[test]
    fn error_states_fail_and_offline_is_its_own_verdict() {
        let failed = json!({ "status": { "status": "Failed", "conditions": [
            cond("Ready", "False", "ModelNotFound") ] } });
        assert_eq!(
            judge(&failed),
            Verdict::Failed("ModelNotFound: ModelNotFound here".into())
        );
        let not_available = json!({ "status": { "status": "NotAvailable" } });
        assert_eq!(
            judge(&not_available),
            Verdict::Failed("status NotAvailable".into())
        );
        let zerfoo = json!({ "status": { "ready": false, "conditions": [
            cond("Ready", "False", "InvalidSpec"), cond("ConfigValid", "False", "InvalidSpec") ] } });
        assert!(matches!(judge(&zerfoo), Verdict::Failed(_)));
        let offline = json!({ "status": { "status": "Failed", "conditions": [
            cond("Ready", "False", "RegistryOffline"), cond("ConfigValid", "False", "InvalidSpec") ] } });
        assert!(matches!(judge(&offline), Verdict::Offline(m) if m.starts_with("RegistryOffline")));
    }

    #[test]
    fn ready_waiting_and_statusless_inputs_are_fine() {
        let ready = json!({ "status": { "status": "Running", "conditions": [
            cond("Ready", "True", "AllComponentsReady") ] } });
        assert_eq!(judge(&ready), Verdict::Fine);
        assert_eq!(
            judge(&json!({ "status": { "status": "Pending" } })),
            Verdict::Fine
        );
        assert_eq!(judge(&json!({})), Verdict::Fine);
        assert_eq!(
            judge(&json!({ "status": { "phase": "Ready" } })),
            Verdict::Fine
        );
    }
}
