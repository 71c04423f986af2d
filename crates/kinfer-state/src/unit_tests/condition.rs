use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use pretty_assertions::assert_eq;

use super::*;

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_767_225_600 + s).unwrap()
}

fn cond(type_: &str, status: &str, reason: &str, message: &str, at: i64) -> Condition {
    Condition {
        last_transition_time: Time(t(at)),
        message: message.into(),
        observed_generation: Some(1),
        reason: reason.into(),
        status: status.into(),
        type_: type_.into(),
    }
}

/// (existing, set status, set reason, set message) -> (transition time, transition recorded)
#[test]
#[allow(clippy::type_complexity)]
fn merge_table() {
    let ready = ConditionType::Ready;
    let cases: Vec<(
        &str,
        Option<Condition>,
        ConditionStatus,
        Reason,
        &str,
        i64,
        bool,
    )> = vec![
        (
            "new condition",
            None,
            ConditionStatus::True,
            Reason::AllComponentsReady,
            "",
            100,
            true,
        ),
        (
            "same status, reason, message",
            Some(cond("Ready", "True", "AllComponentsReady", "", 5)),
            ConditionStatus::True,
            Reason::AllComponentsReady,
            "",
            5,
            false,
        ),
        (
            "message only changes in place",
            Some(cond("Ready", "False", "Progressing", "a", 5)),
            ConditionStatus::False,
            Reason::Progressing,
            "b",
            5,
            false,
        ),
        (
            "reason change is a transition but keeps the time",
            Some(cond("Ready", "False", "Progressing", "", 5)),
            ConditionStatus::False,
            Reason::InvalidSpec,
            "bad",
            5,
            true,
        ),
        (
            "status change moves the time",
            Some(cond("Ready", "False", "Progressing", "", 5)),
            ConditionStatus::True,
            Reason::AllComponentsReady,
            "",
            100,
            true,
        ),
        (
            "unknown to false moves the time",
            Some(cond("Ready", "Unknown", "Progressing", "", 5)),
            ConditionStatus::False,
            Reason::Progressing,
            "",
            100,
            true,
        ),
    ];
    for (name, existing, status, reason, message, want_time, want_transition) in cases {
        let mut set = ConditionSet::new(existing.into_iter().collect(), Some(7), t(100));
        let changed = set.set(&ready, status, &reason, message);
        assert_eq!(changed, want_transition, "{name}");
        assert_eq!(
            set.transitions().len(),
            usize::from(want_transition),
            "{name}"
        );
        let c = set.get(&ready).unwrap();
        assert_eq!(c.last_transition_time, Time(t(want_time)), "{name}");
        assert_eq!(c.status, status.as_str(), "{name}");
        assert_eq!(c.reason, reason.as_str(), "{name}");
        assert_eq!(c.message, message, "{name}");
        assert_eq!(c.observed_generation, Some(7), "{name}: observedGeneration");
    }
}

#[test]
fn order_is_kept_and_new_conditions_append() {
    let existing = vec![
        cond("Ready", "True", "AllComponentsReady", "", 1),
        cond("ModelReady", "True", "ComponentReady", "", 1),
    ];
    let mut set = ConditionSet::new(existing, Some(1), t(2));
    set.set(
        &ConditionType::ConfigValid,
        ConditionStatus::True,
        &Reason::ConfigurationValid,
        "",
    );
    set.set(
        &ConditionType::component("Model"),
        ConditionStatus::True,
        &Reason::ComponentReady,
        "",
    );
    set.set(
        &ConditionType::Ready,
        ConditionStatus::True,
        &Reason::AllComponentsReady,
        "",
    );
    let types: Vec<_> = set.conditions().iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["Ready", "ModelReady", "ConfigValid"]);
}

