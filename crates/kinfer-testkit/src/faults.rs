//! Fault injection and request counters.
//!
//! Contract: a [`Fault`] matches requests by verb, resource (plural, with `/status` for the
//! subresource), optionally object name, and optionally only LISTs that carry a `continue`
//! token. Rules are tried in the order they were added; the first matching rule with budget
//! left that fires applies: it adds latency, answers with a status code instead of serving the
//! request, or (for watches) serves the watch and ends it after a while. A rule with a
//! [`Fault::percent`] fires on that share of its matching requests, decided by a seeded
//! pseudo-random sequence ([`Faults::seed`]; the same seed gives the same sequence of
//! decisions), and a rule that does not fire neither consumes budget nor hides later rules.
//! Counters count every request (served or faulted) by verb, resource and response code, and
//! again per client ([`Counters::by_client`]): the user a request impersonates
//! (`Impersonate-User`, which a kubeconfig sets with `as:`), else its `User-Agent`, so a test
//! running several processes with one binary can tell their requests apart. Every 409 answer
//! is also kept, with its client, object and message ([`Counters::conflicts`]; the latest
//! [`CONFLICT_LOG`] of them), so a benchmark can say who conflicted with whom.
//!
//! Injected watch answers are shaped like the real server's: a 410 on a watch is an `ERROR`
//! event carrying an `Expired` Status in a 200 stream (see [`crate::watch::expired`]), and a
//! cut watch simply ends, as when a load balancer or the server drops the connection.

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
    /// Only LIST requests that carry a `continue` token (a later page).
    pub continue_only: bool,
    /// Answer with this status code instead of serving.
    pub status: Option<u16>,
    /// `Retry-After` seconds sent with the status.
    pub retry_after: Option<u64>,
    /// Delay before answering.
    pub latency: Option<Duration>,
    /// Serve the watch, then end it after this long (a cut connection).
    pub cut_after: Option<Duration>,
    /// Fire on this many of every 10,000 matching requests (None = every one).
    pub basis_points: Option<u32>,
    /// How many requests this applies to (None = unlimited).
    pub times: Option<u32>,
}

/// What a fault rule is matched against.
#[derive(Debug, Clone, Copy)]
pub struct RequestInfo<'a> {
    /// The verb (see [`Fault::verb`]).
    pub verb: &'a str,
    /// Plural resource, with `/<subresource>`.
    pub resource: &'a str,
    /// Object name, for requests on one object.
    pub name: Option<&'a str>,
    /// Whether a LIST carries a `continue` token.
    pub continued: bool,
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

    /// 429 `TooManyRequests` with `Retry-After: secs` for `verb` on `resource`.
    pub fn throttle(verb: &str, resource: &str, secs: u64) -> Self {
        Self::status(verb, resource, 429).retry_after(secs)
    }

    /// Watches of `resource` are served, then cut after `after`.
    pub fn cut_watch(resource: &str, after: Duration) -> Self {
        Self {
            verb: Some("watch".to_owned()),
            resource: Some(resource.to_owned()),
            cut_after: Some(after),
            ..Self::default()
        }
    }

    /// Watches of `resource` get 410 Gone (an `ERROR` event with an `Expired` Status), as when
    /// the version they resume from was compacted: the client must re-list.
    pub fn watch_gone(resource: &str) -> Self {
        Self::status("watch", resource, 410)
    }

    /// Later pages of LISTs of `resource` get 410 Gone (an expired `continue` token): the
    /// client must start the list again.
    pub fn continue_gone(resource: &str) -> Self {
        Self {
            continue_only: true,
            ..Self::status("list", resource, 410)
        }
    }

    /// Any verb on any resource (narrow it with the fields, e.g. `verb: None`).
    pub fn any() -> Self {
        Self::default()
    }

    /// Answer with `code`.
    #[must_use]
    pub fn with_status(mut self, code: u16) -> Self {
        self.status = Some(code);
        self
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

    /// Fire on `percent` of the matching requests (clamped to 0..=100, to 0.01%).
    #[must_use]
    pub fn percent(mut self, percent: f64) -> Self {
        let bp = (percent.clamp(0.0, 100.0) * 100.0).round();
        // In 0..=10_000 after the clamp, so the cast is exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let bp = bp as u32;
        self.basis_points = Some(bp);
        self
    }

    fn matches(&self, r: &RequestInfo<'_>) -> bool {
        self.verb.as_deref().is_none_or(|v| v == r.verb)
            && self.resource.as_deref().is_none_or(|x| x == r.resource)
            && self.name.as_deref().is_none_or(|n| Some(n) == r.name)
            && (!self.continue_only || r.continued)
            && self.times != Some(0)
    }
}

