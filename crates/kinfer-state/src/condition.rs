//! Conditions in the `metav1.Condition` shape, kept as an ordered set.
//!
//! Contract:
//! - Condition types and reasons are enums with `Display` ([`ConditionType`], [`Reason`]); the
//!   strings they produce satisfy the API server's patterns (a reason is CamelCase, at most 1024
//!   characters; custom reasons are sanitised on construction).
//! - A [`ConditionSet`] keeps the order conditions were first written in; setting a condition
//!   that exists updates it in place, a new one is appended.
//! - `lastTransitionTime` moves only when `status` changes; a reason or message change updates
//!   in place. Every condition written carries the object's `observedGeneration`.
//! - Changes of status or reason are recorded as [`Transition`]s (typed: the condition type and
//!   reasons are enums), the only thing events are emitted for (the events module decides
//!   which). Nothing here talks to the API server or reads a clock: "now" is passed in.
//! - Messages are cut to the API's limit ([`MAX_MESSAGE_CHARS`]) with an ellipsis.

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The API server's limit on a condition message.
pub const MAX_MESSAGE_CHARS: usize = 32768;

/// Reasons that describe an error state (besides the built-in error variants): the ones the
/// engine, its inspectors and the registry categorisation produce. A condition that is not
/// True with one of these is "in error"; events fire on transitions into and out of it.
const ERROR_REASONS: [&str; 35] = [
    "InvalidSpec",
    "CleanupForbidden",
    "ReferenceNotFound",
    "AuthError",
    "InfrastructureError",
    "ResourceExhausted",
    "Degraded",
    "Failed",
    "NotAvailable",
    "ControllerForbidden",
    "KindNotInstalled",
    "NameTaken",
    "ChildUndecodable",
    "ImagePullAuthFailure",
    "ImageNotFound",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CrashLoopBackOff",
    "OOMKilled",
    "Evicted",
    "StorageFull",
    "SourceAuthFailure",
    "SourceNotFound",
    "Forbidden",
    "PodFailed",
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "ProgressDeadlineExceeded",
    "QuotaExceeded",
    "ClaimLost",
    "ImageAuthFailure",
    "RegistryUnavailable",
    "InvalidImage",
    "RefNotPermitted",
];

/// `message` cut to [`MAX_MESSAGE_CHARS`] characters, the last one an ellipsis.
pub fn truncate_message(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS - 1) {
        Some((cut, _)) if message[cut..].chars().nth(1).is_some() => {
            let mut out = message[..cut].to_owned();
            out.push('…');
            out
        }
        _ => message,
    }
}

/// A condition's `status` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// `"True"`.
    True,
    /// `"False"`.
    False,
    /// `"Unknown"`.
    Unknown,
}

impl ConditionStatus {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }

    /// Parse the wire spelling; anything unexpected reads as `Unknown`.
    pub fn parse(s: &str) -> Self {
        match s {
            "True" => Self::True,
            "False" => Self::False,
            _ => Self::Unknown,
        }
    }

    /// `True` for `true`, `False` otherwise.
    pub fn from_bool(ok: bool) -> Self {
        if ok { Self::True } else { Self::False }
    }
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The type of a condition: the framework set, one per component, or a domain condition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConditionType {
    /// The spec and every referenced object are valid.
    ConfigValid,
    /// Every credential in use was accepted.
    AuthValid,
    /// The API server and every external system answered.
    DependenciesReachable,
    /// The root condition: everything is ready (what `kubectl wait --for=condition=Ready` reads).
    Ready,
    /// `<Component>Ready`, one per [`ComponentHealth`](crate::ComponentHealth).
    ComponentReady(Cow<'static, str>),
    /// A kind-specific condition (e.g. `Discovered`), written by the pipeline's status hook.
    Domain(Cow<'static, str>),
}

impl ConditionType {
    /// The type of a condition read back from the API: the framework spellings parse to their
    /// variants; anything else is a domain condition (a `<C>Ready` of ours cannot be told from
    /// a domain type by its spelling alone, so it is `Domain` too).
    pub fn parse(s: &str) -> Self {
        match s {
            "ConfigValid" => Self::ConfigValid,
            "AuthValid" => Self::AuthValid,
            "DependenciesReachable" => Self::DependenciesReachable,
            "Ready" => Self::Ready,
            other => Self::Domain(Cow::Owned(other.to_owned())),
        }
    }

    /// The `<component>Ready` condition type.
    pub fn component(component: impl Into<Cow<'static, str>>) -> Self {
        Self::ComponentReady(component.into())
    }

    /// True for the four framework types.
    pub fn is_framework(&self) -> bool {
        matches!(
            self,
            Self::ConfigValid | Self::AuthValid | Self::DependenciesReachable | Self::Ready
        )
    }
}

impl fmt::Display for ConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ConfigValid => f.write_str("ConfigValid"),
            Self::AuthValid => f.write_str("AuthValid"),
            Self::DependenciesReachable => f.write_str("DependenciesReachable"),
            Self::Ready => f.write_str("Ready"),
            Self::ComponentReady(c) => write!(f, "{c}Ready"),
            Self::Domain(d) => f.write_str(d),
        }
    }
}

