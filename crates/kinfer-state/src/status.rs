//! Status derivation: component health and errors to conditions and the overall status.
//!
//! Contract:
//! - Input: the components compose reported, errors not tied to a component (plan, apply),
//!   the conditions currently in status, the generation, "now" and the infrastructure grace
//!   period. Output: the rewritten [`ConditionSet`] (framework conditions, one `<C>Ready` per
//!   component, the root `Ready`) and the [`OverallStatus`]. Pure: no client; "now" comes in.
//! - Conditions are written in a fixed order: `Ready`, `ConfigValid`, `AuthValid`,
//!   `DependenciesReachable`, then components in the order compose gave them.
//! - Any Auth, InvalidSpec or MissingUpstream error makes the object `Failed` with `Ready=False`
//!   carrying the first such component's reason and message. Otherwise the worst component wins
//!   (a non-ready upstream counts as Pending, a non-ready downstream as Progressing), and
//!   infrastructure errors make a better-than-Degraded result Degraded.
//! - Grace period: `DependenciesReachable` flips to False at once (its `lastTransitionTime`
//!   starts the clock), but for `grace` after that components whose only trouble is
//!   infrastructure keep their previous `Ready=True` condition and the root does not degrade,
//!   so a blip does not flap every condition.
//! - The overall status is an enum; each kind maps it with a total `match` into its CRD's enum,
//!   so no reconcile can produce a value the CRD rejects.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;

use crate::category::{CategorizedError, Direction, ErrorCategory};
use crate::clock::elapsed;
use crate::condition::{ConditionSet, ConditionStatus, ConditionType, Reason};
use crate::health::{ComponentHealth, ComponentState};

/// Upstream's infrastructure grace period.
pub const DEFAULT_INFRA_GRACE: Duration = Duration::from_secs(10);

/// The overall status of a reconciled object, before the per-kind mapping (for example
/// AIMService maps Progressing to `Starting` and Ready to `Running`): the one six-state
/// [`kinfer_api::phase::Phase`].
pub type OverallStatus = kinfer_api::phase::Phase;

/// What status derivation needs.
#[derive(Debug, Clone)]
pub struct DeriveInput<'a> {
    /// One health per component, in display order.
    pub components: &'a [ComponentHealth],
    /// Errors not tied to a component (plan and apply failures).
    pub errors: &'a [CategorizedError],
    /// The conditions currently in status.
    pub previous: &'a [Condition],
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// Now, in whole seconds.
    pub now: Timestamp,
    /// How long infrastructure errors are tolerated before component conditions flip.
    pub grace: Duration,
}

/// The result of status derivation.
#[derive(Debug, Clone)]
pub struct Derived {
    /// The overall status.
    pub status: OverallStatus,
    /// The conditions (call [`ConditionSet::finish`] after adding domain conditions).
    pub conditions: ConditionSet,
    /// Every category present.
    pub categories: BTreeSet<ErrorCategory>,
    /// Infrastructure errors are present but still within the grace period.
    pub infra_within_grace: bool,
}

impl Derived {
    /// True when an error of `category` was seen.
    pub fn has(&self, category: ErrorCategory) -> bool {
        self.categories.contains(&category)
    }
}

/// Derive conditions and the overall status; see the module contract.
pub fn derive(input: &DeriveInput<'_>) -> Derived {
    let all_errors = || {
        input
            .components
            .iter()
            .flat_map(|c| c.errors.iter())
            .chain(input.errors.iter())
    };
    let categories: BTreeSet<ErrorCategory> = all_errors().map(|e| e.category).collect();
    let first_of = |c: ErrorCategory| all_errors().find(|e| e.category == c);
    let infra = first_of(ErrorCategory::Infrastructure);

    let previous_of = |t: &ConditionType| {
        let t = t.to_string();
        input.previous.iter().find(|c| c.type_ == t)
    };
    let infra_within_grace = infra.is_some() && {
        let started = previous_of(&ConditionType::DependenciesReachable)
            .filter(|c| c.status == "False")
            .map_or(input.now, |c| c.last_transition_time.0);
        elapsed(started, input.now) < input.grace
    };

    // Per component: the state the root sees, and the condition to write.
    let judged: Vec<Judged> = input
        .components
        .iter()
        .map(|c| {
            judge(
                c,
                infra_within_grace,
                previous_of(&ConditionType::component(c.component.clone())),
            )
        })
        .collect();

    let blocking = |e: &CategorizedError| e.category.is_user_fixable();
    let (status, ready_reason, ready_message) = if all_errors().any(blocking) {
        let (reason, message) = judged
            .iter()
            .find(|j| j.health.errors.iter().any(blocking))
            .map(|j| {
                let e = j.health.errors.iter().find(|e| blocking(e));
                let reason = e.map_or_else(|| j.reason.clone(), |e| e.reason.clone());
                (reason, describe(&j.health.component, &j.message, &j.reason))
            })
            .or_else(|| {
                input
                    .errors
                    .iter()
                    .find(|e| blocking(e))
                    .map(|e| (e.reason.clone(), e.message.clone()))
            })
            .unwrap_or((Reason::Failed, String::new()));
        (OverallStatus::Failed, reason, message)
    } else {
        root_without_blocking(
            &judged,
            input.errors,
            infra.is_some() && !infra_within_grace,
        )
    };

    let mut set = ConditionSet::new(input.previous.to_vec(), input.generation, input.now);
    if status == OverallStatus::Ready {
        set.set(
            &ConditionType::Ready,
            ConditionStatus::True,
            &Reason::AllComponentsReady,
            "",
        );
    } else {
        set.set(
            &ConditionType::Ready,
            ConditionStatus::False,
            &ready_reason,
            ready_message,
        );
    }
    let (cv_reason, cv) = match first_of(ErrorCategory::InvalidSpec) {
        Some(e) => (Reason::InvalidSpec, Some(e)),
        None => match first_of(ErrorCategory::MissingUpstreamDependency) {
            Some(e) => (Reason::ReferenceNotFound, Some(e)),
            None => (Reason::ConfigurationValid, None),
        },
    };
    framework(&mut set, &ConditionType::ConfigValid, cv, &cv_reason);
    let auth = first_of(ErrorCategory::Auth);
    let auth_reason = if auth.is_some() {
        Reason::AuthError
    } else {
        Reason::AuthenticationValid
    };
    framework(&mut set, &ConditionType::AuthValid, auth, &auth_reason);
    let reach_reason = if infra.is_some() {
        Reason::InfrastructureError
    } else {
        Reason::Reachable
    };
    framework(
        &mut set,
        &ConditionType::DependenciesReachable,
        infra,
        &reach_reason,
    );
    for j in &judged {
        let t = ConditionType::component(j.health.component.clone());
        let s = ConditionStatus::from_bool(j.state == ComponentState::Ready);
        set.set(&t, s, &j.reason, j.message.clone());
    }
    Derived {
        status,
        conditions: set,
        categories,
        infra_within_grace,
    }
}

