use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use pretty_assertions::assert_eq;

use super::*;
use crate::category::CategorizedError;
use crate::health::ComponentHealth;

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_767_225_600 + s).unwrap()
}

fn err(c: ErrorCategory) -> CategorizedError {
    CategorizedError::new(c, format!("{c} happened"))
}

fn up(name: &'static str) -> ComponentHealth {
    ComponentHealth::new(name).upstream()
}

fn down(name: &'static str) -> ComponentHealth {
    ComponentHealth::new(name).downstream()
}

fn run(
    components: &[ComponentHealth],
    errors: &[CategorizedError],
    previous: &[Condition],
    now: i64,
) -> Derived {
    derive(&DeriveInput {
        components,
        errors,
        previous,
        generation: Some(3),
        now: t(now),
        grace: DEFAULT_INFRA_GRACE,
    })
}

fn cond_of(d: &Derived, t: &ConditionType) -> (String, String) {
    let c = d.conditions.get(t).unwrap();
    (c.status.clone(), c.reason.clone())
}

fn c(s: &str, r: &str) -> (String, String) {
    (s.to_owned(), r.to_owned())
}

/// Every combination class: (name, components, general errors, want status, want Ready reason).
#[test]
#[allow(clippy::type_complexity)]
fn derivation_table() {
    use ErrorCategory::*;
    let cases: Vec<(
        &str,
        Vec<ComponentHealth>,
        Vec<CategorizedError>,
        OverallStatus,
        &str,
    )> = vec![
        (
            "nothing at all",
            vec![],
            vec![],
            OverallStatus::Ready,
            "AllComponentsReady",
        ),
        (
            "all ready",
            vec![up("Model"), down("Deployment")],
            vec![],
            OverallStatus::Ready,
            "AllComponentsReady",
        ),
        (
            "missing downstream is progress",
            vec![
                up("Model"),
                down("Deployment").error(err(MissingDownstreamDependency)),
            ],
            vec![],
            OverallStatus::Progressing,
            "ResourceNotReady",
        ),
        (
            "explicit pending upstream",
            vec![
                ComponentHealth::with_state(
                    "Model",
                    ComponentState::Pending,
                    Reason::custom("AwaitingMetadata"),
                    "",
                )
                .upstream(),
            ],
            vec![],
            OverallStatus::Pending,
            "AwaitingMetadata",
        ),
        (
            "progressing upstream counts as pending",
            vec![
                ComponentHealth::with_state(
                    "Model",
                    ComponentState::Progressing,
                    Reason::Progressing,
                    "",
                )
                .upstream(),
            ],
            vec![],
            OverallStatus::Pending,
            "Progressing",
        ),
        (
            "invalid spec fails",
            vec![up("Model").error(err(InvalidSpec)), down("Deployment")],
            vec![],
            OverallStatus::Failed,
            "InvalidSpec",
        ),
        (
            "missing upstream fails",
            vec![
                down("Deployment"),
                up("Model").error(err(MissingUpstreamDependency)),
            ],
            vec![],
            OverallStatus::Failed,
            "ReferenceNotFound",
        ),
        (
            "auth fails",
            vec![up("Secret").error(err(Auth))],
            vec![],
            OverallStatus::Failed,
            "AuthError",
        ),
        (
            "resource exhaustion fails without blocking",
            vec![down("Pods").error(err(ResourceExhaustion))],
            vec![],
            OverallStatus::Failed,
            "ResourceExhausted",
        ),
        (
            "not available",
            vec![
                ComponentHealth::with_state(
                    "GPU",
                    ComponentState::NotAvailable,
                    Reason::custom("GPUNotAvailable"),
                    "no MI300X",
                )
                .upstream(),
            ],
            vec![],
            OverallStatus::NotAvailable,
            "GPUNotAvailable",
        ),
        (
            "worst wins: degraded over progressing",
            vec![
                down("A").error(err(MissingDownstreamDependency)),
                ComponentHealth::with_state("B", ComponentState::Degraded, Reason::Degraded, "")
                    .downstream(),
            ],
            vec![],
            OverallStatus::Degraded,
            "Degraded",
        ),
        (
            "plan error invalid spec fails",
            vec![down("Deployment")],
            vec![err(InvalidSpec)],
            OverallStatus::Failed,
            "InvalidSpec",
        ),
        (
            "general missing downstream is progress",
            vec![],
            vec![err(MissingDownstreamDependency)],
            OverallStatus::Progressing,
            "ResourceNotReady",
        ),
    ];
    for (name, components, errors, want, want_reason) in cases {
        let d = run(&components, &errors, &[], 0);
        assert_eq!(d.status, want, "{name}");
        let (s, r) = cond_of(&d, &ConditionType::Ready);
        assert_eq!(r, want_reason, "{name}");
        assert_eq!(
            s,
            if want == OverallStatus::Ready {
                "True"
            } else {
                "False"
            },
            "{name}"
        );
        for comp in &components {
            let ct = ConditionType::component(comp.component.clone());
            let (s, _) = cond_of(&d, &ct);
            assert_eq!(
                s == "True",
                comp.effective_state() == ComponentState::Ready,
                "{name}: {ct}"
            );
        }
    }
}

