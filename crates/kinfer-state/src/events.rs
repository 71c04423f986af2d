//! Kubernetes Events for condition transitions, through kube's event recorder.
//!
//! Contract: events are emitted only for transitions that matter to a person reading
//! `kubectl describe` ([`should_emit`]):
//! - any condition moving into or out of an error state (not True with an error reason, see
//!   [`crate::condition::Reason::is_error`]), including an error condition first appearing:
//!   a failure (Warning) and its recovery (Normal, e.g. `Ready` True after an error);
//! - `Ready` lost (True -> not True) for any reason;
//! - never for `<Component>Ready` conditions (the root `Ready` carries the first failing
//!   component's reason), nor for a condition first appearing True.
//!
//! A new object reaching Ready through Pending/Progressing emits nothing (its status says it
//! all, and the event would be one more write per object, against a goal of children + 1);
//! a failure on the way emits its Warning and the recovery its Normal event. Events
//! are emitted only after the status carrying them was written, so a failed status write cannot
//! repeat them, and a condition that stays in an error state emits nothing on later
//! reconciles (the engine logs and counts it). Event reason = condition reason; note =
//! `"<Type> <Status>: <message>"` cut to 1 KiB; type Warning when the new state is an error,
//! else Normal. Publishing failures are logged, never fail the reconcile.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use crate::condition::{ConditionStatus, ConditionType, Transition};

/// Whether `t` gets an event; see the module contract.
pub fn should_emit(t: &Transition) -> bool {
    if matches!(t.type_, ConditionType::ComponentReady(_)) {
        return false;
    }
    if t.is_error() != t.was_error() {
        return true;
    }
    let lost = t
        .from
        .as_ref()
        .is_some_and(|(s, _)| *s == ConditionStatus::True && t.status != ConditionStatus::True);
    t.type_ == ConditionType::Ready && lost
}

/// The event an engine would publish for `t`.
pub fn event_for(t: &Transition) -> Event {
    let warning = t.is_error();
    let mut note = format!("{} {}: {}", t.type_, t.status, t.message);
    if note.len() > 1024 {
        let mut cut = 1024;
        while !note.is_char_boundary(cut) {
            cut -= 1;
        }
        note.truncate(cut);
    }
    Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: t.reason.to_string(),
        note: Some(note),
        action: "Reconcile".to_owned(),
        secondary: None,
    }
}

/// Publishes transition events for one controller.
#[derive(Clone)]
pub struct Events {
    recorder: Recorder,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").finish_non_exhaustive()
    }
}

impl Events {
    /// A publisher reporting as `controller` (the field manager name) from `instance` (the
    /// pod name, which the binary reads from its environment).
    pub fn new(client: Client, controller: &str, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: controller.to_owned(),
            instance,
        };
        Self {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Publish one event per transition that [`should_emit`]; returns how many were published.
    pub async fn publish(&self, regarding: &ObjectReference, transitions: &[Transition]) -> usize {
        let mut published = 0;
        for t in transitions.iter().filter(|t| should_emit(t)) {
            let ev = event_for(t);
            match self.recorder.publish(&ev, regarding).await {
                Ok(()) => published += 1,
                Err(e) => tracing::warn!(error = %e, reason = %t.reason, "publishing event failed"),
            }
        }
        published
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::condition::{ConditionStatus, Reason};

    fn t(
        type_: ConditionType,
        from: Option<(ConditionStatus, Reason)>,
        status: ConditionStatus,
        reason: Reason,
    ) -> Transition {
        Transition {
            type_,
            from,
            status,
            reason,
            message: "m".into(),
        }
    }

    #[test]
    fn event_types_and_notes() {
        let ready = |s, r| t(ConditionType::Ready, None, s, r);
        assert_eq!(
            event_for(&ready(ConditionStatus::True, Reason::AllComponentsReady)).type_,
            EventType::Normal
        );
        assert_eq!(
            event_for(&ready(ConditionStatus::False, Reason::Progressing)).type_,
            EventType::Normal
        );
        assert_eq!(
            event_for(&ready(ConditionStatus::False, Reason::InvalidSpec)).type_,
            EventType::Warning
        );
        let e = event_for(&ready(ConditionStatus::False, Reason::AuthError));
        assert_eq!(e.reason, "AuthError");
        assert_eq!(e.note.as_deref(), Some("Ready False: m"));
        let mut long = ready(ConditionStatus::False, Reason::Failed);
        long.message = "é".repeat(1000);
        assert!(event_for(&long).note.unwrap_or_default().len() <= 1024);
    }

    #[test]
    fn which_transitions_emit() {
        use ConditionStatus::{False, True};
        let ready = ConditionType::Ready;
        let comp = ConditionType::component("Model");
        let cases = [
            // A new object: conditions first appear True, or False while progressing.
            (t(ready.clone(), None, False, Reason::Progressing), false),
            (
                t(
                    ConditionType::ConfigValid,
                    None,
                    True,
                    Reason::ConfigurationValid,
                ),
                false,
            ),
            (
                t(ready.clone(), None, True, Reason::AllComponentsReady),
                false,
            ),
            // Ready reached on the way up is quiet; reached after an error, and lost, are not.
            (
                t(
                    ready.clone(),
                    Some((False, Reason::Progressing)),
                    True,
                    Reason::AllComponentsReady,
                ),
                false,
            ),
            (
                t(
                    ready.clone(),
                    Some((False, Reason::InfrastructureError)),
                    True,
                    Reason::AllComponentsReady,
                ),
                true,
            ),
            (
                t(
                    ready.clone(),
                    Some((True, Reason::AllComponentsReady)),
                    False,
                    Reason::Progressing,
                ),
                true,
            ),
            // Into and out of errors.
            (
                t(
                    ready.clone(),
                    Some((False, Reason::Progressing)),
                    False,
                    Reason::custom("CrashLoopBackOff"),
                ),
                true,
            ),
            (
                t(
                    ready.clone(),
                    Some((False, Reason::AuthError)),
                    False,
                    Reason::Progressing,
                ),
                true,
            ),
            (
                t(ConditionType::AuthValid, None, False, Reason::AuthError),
                true,
            ),
            (
                t(
                    ConditionType::DependenciesReachable,
                    Some((True, Reason::Reachable)),
                    False,
                    Reason::InfrastructureError,
                ),
                true,
            ),
            // Reason changes between non-errors, and between errors, are quiet.
            (
                t(
                    ready.clone(),
                    Some((False, Reason::Pending)),
                    False,
                    Reason::Progressing,
                ),
                false,
            ),
            (
                t(
                    ready,
                    Some((False, Reason::AuthError)),
                    False,
                    Reason::InvalidSpec,
                ),
                false,
            ),
            // Component conditions never emit.
            (t(comp.clone(), None, False, Reason::AuthError), false),
            (
                t(
                    comp,
                    Some((False, Reason::Progressing)),
                    True,
                    Reason::ComponentReady,
                ),
                false,
            ),
        ];
        for (i, (tr, want)) in cases.iter().enumerate() {
            assert_eq!(should_emit(tr), *want, "case {i}: {tr:?}");
        }
    }
}