/// A condition reason (CamelCase, machine-readable).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// `ConfigValid=True`.
    ConfigurationValid,
    /// `ConfigValid=False`, `Ready=False`: the spec is invalid.
    InvalidSpec,
    /// `ConfigValid=False`, `Ready=False`: a referenced object does not exist.
    ReferenceNotFound,
    /// `AuthValid=True`.
    AuthenticationValid,
    /// `AuthValid=False`, `Ready=False`: credentials were refused.
    AuthError,
    /// `DependenciesReachable=True`.
    Reachable,
    /// `DependenciesReachable=False`, `Ready=False`: transient infrastructure trouble.
    InfrastructureError,
    /// A quota, memory or disk limit was hit.
    ResourceExhausted,
    /// A child object we create does not exist yet or is not ready.
    ResourceNotReady,
    /// `Ready=True`: every component is ready.
    AllComponentsReady,
    /// Work is under way.
    Progressing,
    /// Waiting for something upstream.
    Pending,
    /// A component is ready.
    ComponentReady,
    /// The object cannot run in this cluster.
    NotAvailable,
    /// A component reported a degraded state.
    Degraded,
    /// A component reported a failed state.
    Failed,
    /// A kind- or inspector-specific reason, sanitised to the API's reason pattern.
    Custom(Cow<'static, str>),
}

impl Reason {
    /// A custom reason. Characters outside `[A-Za-z0-9_,:]` are dropped, a non-letter start is
    /// prefixed with `R`, and the result is cut to 1024 characters, so the API never rejects it.
    pub fn custom(reason: impl Into<Cow<'static, str>>) -> Self {
        let reason = reason.into();
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ',' || c == ':';
        let ok = reason.len() <= 1024
            && reason.starts_with(|c: char| c.is_ascii_alphabetic())
            && reason.chars().all(valid)
            && !reason.ends_with([',', ':']);
        if ok {
            return Self::Custom(reason);
        }
        let mut cleaned: String = reason.chars().filter(|c| valid(*c)).collect();
        if !cleaned.starts_with(|c: char| c.is_ascii_alphabetic()) {
            cleaned.insert(0, 'R');
        }
        cleaned.truncate(1024);
        while cleaned.ends_with([',', ':']) {
            cleaned.pop();
        }
        Self::Custom(Cow::Owned(cleaned))
    }

    /// A reason read back from the API: a built-in spelling parses to its variant, anything
    /// else is [`Reason::custom`].
    pub fn parse(s: &str) -> Self {
        const BUILT_IN: [Reason; 16] = [
            Reason::ConfigurationValid,
            Reason::InvalidSpec,
            Reason::ReferenceNotFound,
            Reason::AuthenticationValid,
            Reason::AuthError,
            Reason::Reachable,
            Reason::InfrastructureError,
            Reason::ResourceExhausted,
            Reason::ResourceNotReady,
            Reason::AllComponentsReady,
            Reason::Progressing,
            Reason::Pending,
            Reason::ComponentReady,
            Reason::NotAvailable,
            Reason::Degraded,
            Reason::Failed,
        ];
        BUILT_IN
            .into_iter()
            .find(|r| r.as_str() == s)
            .unwrap_or_else(|| Self::custom(s.to_owned()))
    }

    /// True for reasons that describe an error state (see `ERROR_REASONS`).
    pub fn is_error(&self) -> bool {
        ERROR_REASONS.contains(&self.as_str())
    }

    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Self::ConfigurationValid => "ConfigurationValid",
            Self::InvalidSpec => "InvalidSpec",
            Self::ReferenceNotFound => "ReferenceNotFound",
            Self::AuthenticationValid => "AuthenticationValid",
            Self::AuthError => "AuthError",
            Self::Reachable => "Reachable",
            Self::InfrastructureError => "InfrastructureError",
            Self::ResourceExhausted => "ResourceExhausted",
            Self::ResourceNotReady => "ResourceNotReady",
            Self::AllComponentsReady => "AllComponentsReady",
            Self::Progressing => "Progressing",
            Self::Pending => "Pending",
            Self::ComponentReady => "ComponentReady",
            Self::NotAvailable => "NotAvailable",
            Self::Degraded => "Degraded",
            Self::Failed => "Failed",
            Self::Custom(c) => c,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A change of a condition's status or reason, recorded by [`ConditionSet::set`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The condition type.
    pub type_: ConditionType,
    /// Status and reason before; `None` for a condition that did not exist.
    pub from: Option<(ConditionStatus, Reason)>,
    /// The new status.
    pub status: ConditionStatus,
    /// The new reason.
    pub reason: Reason,
    /// The new message.
    pub message: String,
}

