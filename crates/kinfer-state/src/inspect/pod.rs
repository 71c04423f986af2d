//! Pod-list health and pod failure diagnosis (NOTES.md row 29).

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use crate::category::{CategorizedError, ErrorCategory};
use crate::condition::Reason;
use crate::health::{ComponentHealth, ComponentState};

/// What one pod's status says.
#[derive(Debug, Clone, PartialEq)]
pub struct PodDiagnosis {
    /// The pod's state as a component.
    pub state: ComponentState,
    /// The specific reason.
    pub reason: Reason,
    /// The message, naming the pod and container.
    pub message: String,
    /// The error, when the trouble has a category.
    pub error: Option<CategorizedError>,
}

impl PodDiagnosis {
    fn ok(state: ComponentState, reason: &'static str, message: String) -> Self {
        Self {
            state,
            reason: Reason::custom(reason),
            message,
            error: None,
        }
    }

    fn err(category: ErrorCategory, reason: &'static str, message: String) -> Self {
        let reason = Reason::custom(reason);
        let error = CategorizedError::new(category, message.clone()).with_reason(reason.clone());
        Self {
            state: ComponentState::Failed,
            reason,
            message,
            error: Some(error),
        }
    }

    /// How bad this diagnosis is; lower is worse (used to pick the pod that explains a list).
    fn severity(&self) -> u8 {
        match (&self.error, self.state) {
            (Some(e), _) if e.category.is_user_fixable() => 0,
            (Some(e), _) if e.category == ErrorCategory::ResourceExhaustion => 1,
            (Some(_), _) => 2,
            (None, s) => 3 + s.priority(),
        }
    }
}

/// Classify an image pull failure message: `(category, reason)`. Credentials refused are Auth
/// (`ImagePullAuthFailure`), a missing image MissingUpstream (`ImageNotFound`), DNS, connection
/// and TLS trouble and anything else Infrastructure (`ImagePullBackOff`).
///
/// Phrases match on word boundaries and HTTP codes only next to a status word (`401
/// Unauthorized`, `status 404`, `code: 403`), so a digest containing `401` or a host that
/// does not resolve (`no such host`) is not mistaken for an auth or not-found answer.
pub fn classify_image_pull(message: &str) -> (ErrorCategory, &'static str) {
    let m = message.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| contains_phrase(&m, n));
    if any(&[
        "no such host",
        "connection refused",
        "connection reset",
        "i/o timeout",
        "tls handshake timeout",
        "server misbehaving",
        "temporary failure in name resolution",
        "network is unreachable",
    ]) {
        return (ErrorCategory::Infrastructure, "ImagePullBackOff");
    }
    if any(&[
        "unauthorized",
        "authentication required",
        "authorization failed",
        "forbidden",
        "denied",
        "no basic auth credentials",
        "may require authorization",
    ]) || has_status(&m, &["401", "403"])
    {
        (ErrorCategory::Auth, "ImagePullAuthFailure")
    } else if any(&[
        "not found",
        "manifest unknown",
        "name unknown",
        "does not exist",
        "no such image",
        "no such manifest",
        "no such repository",
    ]) || has_status(&m, &["404"])
    {
        (ErrorCategory::MissingUpstreamDependency, "ImageNotFound")
    } else {
        (ErrorCategory::Infrastructure, "ImagePullBackOff")
    }
}

/// `phrase` occurs in `text` with no letter or digit directly before or after it.
fn contains_phrase(text: &str, phrase: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(phrase).any(|(i, _)| {
        let before = i.checked_sub(1).map(|j| bytes[j]);
        let after = bytes.get(i + phrase.len()).copied();
        !before.is_some_and(|b| b.is_ascii_alphanumeric())
            && !after.is_some_and(|b| b.is_ascii_alphanumeric())
    })
}