/// The seed of a fresh cluster's fault decisions (fixed, so runs are reproducible).
pub const DEFAULT_SEED: u64 = 0x6b69_6e66_6572;

#[derive(Debug)]
struct Rules {
    rules: Vec<Fault>,
    rng: u64,
    fired: u64,
}

/// The installed fault rules and the seeded sequence deciding percentage rules.
#[derive(Debug)]
pub struct Faults(Mutex<Rules>);

impl Default for Faults {
    fn default() -> Self {
        Self(Mutex::new(Rules {
            rules: Vec::new(),
            rng: DEFAULT_SEED,
            fired: 0,
        }))
    }
}

impl Faults {
    fn lock(&self) -> std::sync::MutexGuard<'_, Rules> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Install a rule.
    pub fn add(&self, fault: Fault) {
        self.lock().rules.push(fault);
    }

    /// Remove every rule.
    pub fn clear(&self) {
        self.lock().rules.clear();
    }

    /// Remove the rules for `verb` on `resource` (as [`Fault::status`] names them), keeping
    /// the others: one fault ends while another still holds (a watch kept down).
    pub fn lift(&self, verb: &str, resource: &str) {
        self.lock()
            .rules
            .retain(|f| f.verb.as_deref() != Some(verb) || f.resource.as_deref() != Some(resource));
    }

    /// How many requests a rule applied to so far (so a test can tell its faults fired).
    pub fn fired(&self) -> u64 {
        self.lock().fired
    }

    /// Restart the pseudo-random sequence of percentage decisions from `seed`.
    pub fn seed(&self, seed: u64) {
        self.lock().rng = seed;
    }

    /// The first matching rule that fires, consuming one use of its budget.
    pub fn take(&self, request: &RequestInfo<'_>) -> Option<Fault> {
        let mut guard = self.lock();
        let Rules { rules, rng, fired } = &mut *guard;
        for rule in rules.iter_mut().filter(|f| f.matches(request)) {
            if let Some(bp) = rule.basis_points {
                // SplitMix64: the state steps by the golden gamma, the output is its mix.
                let roll = crate::state::splitmix(*rng);
                *rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
                if roll % 10_000 >= u64::from(bp) {
                    continue;
                }
            }
            if let Some(t) = rule.times.as_mut() {
                *t -= 1;
            }
            *fired += 1;
            return Some(rule.clone());
        }
        None
    }
}

/// (verb, resource, code).
pub type CountKey = (String, String, u16);

/// How many 409 answers [`Counters::conflicts`] keeps (the latest).
pub const CONFLICT_LOG: usize = 256;

/// One 409 answer: who asked, for what, and the server's message (for a server-side apply
/// conflict it names the fields and the managers that own them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The client ([`Counters::by_client`]).
    pub client: String,
    /// The verb.
    pub verb: String,
    /// Plural resource, with `/<subresource>`.
    pub resource: String,
    /// `namespace/name` (or `name`) of the object, when the request named one.
    pub object: String,
    /// The answer's message.
    pub message: String,
}

#[derive(Debug, Default)]
struct PerClient {
    counts: BTreeMap<String, BTreeMap<CountKey, u64>>,
    conflicts: std::collections::VecDeque<Conflict>,
}

