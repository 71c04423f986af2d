//! Component health: what compose reports per dependency, and the fetch-result helpers.
//!
//! Contract:
//! - A [`ComponentHealth`] describes one dependency of the reconciled object: upstream (we need
//!   it) or downstream (we create it), an optional explicit [`ComponentState`], reason, message,
//!   the categorised errors seen while fetching or inspecting it, and an optional child ref.
//! - Without an explicit state, the state follows from the errors
//!   ([`ComponentHealth::effective_state`]).
//! - [`upstream`] and [`downstream`] turn a fetch result into health: NotFound upstream is
//!   `MissingUpstreamDependency`/`ReferenceNotFound`, NotFound downstream is
//!   `MissingDownstreamDependency`/`ResourceNotReady`. Pure: no client, no clock.

use std::borrow::Cow;

use k8s_openapi::api::core::v1::ObjectReference;

use crate::category::{
    Categorize, CategorizedError, Direction, ErrorCategory, categorized_kube_error,
};
use crate::condition::Reason;

/// The state of one component: the one six-state [`kinfer_api::phase::Phase`] (ordered from
/// worst to best by `priority`).
pub type ComponentState = kinfer_api::phase::Phase;

/// The generic condition reason of a phase (a trait because [`ComponentState`] is defined in
/// kinfer-api).
pub trait PhaseReason {
    /// The generic condition reason for this state.
    fn reason(self) -> Reason;
}

impl PhaseReason for ComponentState {
    fn reason(self) -> Reason {
        match self {
            Self::Pending => Reason::Pending,
            Self::Progressing => Reason::Progressing,
            Self::Ready => Reason::ComponentReady,
            Self::Degraded => Reason::Degraded,
            Self::Failed => Reason::Failed,
            Self::NotAvailable => Reason::NotAvailable,
        }
    }
}

/// The health of one dependency of the reconciled object.
#[derive(Debug, Clone, PartialEq)]
pub struct ComponentHealth {
    /// The component name; the condition is `<component>Ready`.
    pub component: Cow<'static, str>,
    /// An explicit state; when `None` it follows from `errors`.
    pub state: Option<ComponentState>,
    /// The condition reason; when `None` it follows from the state or the first error.
    pub reason: Option<Reason>,
    /// The condition message; when `None` it is the first error's message.
    pub message: Option<String>,
    /// Errors seen while fetching or inspecting the component.
    pub errors: Vec<CategorizedError>,
    /// Upstream or downstream; `None` counts as downstream.
    pub direction: Option<Direction>,
    /// The object this health describes, when there is one.
    pub child: Option<ObjectReference>,
}

impl ComponentHealth {
    /// A component with no state, errors or direction yet (effective state: Ready).
    pub fn new(component: impl Into<Cow<'static, str>>) -> Self {
        Self {
            component: component.into(),
            state: None,
            reason: None,
            message: None,
            errors: Vec::new(),
            direction: None,
            child: None,
        }
    }

    /// A component in `state` with `reason` and `message`.
    pub fn with_state(
        component: impl Into<Cow<'static, str>>,
        state: ComponentState,
        reason: Reason,
        message: impl Into<String>,
    ) -> Self {
        let mut h = Self::new(component);
        h.state = Some(state);
        h.reason = Some(reason);
        h.message = Some(message.into());
        h
    }

    /// Mark upstream.
    #[must_use]
    pub fn upstream(mut self) -> Self {
        self.direction = Some(Direction::Upstream);
        self
    }

    /// Mark downstream.
    #[must_use]
    pub fn downstream(mut self) -> Self {
        self.direction = Some(Direction::Downstream);
        self
    }

    /// Set the direction.
    #[must_use]
    pub fn direction(mut self, direction: Direction) -> Self {
        self.direction = Some(direction);
        self
    }

    /// Add an error.
    #[must_use]
    pub fn error(mut self, error: CategorizedError) -> Self {
        self.errors.push(error);
        self
    }

    /// Set the child reference.
    #[must_use]
    pub fn child(mut self, child: ObjectReference) -> Self {
        self.child = Some(child);
        self
    }