#[test]
fn framework_conditions_follow_categories() {
    use ErrorCategory::*;
    let d = run(
        &[up("Model")
            .error(err(InvalidSpec))
            .error(err(MissingUpstreamDependency))],
        &[err(Auth)],
        &[],
        0,
    );
    assert_eq!(
        cond_of(&d, &ConditionType::ConfigValid),
        c("False", "InvalidSpec")
    );
    assert_eq!(
        cond_of(&d, &ConditionType::AuthValid),
        c("False", "AuthError")
    );
    assert_eq!(
        cond_of(&d, &ConditionType::DependenciesReachable),
        c("True", "Reachable")
    );
    let d = run(
        &[up("Model").error(err(MissingUpstreamDependency))],
        &[],
        &[],
        0,
    );
    assert_eq!(
        cond_of(&d, &ConditionType::ConfigValid),
        c("False", "ReferenceNotFound")
    );
    assert_eq!(
        d.conditions
            .get(&ConditionType::ConfigValid)
            .unwrap()
            .message,
        "MissingUpstreamDependency happened"
    );
    let d = run(&[up("Model")], &[], &[], 0);
    assert_eq!(
        cond_of(&d, &ConditionType::ConfigValid),
        c("True", "ConfigurationValid")
    );
    assert_eq!(
        cond_of(&d, &ConditionType::AuthValid),
        c("True", "AuthenticationValid")
    );
    let types: Vec<_> = d
        .conditions
        .conditions()
        .iter()
        .map(|c| c.type_.clone())
        .collect();
    assert_eq!(
        types,
        [
            "Ready",
            "ConfigValid",
            "AuthValid",
            "DependenciesReachable",
            "ModelReady"
        ]
    );
    assert!(
        d.conditions
            .conditions()
            .iter()
            .all(|c| c.observed_generation == Some(3))
    );
}

#[test]
fn ready_message_names_the_first_failing_component() {
    let d = run(
        &[
            up("Model"),
            down("InferenceService").error(CategorizedError::new(
                ErrorCategory::InvalidSpec,
                "bad port",
            )),
            down("Route").error(CategorizedError::new(
                ErrorCategory::InvalidSpec,
                "bad host",
            )),
        ],
        &[],
        &[],
        0,
    );
    let ready = d.conditions.get(&ConditionType::Ready).unwrap();
    assert_eq!(ready.message, "InferenceService: bad port");
}

#[test]
fn infrastructure_grace_period() {
    let infra = || {
        vec![
            up("Model"),
            down("Deployment").error(err(ErrorCategory::Infrastructure)),
        ]
    };
    // Steady state: everything ready.
    let d0 = run(&[up("Model"), down("Deployment")], &[], &[], 0);
    assert_eq!(d0.status, OverallStatus::Ready);
    let (prev, _) = d0.conditions.finish();

    // An infrastructure error appears: DependenciesReachable flips at once, the rest holds.
    let d1 = run(&infra(), &[], &prev, 100);
    assert!(d1.infra_within_grace);
    assert_eq!(d1.status, OverallStatus::Ready);
    assert_eq!(
        cond_of(&d1, &ConditionType::DependenciesReachable),
        c("False", "InfrastructureError")
    );
    assert_eq!(
        cond_of(&d1, &ConditionType::component("Deployment")).0,
        "True"
    );
    let (prev, _) = d1.conditions.finish();
    let since = prev
        .iter()
        .find(|c| c.type_ == "DependenciesReachable")
        .unwrap()
        .last_transition_time
        .clone();
    assert_eq!(since, Time(t(100)));

    // Still within 10 s of the transition.
    let d2 = run(&infra(), &[], &prev, 109);
    assert!(d2.infra_within_grace);
    assert_eq!(d2.status, OverallStatus::Ready);
    let (prev2, transitions) = d2.conditions.finish();
    assert!(transitions.is_empty(), "{transitions:?}");

    // Past the grace period: the component and the root flip.
    let d3 = run(&infra(), &[], &prev2, 110);
    assert!(!d3.infra_within_grace);
    assert_eq!(d3.status, OverallStatus::Degraded);
    assert_eq!(
        cond_of(&d3, &ConditionType::component("Deployment")),
        c("False", "InfrastructureError")
    );
    assert_eq!(
        cond_of(&d3, &ConditionType::Ready),
        c("False", "InfrastructureError")
    );

    // A general (apply) infrastructure error past grace degrades a ready object too.
    let d4 = run(
        &[up("Model")],
        &[err(ErrorCategory::Infrastructure)],
        &prev2,
        200,
    );
    assert_eq!(d4.status, OverallStatus::Degraded);
}

#[test]
fn grace_does_not_hide_a_previously_failing_component() {
    let prev = run(
        &[down("Deployment").error(err(ErrorCategory::MissingDownstreamDependency))],
        &[],
        &[],
        0,
    )
    .conditions
    .finish()
    .0;
    let d = run(
        &[down("Deployment").error(err(ErrorCategory::Infrastructure))],
        &[],
        &prev,
        1,
    );
    assert!(d.infra_within_grace);
    assert_eq!(
        cond_of(&d, &ConditionType::component("Deployment")).0,
        "False"
    );
}