/// Request counters, and stored mutations per resource.
#[derive(Debug, Default)]
pub struct Counters(
    Mutex<BTreeMap<CountKey, u64>>,
    Mutex<BTreeMap<String, u64>>,
    Mutex<PerClient>,
    Mutex<BTreeMap<String, u64>>,
);

/// Whether `verb` (as the counters record it) changes stored state: `create`, `update`,
/// `patch`, `delete`, `deletecollection`.
pub fn is_write(verb: &str) -> bool {
    matches!(
        verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}

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

    /// Count one request of `client` (also in the totals); a 409 is logged with `object` and
    /// `message`.
    pub fn record_client(
        &self,
        client: &str,
        verb: &str,
        resource: &str,
        code: u16,
        object: Option<&str>,
        message: Option<&str>,
    ) {
        self.record(verb, resource, code);
        let mut m = self
            .2
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *m.counts
            .entry(client.to_owned())
            .or_default()
            .entry((verb.to_owned(), resource.to_owned(), code))
            .or_default() += 1;
        if code == 409 {
            if m.conflicts.len() == CONFLICT_LOG {
                m.conflicts.pop_front();
            }
            m.conflicts.push_back(Conflict {
                client: client.to_owned(),
                verb: verb.to_owned(),
                resource: resource.to_owned(),
                object: object.unwrap_or_default().to_owned(),
                message: message.unwrap_or_default().to_owned(),
            });
        }
    }

    /// Every count per client (see the module contract).
    pub fn by_client(&self) -> BTreeMap<String, BTreeMap<CountKey, u64>> {
        self.2
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .counts
            .clone()
    }

    /// Writes with a 2xx answer sent by `client`.
    pub fn client_writes(&self, client: &str) -> u64 {
        self.2
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .counts
            .get(client)
            .into_iter()
            .flatten()
            .filter(|((v, _, c), _)| is_write(v) && (200..300).contains(c))
            .map(|(_, n)| n)
            .sum()
    }

    /// The latest [`CONFLICT_LOG`] 409 answers, oldest first.
    pub fn conflicts(&self) -> Vec<Conflict> {
        self.2
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .conflicts
            .iter()
            .cloned()
            .collect()
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

    /// Requests answered with `code` (any verb and resource), e.g. the 409s of a run.
    pub fn answered(&self, code: u16) -> u64 {
        self.snapshot()
            .iter()
            .filter(|((_, _, c), _)| *c == code)
            .map(|(_, n)| n)
            .sum()
    }

    /// Writes (create, update, patch, delete, deletecollection) with a 2xx answer.
    pub fn writes(&self) -> u64 {
        self.snapshot()
            .iter()
            .filter(|((v, _, c), _)| is_write(v) && (200..300).contains(c))
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

    /// Count one successful read of an object's metadata only (`PartialObjectMetadata`).
    pub fn record_metadata_read(&self, resource: &str) {
        *self
            .3
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(resource.to_owned())
            .or_default() += 1;
    }

    /// Successful reads of `resource` that returned metadata only (also counted as `get`).
    pub fn metadata_reads(&self, resource: &str) -> u64 {
        self.3
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(resource)
            .copied()
            .unwrap_or_default()
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
        *self
            .2
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = PerClient::default();
        self.3
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(verb: &'a str, resource: &'a str) -> RequestInfo<'a> {
        RequestInfo {
            verb,
            resource,
            name: None,
            continued: false,
        }
    }

    #[test]
    fn lift_removes_only_the_rules_of_its_verb_and_resource() {
        let faults = Faults::default();
        faults.add(Fault::status("watch", "clusterroles", 503));
        faults.add(Fault::status("patch", "clusterroles", 503));
        faults.lift("patch", "clusterroles");
        assert!(faults.take(&request("patch", "clusterroles")).is_none());
        assert!(faults.take(&request("watch", "clusterroles")).is_some());
    }
}