/// One of `codes` occurs as a whole word next to a status word (`status 401`, `code: 404`,
/// `401 unauthorized`, `http 403`, `403 forbidden`, `404 not found`).
fn has_status(text: &str, codes: &[&str]) -> bool {
    const BEFORE: [&str; 5] = ["status", "code", "http", "statuscode", "response"];
    const AFTER: [&str; 4] = ["unauthorized", "forbidden", "not found", "(not found)"];
    let bytes = text.as_bytes();
    codes.iter().any(|code| {
        text.match_indices(code).any(|(i, _)| {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + code.len()).copied();
            if before.is_some_and(|b| b.is_ascii_alphanumeric())
                || after.is_some_and(|b| b.is_ascii_alphanumeric())
            {
                return false;
            }
            let head = text[..i].trim_end_matches([' ', ':', '=']);
            let tail = text[i + code.len()..].trim_start();
            BEFORE.iter().any(|w| head.ends_with(w)) || AFTER.iter().any(|w| tail.starts_with(w))
        })
    })
}

/// Classify the tail of a failed container's log (the caller fetches about 50 lines):
/// RBAC/forbidden is Infrastructure; missing repositories or buckets InvalidSpec
/// (`SourceNotFound`); refused storage or hub credentials Auth (`SourceAuthFailure`); a full disk
/// or quota ResourceExhaustion (`StorageFull`). `None` when nothing is recognised.
pub fn classify_log_tail(log: &str) -> Option<(ErrorCategory, &'static str)> {
    let m = log.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| m.contains(n));
    if any(&[
        "no space left",
        "enospc",
        "disk quota exceeded",
        "quota exceeded",
    ]) {
        Some((ErrorCategory::ResourceExhaustion, "StorageFull"))
    } else if any(&[
        "invalidaccesskeyid",
        "signaturedoesnotmatch",
        "cannot access gated repo",
        "401 client error",
        "invalid credentials",
        "accessdenied",
    ]) {
        Some((ErrorCategory::Auth, "SourceAuthFailure"))
    } else if any(&["forbidden", "rbac"]) {
        Some((ErrorCategory::Infrastructure, "Forbidden"))
    } else if any(&[
        "repository not found",
        "nosuchkey",
        "nosuchbucket",
        "404 client error",
        "entrynotfound",
    ]) {
        Some((ErrorCategory::InvalidSpec, "SourceNotFound"))
    } else {
        None
    }
}

/// Diagnose one pod from its status.
pub fn diagnose_pod(pod: &Pod) -> PodDiagnosis {
    let name = pod.metadata.name.as_deref().unwrap_or("<unnamed>");
    let Some(st) = pod.status.as_ref() else {
        return PodDiagnosis::ok(
            ComponentState::Pending,
            "PodPending",
            format!("pod {name} has no status yet"),
        );
    };
    if st.reason.as_deref() == Some("Evicted") {
        let msg = format!(
            "pod {name} was evicted: {}",
            st.message.as_deref().unwrap_or("")
        );
        let mut d = PodDiagnosis::err(ErrorCategory::Infrastructure, "Evicted", msg);
        d.state = ComponentState::Degraded;
        return d;
    }
    let containers: Vec<&ContainerStatus> = st
        .init_container_statuses
        .iter()
        .flatten()
        .chain(st.container_statuses.iter().flatten())
        .collect();
    for c in &containers {
        if let Some(d) = diagnose_container(name, c) {
            return d;
        }
    }
    if let Some(c) = st
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
    {
        let reason = if c.reason.as_deref() == Some("Unschedulable") {
            "Unschedulable"
        } else {
            "PodPending"
        };
        let msg = format!(
            "pod {name}: {}",
            c.message.as_deref().unwrap_or("not scheduled")
        );
        return PodDiagnosis::ok(ComponentState::Pending, reason, msg);
    }
    match st.phase.as_deref() {
        Some("Succeeded") => PodDiagnosis::ok(
            ComponentState::Ready,
            "PodSucceeded",
            format!("pod {name} succeeded"),
        ),
        Some("Failed") => {
            let msg = format!("pod {name} failed: {}", st.message.as_deref().unwrap_or(""));
            let mut d = PodDiagnosis::ok(ComponentState::Failed, "PodFailed", msg);
            d.state = ComponentState::Failed;
            d
        }
        Some("Running")
            if !containers.is_empty() && containers.iter().all(|c| c.ready || is_init_done(c)) =>
        {
            PodDiagnosis::ok(
                ComponentState::Ready,
                "PodReady",
                format!("pod {name} is ready"),
            )
        }
        Some("Running") => PodDiagnosis::ok(
            ComponentState::Progressing,
            "Starting",
            format!("pod {name} is running, not ready"),
        ),
        _ => PodDiagnosis::ok(
            ComponentState::Progressing,
            "ContainerCreating",
            format!("pod {name} is starting"),
        ),
    }
}