impl Transition {
    /// True when the status itself changed (not only the reason).
    pub fn status_changed(&self) -> bool {
        self.from.as_ref().is_none_or(|(s, _)| *s != self.status)
    }

    /// The condition is in an error state now: not True, with an error reason.
    pub fn is_error(&self) -> bool {
        self.status != ConditionStatus::True && self.reason.is_error()
    }

    /// The condition was in an error state before.
    pub fn was_error(&self) -> bool {
        self.from
            .as_ref()
            .is_some_and(|(s, r)| *s != ConditionStatus::True && r.is_error())
    }
}

/// An ordered set of conditions being rewritten for one reconcile.
#[derive(Debug, Clone)]
pub struct ConditionSet {
    conditions: Vec<Condition>,
    touched: Vec<bool>,
    generation: Option<i64>,
    now: Timestamp,
    transitions: Vec<Transition>,
}

impl ConditionSet {
    /// Start from the conditions currently in the object's status. `generation` is the object's
    /// `metadata.generation`; `now` (whole seconds, see [`crate::clock::now_seconds`]) is the
    /// transition time used for conditions whose status changes.
    pub fn new(existing: Vec<Condition>, generation: Option<i64>, now: Timestamp) -> Self {
        let touched = vec![false; existing.len()];
        Self {
            conditions: existing,
            touched,
            generation,
            now,
            transitions: Vec::new(),
        }
    }

    /// Set a condition. Returns true when the status or reason changed (a [`Transition`]).
    pub fn set(
        &mut self,
        type_: &ConditionType,
        status: ConditionStatus,
        reason: &Reason,
        message: impl Into<String>,
    ) -> bool {
        let type_s = type_.to_string();
        let message = truncate_message(message.into());
        let now = Time(self.now);
        let idx = self.conditions.iter().position(|c| c.type_ == type_s);
        let Some(i) = idx else {
            self.conditions.push(Condition {
                last_transition_time: now,
                message: message.clone(),
                observed_generation: self.generation,
                reason: reason.to_string(),
                status: status.as_str().to_owned(),
                type_: type_s.clone(),
            });
            self.touched.push(true);
            self.transitions.push(Transition {
                type_: type_.clone(),
                from: None,
                status,
                reason: reason.clone(),
                message,
            });
            return true;
        };
        self.touched[i] = true;
        let c = &mut self.conditions[i];
        let old_status = ConditionStatus::parse(&c.status);
        let changed = old_status != status || c.reason != reason.as_str();
        if changed {
            self.transitions.push(Transition {
                type_: type_.clone(),
                from: Some((old_status, Reason::parse(&c.reason))),
                status,
                reason: reason.clone(),
                message: message.clone(),
            });
        }
        if old_status != status || c.status != status.as_str() {
            c.last_transition_time = now;
        }
        status.as_str().clone_into(&mut c.status);
        c.reason = reason.to_string();
        c.message = message;
        c.observed_generation = self.generation;
        changed
    }

    /// The condition of this type, if set.
    pub fn get(&self, type_: &ConditionType) -> Option<&Condition> {
        let t = type_.to_string();
        self.conditions.iter().find(|c| c.type_ == t)
    }

    /// The status of the condition of this type, if set.
    pub fn status_of(&self, type_: &ConditionType) -> Option<ConditionStatus> {
        self.get(type_).map(|c| ConditionStatus::parse(&c.status))
    }

    /// Drop every condition not set since [`ConditionSet::new`] (e.g. of a component that no
    /// longer exists), including conditions other controllers own; prefer
    /// [`ConditionSet::prune_unset_owned`].
    pub fn prune_unset(&mut self) {
        self.prune_unset_owned(|_| true);
    }

    /// Drop the conditions not set since [`ConditionSet::new`] that `ours` claims (those this
    /// controller wrote before, e.g. of a component that no longer exists); conditions others
    /// own stay as they are. Returns the types dropped.
    pub fn prune_unset_owned(&mut self, ours: impl Fn(&str) -> bool) -> Vec<String> {
        let mut dropped = Vec::new();
        let mut touched = std::mem::take(&mut self.touched).into_iter();
        self.conditions.retain(|c| {
            let keep = touched.next().unwrap_or(false) || !ours(&c.type_);
            if !keep {
                dropped.push(c.type_.clone());
            }
            keep
        });
        self.touched = vec![true; self.conditions.len()];
        dropped
    }

    /// The transitions recorded so far.
    pub fn transitions(&self) -> &[Transition] {
        &self.transitions
    }

    /// The conditions, in order.
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// The conditions and the transitions.
    pub fn finish(self) -> (Vec<Condition>, Vec<Transition>) {
        (self.conditions, self.transitions)
    }
}

#[cfg(test)]
#[path = "unit_tests/condition.rs"]
mod tests;
