//! Fault injection and request counters.
//!
//! Contract: a [`Fault`] matches requests by verb, resource (plural, with `/status` for the
//! subresource) and optionally object name; the first matching rule with budget left applies:
//! it adds latency and/or answers with a status code instead of serving the request. Counters
//! count every request (served or faulted) by verb, resource and response code.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// A request verb as counted and matched.
pub type Verb = &'static str;

/// One fault rule.
#[derive(Debug, Clone, Default)]
pub struct Fault {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`; None = any.
    pub verb: Option<String>,
    /// Plural resource, `deployments` or `deployments/status`; None = any.
    pub resource: Option<String>,
    /// Object name; None = any.
    pub name: Option<String>,
    /// Answer with this status code instead of serving.
    pub status: Option<u16>,
    /// `Retry-After` seconds sent with the status.
    pub retry_after: Option<u64>,
    /// Delay before answering.
    pub latency: Option<Duration>,
    /// How many requests this applies to (None = unlimited).
    pub times: Option<u32>,
}

impl Fault {
    /// A rule answering `code` for `verb` on `resource`.
    pub fn status(verb: &str, resource: &str, code: u16) -> Self {
        Self {
            verb: Some(verb.to_owned()),
            resource: Some(resource.to_owned()),
            status: Some(code),
            ..Self::default()
        }
    }

    /// A rule adding `latency` for `verb` on `resource`.
    pub fn latency(verb: &str, resource: &str, latency: Duration) -> Self {
        Self {
            verb: Some(verb.to_owned()),
            resource: Some(resource.to_owned()),
            latency: Some(latency),
            ..Self::default()
        }
    }

    /// Only for the object `name`.
    #[must_use]
    pub fn named(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// Only the next `n` matching requests.
    #[must_use]
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }

    /// Send `Retry-After: secs`.
    #[must_use]
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    fn matches(&self, verb: &str, resource: &str, name: Option<&str>) -> bool {
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
            && self.name.as_deref().is_none_or(|n| Some(n) == name)
            && self.times != Some(0)
    }
}

/// The installed fault rules.
#[derive(Debug, Default)]
pub struct Faults(Mutex<Vec<Fault>>);

impl Faults {
    /// Install a rule.
    pub fn add(&self, fault: Fault) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(fault);
    }

    /// Remove every rule.
    pub fn clear(&self) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// The first matching rule, consuming one use of its budget.
    pub fn take(&self, verb: &str, resource: &str, name: Option<&str>) -> Option<Fault> {
        let mut rules = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let rule = rules.iter_mut().find(|f| f.matches(verb, resource, name))?;
        if let Some(t) = rule.times.as_mut() {
            *t -= 1;
        }
        Some(rule.clone())
    }
}

/// (verb, resource, code).
pub type CountKey = (String, String, u16);

/// Request counters, and stored mutations per resource.
#[derive(Debug, Default)]
pub struct Counters(Mutex<BTreeMap<CountKey, u64>>, Mutex<BTreeMap<String, u64>>);

impl Counters {
    /// Count one request.
    pub fn record(&self, verb: &str, resource: &str, code: u16) {
        let mut m = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *m.entry((verb.to_owned(), resource.to_owned(), code))
            .or_default() += 1;
    }

    /// Every count.
    pub fn snapshot(&self) -> BTreeMap<CountKey, u64> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Requests with this verb (any resource if None) and any code.
    pub fn count(&self, verb: &str, resource: Option<&str>) -> u64 {
        self.snapshot()
            .iter()
            .filter(|((v, r, _), _)| v == verb && resource.is_none_or(|x| x == r))
            .map(|(_, n)| n)
            .sum()
    }

    /// Writes (create, update, patch, delete, deletecollection) with a 2xx answer.
    pub fn writes(&self) -> u64 {
        self.snapshot()
            .iter()
            .filter(|((v, _, c), _)| {
                matches!(
                    v.as_str(),
                    "create" | "update" | "patch" | "delete" | "deletecollection"
                ) && (200..300).contains(c)
            })
            .map(|(_, n)| n)
            .sum()
    }

    /// Count one stored change (a new resourceVersion) of `resource`.
    pub fn record_mutation(&self, resource: &str) {
        *self
            .1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(resource.to_owned())
            .or_default() += 1;
    }

    /// Stored changes of `resource` (any resource if None): no-op writes are not counted.
    pub fn mutations(&self, resource: Option<&str>) -> u64 {
        let m = self
            .1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        m.iter()
            .filter(|(r, _)| resource.is_none_or(|x| x == r.as_str()))
            .map(|(_, n)| n)
            .sum()
    }

    /// Forget every count.
    pub fn reset(&self) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.1
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
}