    /// The explicit state, else: Auth, ResourceExhaustion or InvalidSpec errors give `Failed`;
    /// MissingUpstream or Infrastructure give `Degraded`; only MissingDownstream gives
    /// `Progressing`; no errors give `Ready`.
    pub fn effective_state(&self) -> ComponentState {
        if let Some(s) = self.state {
            return s;
        }
        let has = |c: ErrorCategory| self.errors.iter().any(|e| e.category == c);
        if has(ErrorCategory::Auth)
            || has(ErrorCategory::ResourceExhaustion)
            || has(ErrorCategory::InvalidSpec)
        {
            ComponentState::Failed
        } else if has(ErrorCategory::MissingUpstreamDependency)
            || has(ErrorCategory::Infrastructure)
        {
            ComponentState::Degraded
        } else if has(ErrorCategory::MissingDownstreamDependency) {
            ComponentState::Progressing
        } else {
            ComponentState::Ready
        }
    }

    /// The condition reason: explicit, else the first error's, else the state's.
    pub fn effective_reason(&self) -> Reason {
        if let Some(r) = &self.reason {
            return r.clone();
        }
        if let Some(e) = self.errors.first() {
            return e.reason.clone();
        }
        self.effective_state().reason()
    }

    /// The condition message: explicit, else the first error's, else empty.
    pub fn effective_message(&self) -> String {
        self.message
            .clone()
            .or_else(|| self.errors.first().map(|e| e.message.clone()))
            .unwrap_or_default()
    }

    /// True when an error of `category` was recorded.
    pub fn has_category(&self, category: ErrorCategory) -> bool {
        self.errors.iter().any(|e| e.category == category)
    }

    /// The direction, downstream when unspecified.
    pub fn effective_direction(&self) -> Direction {
        self.direction.unwrap_or(Direction::Downstream)
    }
}

/// An error that can be categorised once its dependency direction is known.
pub trait CategorizeIn {
    /// Categorise, reading a 404 as missing upstream or downstream.
    fn categorize_in(&self, direction: Direction) -> CategorizedError;
}

impl CategorizeIn for kube::Error {
    fn categorize_in(&self, direction: Direction) -> CategorizedError {
        categorized_kube_error(self, direction)
    }
}

impl CategorizeIn for CategorizedError {
    fn categorize_in(&self, _direction: Direction) -> CategorizedError {
        self.clone()
    }
}

impl<E: Categorize> CategorizeIn for E {
    fn categorize_in(&self, _direction: Direction) -> CategorizedError {
        CategorizedError::from_error(self)
    }
}

/// The result of fetching one dependency: `Ok(None)` is "not found".
pub type FetchResult<T, E = kube::Error> = Result<Option<T>, E>;

/// Health of an upstream dependency from its fetch result; `inspect` judges a found object.
pub fn upstream<T, E: CategorizeIn>(
    component: impl Into<Cow<'static, str>>,
    result: &FetchResult<T, E>,
    inspect: impl FnOnce(&T) -> ComponentHealth,
) -> ComponentHealth {
    from_fetch(component.into(), result, inspect, Direction::Upstream)
}

/// Health of a downstream dependency (a child we create) from its fetch result.
pub fn downstream<T, E: CategorizeIn>(
    component: impl Into<Cow<'static, str>>,
    result: &FetchResult<T, E>,
    inspect: impl FnOnce(&T) -> ComponentHealth,
) -> ComponentHealth {
    from_fetch(component.into(), result, inspect, Direction::Downstream)
}

fn from_fetch<T, E: CategorizeIn>(
    component: Cow<'static, str>,
    result: &FetchResult<T, E>,
    inspect: impl FnOnce(&T) -> ComponentHealth,
    direction: Direction,
) -> ComponentHealth {
    match result {
        Ok(Some(v)) => {
            let mut h = inspect(v);
            h.component = component;
            h.direction = Some(direction);
            h
        }
        Ok(None) => {
            let category = match direction {
                Direction::Upstream => ErrorCategory::MissingUpstreamDependency,
                Direction::Downstream => ErrorCategory::MissingDownstreamDependency,
            };
            let message = format!("{component} not found");
            ComponentHealth::new(component)
                .direction(direction)
                .error(CategorizedError::new(category, message))
        }
        Err(e) => ComponentHealth::new(component)
            .direction(direction)
            .error(e.categorize_in(direction)),
    }
}

#[cfg(test)]
#[path = "unit_tests/health.rs"]
mod tests;