#[test]
fn prune_drops_conditions_not_set_this_round() {
    let existing = vec![
        cond("Ready", "True", "AllComponentsReady", "", 1),
        cond("GoneReady", "True", "ComponentReady", "", 1),
    ];
    let mut set = ConditionSet::new(existing, Some(1), t(2));
    set.set(
        &ConditionType::Ready,
        ConditionStatus::True,
        &Reason::AllComponentsReady,
        "",
    );
    set.prune_unset();
    let types: Vec<_> = set.conditions().iter().map(|c| c.type_.clone()).collect();
    assert_eq!(types, ["Ready"]);
}

#[test]
fn display_of_types_and_reasons() {
    assert_eq!(
        ConditionType::component("InferenceService").to_string(),
        "InferenceServiceReady"
    );
    assert_eq!(
        ConditionType::DependenciesReachable.to_string(),
        "DependenciesReachable"
    );
    assert_eq!(
        ConditionType::Domain("Discovered".into()).to_string(),
        "Discovered"
    );
    assert_eq!(Reason::ReferenceNotFound.to_string(), "ReferenceNotFound");
    assert_eq!(
        Reason::custom("ImagePullBackOff").to_string(),
        "ImagePullBackOff"
    );
    assert_eq!(Reason::custom("no such-thing!").to_string(), "nosuchthing");
    assert_eq!(Reason::custom("404 gone:").to_string(), "R404gone");
    assert_eq!(Reason::custom("").to_string(), "R");
}

#[test]
fn transition_records_from_and_to() {
    let existing = vec![cond("AuthValid", "True", "AuthenticationValid", "", 1)];
    let mut set = ConditionSet::new(existing, None, t(2));
    set.set(
        &ConditionType::AuthValid,
        ConditionStatus::False,
        &Reason::AuthError,
        "denied",
    );
    let (conds, transitions) = set.finish();
    assert_eq!(conds[0].observed_generation, None);
    assert_eq!(
        transitions,
        vec![Transition {
            type_: ConditionType::AuthValid,
            from: Some((ConditionStatus::True, Reason::AuthenticationValid)),
            status: ConditionStatus::False,
            reason: Reason::AuthError,
            message: "denied".into(),
        }]
    );
    assert!(transitions[0].status_changed());
    assert!(transitions[0].is_error() && !transitions[0].was_error());
}

#[test]
fn pruning_keeps_conditions_others_own() {
    let existing = vec![
        cond("Ready", "True", "AllComponentsReady", "", 1),
        cond("GoneReady", "True", "ComponentReady", "", 1),
        cond("PolicyAccepted", "True", "Accepted", "", 1),
    ];
    let mut set = ConditionSet::new(existing, Some(1), t(2));
    set.set(
        &ConditionType::Ready,
        ConditionStatus::True,
        &Reason::AllComponentsReady,
        "",
    );
    let dropped = set.prune_unset_owned(|t| t.ends_with("Ready"));
    assert_eq!(dropped, ["GoneReady"]);
    let types: Vec<_> = set.conditions().iter().map(|c| c.type_.clone()).collect();
    assert_eq!(types, ["Ready", "PolicyAccepted"]);
}

#[test]
fn messages_are_cut_to_the_api_limit() {
    let mut set = ConditionSet::new(Vec::new(), None, t(1));
    set.set(
        &ConditionType::Ready,
        ConditionStatus::False,
        &Reason::Failed,
        "é".repeat(MAX_MESSAGE_CHARS + 10),
    );
    let m = &set.conditions()[0].message;
    assert_eq!(m.chars().count(), MAX_MESSAGE_CHARS);
    assert!(m.ends_with('…'));
    let exact = "x".repeat(MAX_MESSAGE_CHARS);
    assert_eq!(truncate_message(exact.clone()), exact);
    assert_eq!(Reason::parse("AuthError"), Reason::AuthError);
    assert_eq!(
        Reason::parse("CrashLoopBackOff"),
        Reason::custom("CrashLoopBackOff")
    );
    assert!(Reason::parse("CrashLoopBackOff").is_error());
    assert!(!Reason::parse("Progressing").is_error());
}