fn is_init_done(c: &ContainerStatus) -> bool {
    c.state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .is_some_and(|t| t.exit_code == 0)
}

fn diagnose_container(pod: &str, c: &ContainerStatus) -> Option<PodDiagnosis> {
    let who = format!("pod {pod} container {}", c.name);
    let oom = |s: &Option<k8s_openapi::api::core::v1::ContainerState>| {
        s.as_ref()
            .and_then(|s| s.terminated.as_ref())
            .is_some_and(|t| t.reason.as_deref() == Some("OOMKilled"))
    };
    // The last termination only explains a container that is not ready now: a container that
    // was OOM-killed once and recovered is fine.
    if oom(&c.state) || (!c.ready && oom(&c.last_state)) {
        return Some(PodDiagnosis::err(
            ErrorCategory::ResourceExhaustion,
            "OOMKilled",
            format!("{who} was killed: out of memory"),
        ));
    }
    let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref())?;
    let message = waiting.message.clone().unwrap_or_default();
    match waiting.reason.as_deref()? {
        "ErrImagePull" | "ImagePullBackOff" => {
            let (category, reason) = classify_image_pull(&message);
            let mut d = PodDiagnosis::err(category, reason, format!("{who}: {message}"));
            if category == ErrorCategory::Infrastructure {
                d.state = ComponentState::Degraded;
            }
            Some(d)
        }
        "InvalidImageName" => Some(PodDiagnosis::err(
            ErrorCategory::InvalidSpec,
            "InvalidImageName",
            format!("{who}: {message}"),
        )),
        "CreateContainerConfigError" => Some(PodDiagnosis::err(
            ErrorCategory::MissingUpstreamDependency,
            "CreateContainerConfigError",
            format!("{who}: {message}"),
        )),
        "CrashLoopBackOff" => {
            let last = c.last_state.as_ref().and_then(|s| s.terminated.as_ref());
            let detail = last.map_or_else(String::new, |t| {
                format!(
                    " (last exit code {}, {})",
                    t.exit_code,
                    t.reason.as_deref().unwrap_or("Error")
                )
            });
            Some(PodDiagnosis::ok(
                ComponentState::Degraded,
                "CrashLoopBackOff",
                format!("{who} is crash-looping{detail}"),
            ))
        }
        _ => None,
    }
}

/// A list of pods (e.g. selected by a workload's labels): Ready when at least `min_ready` pods
/// are ready; otherwise the worst pod explains the state. No pods at all is Progressing
/// (`PodsNotCreated`).
pub fn pods(list: &[Pod], min_ready: usize) -> ComponentHealth {
    let diagnoses: Vec<PodDiagnosis> = list.iter().map(diagnose_pod).collect();
    let ready = diagnoses
        .iter()
        .filter(|d| d.state == ComponentState::Ready)
        .count();
    if ready >= min_ready.max(1) {
        return ComponentHealth::with_state(
            "Pods",
            ComponentState::Ready,
            Reason::custom("PodsReady"),
            format!("{ready}/{} pods ready", list.len()),
        );
    }
    let Some(worst) = diagnoses.into_iter().min_by_key(PodDiagnosis::severity) else {
        return ComponentHealth::with_state(
            "Pods",
            ComponentState::Progressing,
            Reason::custom("PodsNotCreated"),
            "no pods yet",
        );
    };
    if worst.state == ComponentState::Ready {
        return ComponentHealth::with_state(
            "Pods",
            ComponentState::Progressing,
            Reason::custom("WaitingForPods"),
            format!(
                "{ready}/{} pods ready, {} required",
                list.len(),
                min_ready.max(1)
            ),
        );
    }
    let mut h = ComponentHealth::with_state("Pods", worst.state, worst.reason, worst.message);
    if let Some(e) = worst.error {
        h.state = None; // the error decides, so a user-fixable pull error fails the object
        h = h.error(e);
    }
    h
}
