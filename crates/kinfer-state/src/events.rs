//! Kubernetes Events for condition transitions, through kube's event recorder.
//!
//! Contract: one event per [`Transition`] (a condition whose status or reason changed), emitted
//! only after the status carrying it was written, so a failed status write cannot repeat it. A
//! condition that stays in an error state emits nothing on later reconciles (the engine logs
//! and counts it), which keeps a recurring error from flooding the event stream. Event reason =
//! condition reason; note = `"<Type> <Status>: <message>"` cut to 1 KiB; type Warning when the
//! new status is not True and the reason is an error reason, else Normal. Publishing failures
//! are logged, never fail the reconcile.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use crate::condition::{ConditionStatus, Transition};

/// Reasons that make a non-True transition a Warning.
const ERROR_REASONS: [&str; 8] = [
    "InvalidSpec",
    "ReferenceNotFound",
    "AuthError",
    "InfrastructureError",
    "ResourceExhausted",
    "Degraded",
    "Failed",
    "NotAvailable",
];

/// The event an engine would publish for `t`.
pub fn event_for(t: &Transition) -> Event {
    let warning = t.status != ConditionStatus::True && ERROR_REASONS.contains(&t.reason.as_str());
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
        reason: t.reason.clone(),
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
    /// A publisher reporting as `controller` (the field manager name).
    pub fn new(client: Client, controller: &str) -> Self {
        let reporter = Reporter {
            controller: controller.to_owned(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Publish one event per transition; returns how many were published.
    pub async fn publish(&self, regarding: &ObjectReference, transitions: &[Transition]) -> usize {
        let mut published = 0;
        for t in transitions {
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

    fn t(status: ConditionStatus, reason: &str) -> Transition {
        Transition {
            type_: "Ready".into(),
            from: None,
            status,
            reason: reason.into(),
            message: "m".into(),
        }
    }

    #[test]
    fn event_types_and_notes() {
        assert_eq!(
            event_for(&t(ConditionStatus::True, "AllComponentsReady")).type_,
            EventType::Normal
        );
        assert_eq!(
            event_for(&t(ConditionStatus::False, "Progressing")).type_,
            EventType::Normal
        );
        assert_eq!(
            event_for(&t(ConditionStatus::False, "InvalidSpec")).type_,
            EventType::Warning
        );
        let e = event_for(&t(ConditionStatus::False, "AuthError"));
        assert_eq!(e.reason, "AuthError");
        assert_eq!(e.note.as_deref(), Some("Ready False: m"));
        let mut long = t(ConditionStatus::False, "Failed");
        long.message = "é".repeat(1000);
        assert!(event_for(&long).note.unwrap().len() <= 1024);
    }
}