fn framework(
    set: &mut ConditionSet,
    t: &ConditionType,
    error: Option<&CategorizedError>,
    reason: &Reason,
) {
    match error {
        Some(e) => set.set(t, ConditionStatus::False, reason, e.message.clone()),
        None => set.set(t, ConditionStatus::True, reason, ""),
    };
}

struct Judged<'a> {
    health: &'a ComponentHealth,
    /// The state the root sees.
    state: ComponentState,
    reason: Reason,
    message: String,
}

fn judge<'a>(
    h: &'a ComponentHealth,
    within_grace: bool,
    previous: Option<&Condition>,
) -> Judged<'a> {
    let only_infra = !h.errors.is_empty()
        && h.errors
            .iter()
            .all(|e| e.category == ErrorCategory::Infrastructure)
        && h.state.is_none();
    if within_grace
        && only_infra
        && let Some(p) = previous.filter(|p| p.status == "True")
    {
        return Judged {
            health: h,
            state: ComponentState::Ready,
            reason: Reason::custom(p.reason.clone()),
            message: p.message.clone(),
        };
    }
    Judged {
        health: h,
        state: h.effective_state(),
        reason: h.effective_reason(),
        message: h.effective_message(),
    }
}

/// The root as the worst component, for the case without user-fixable errors.
fn root_without_blocking(
    judged: &[Judged<'_>],
    errors: &[CategorizedError],
    infra_counts: bool,
) -> (OverallStatus, Reason, String) {
    let rooted = |j: &Judged<'_>| match j.state {
        ComponentState::Ready => ComponentState::Ready,
        s if s.is_error() || s == ComponentState::Pending => s,
        _ => match j.health.effective_direction() {
            Direction::Upstream => ComponentState::Pending,
            Direction::Downstream => ComponentState::Progressing,
        },
    };
    let mut worst = ComponentState::Ready;
    let mut culprit: Option<(Reason, String)> = None;
    for j in judged {
        let s = rooted(j);
        if s.priority() < worst.priority() {
            worst = s;
            culprit = Some((
                j.reason.clone(),
                describe(&j.health.component, &j.message, &j.reason),
            ));
        }
    }
    for e in errors {
        let s = match e.category {
            ErrorCategory::ResourceExhaustion => ComponentState::Failed,
            ErrorCategory::MissingDownstreamDependency => ComponentState::Progressing,
            ErrorCategory::Infrastructure if infra_counts => ComponentState::Degraded,
            _ => continue,
        };
        if s.priority() < worst.priority() {
            worst = s;
            culprit = Some((e.reason.clone(), e.message.clone()));
        }
    }
    if infra_counts && worst.priority() > ComponentState::Degraded.priority() {
        worst = ComponentState::Degraded;
        let msg = errors
            .iter()
            .chain(judged.iter().flat_map(|j| j.health.errors.iter()))
            .find(|e| e.category == ErrorCategory::Infrastructure)
            .map(|e| e.message.clone())
            .unwrap_or_default();
        culprit = Some((Reason::InfrastructureError, msg));
    }
    let (reason, message) = culprit.unwrap_or((Reason::AllComponentsReady, String::new()));
    (worst, reason, message)
}

fn describe(component: &str, message: &str, reason: &Reason) -> String {
    if message.is_empty() {
        format!("{component} is not ready: {reason}")
    } else {
        format!("{component}: {message}")
    }
}

#[cfg(test)]
#[path = "unit_tests/status.rs"]
mod tests;
