//! Template compose: components and the resolved facts. Pure.
//!
//! Contract: components in order `RuntimeConfig`, `Model` (upstream), `GPU` (NotAvailable when
//! absent, with the models present), `Discovery` (Ready when discovered or inline; Progressing
//! while a Job runs; Pending when throttled or waiting for the model/GPU; Failed after a failed
//! attempt or unusable output, with the retry time), and the `ServingRuntime` /
//! `ClusterServingRuntime` child once the template can run. The profile and model sources are
//! the new discovery result, the status' previous ones when already discovered, or the spec's
//! inline sources. A discovered template whose GPU is gone for now (a drained node) keeps its
//! profile, its node affinity and its serving runtime: the GPU component says NotAvailable,
//! nothing is pruned. A throttled template's message does not count running Jobs, so waiting
//! for a slot writes no status.

use std::time::Duration;

use k8s_openapi::api::core::v1::NodeAffinity;
use kinfer_api::aim::AIMModelSource;
use kinfer_api::aim::template::{AIMDiscoveryState, AIMProfile};
use kinfer_builders::discovery_job::DiscoveryInput;
use kinfer_state::health::ComponentHealth;
use kinfer_state::{CategorizedError, ComponentState, ErrorCategory, Reason, upstream};

use super::discovery::{Decision, Skip};
use super::fetch::{Fetched, ModelRef};
use super::gpu::GpuAvailability;
use crate::runtime_config::{Resolved, resolve};

/// The template's composed state.
#[derive(Debug, Clone)]
pub struct TemplateState {
    /// The resolved model.
    pub model: Option<ModelRef>,
    /// GPU availability.
    pub gpu: Option<GpuAvailability>,
    /// The discovery Job's input.
    pub job: Option<DiscoveryInput>,
    /// The discovery decision.
    pub decision: Decision,
    /// Bookkeeping for `status.discovery`.
    pub discovery: Option<AIMDiscoveryState>,
    /// The runtime config.
    pub runtime_config: Option<Resolved>,
    /// The profile to record.
    pub profile: Option<AIMProfile>,
    /// The model sources to record.
    pub model_sources: Vec<AIMModelSource>,
    /// Whether the serving runtime is planned.
    pub runtime_planned: bool,
    /// The UID of the discovery Job whose attempt is counted (`status.discoveryJob.uid`).
    pub job_uid: Option<String>,
    /// The node affinity recorded earlier, kept while the GPU is not available now.
    pub kept_affinity: Option<NodeAffinity>,
    /// The template's own cache (`spec.caching.enabled`), set by the pipeline.
    pub cache: Option<super::cache::TemplateCache>,
}

/// What the template's status recorded before this reconcile.
#[derive(Debug, Clone, Copy, Default)]
pub struct Previous<'a> {
    /// `status.profile`.
    pub profile: Option<&'a AIMProfile>,
    /// `status.modelSources`.
    pub model_sources: &'a [AIMModelSource],
    /// `status.resolvedNodeAffinity`.
    pub affinity: Option<&'a NodeAffinity>,
    /// `status.discoveryJob.uid`.
    pub job_uid: Option<&'a str>,
}

impl TemplateState {
    /// Whether discovery is complete (or not needed because sources are inline).
    pub fn discovered(&self) -> bool {
        matches!(
            self.decision,
            Decision::Skip(Skip::Done | Skip::Inline) | Decision::Succeeded(_)
        )
    }

    /// The node affinity pods of this template get: the available GPUs' now, else the one
    /// recorded earlier.
    pub fn node_affinity(&self) -> Option<&NodeAffinity> {
        match &self.gpu {
            Some(GpuAvailability::Available { affinity, .. }) => affinity.as_ref(),
            Some(GpuAvailability::CpuOnly) => None,
            _ => self.kept_affinity.as_ref(),
        }
    }
}

fn secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// Where a violation of the template's spec rules at `path` shows (component, reason):
/// `spec.modelName` on `Model` (`ModelNotFound`), `spec.runtimeConfigName` on `RuntimeConfig`
/// (`ConfigNotFound`), `spec.hardware` on `GPU` (`InvalidHardware`), the rest (env, inline
/// sources, caching env) on `Discovery`. The reasons are the ones resolution gives.
pub fn placed(path: &str) -> (&'static str, &'static str) {
    use crate::service::validation::under;
    if under(path, "spec.modelName") {
        ("Model", "ModelNotFound")
    } else if under(path, "spec.runtimeConfigName") {
        (resolve::COMPONENT, "ConfigNotFound")
    } else if under(path, "spec.hardware") {
        ("GPU", "InvalidHardware")
    } else {
        ("Discovery", "InvalidSpec")
    }
}

/// `components` naming the fields a user fixes: the spec's `violations` (from
/// [`placed`]) in place of their components, a model that does not exist as
/// `spec.modelName: no AIMModel …` (namespace templates look in their namespace first), a
/// runtime config that does not exist after `spec.runtimeConfigName: `.
pub fn with_fields(
    mut components: Vec<ComponentHealth>,
    violations: Vec<ComponentHealth>,
    model_name: &str,
    namespace: Option<&str>,
) -> Vec<ComponentHealth> {
    use crate::service::validation::{at_field, replace};
    let missing = ErrorCategory::MissingUpstreamDependency;
    for c in &mut components {
        if c.component == "Model" {
            for e in c.errors.iter_mut().filter(|e| e.category == missing) {
                e.message = match namespace {
                    Some(ns) => format!(
                        "spec.modelName: no AIMModel {model_name:?} in namespace {ns} and no AIMClusterModel {model_name:?}"
                    ),
                    None => format!("spec.modelName: no AIMClusterModel {model_name:?}"),
                };
            }
        } else if c.component == resolve::COMPONENT {
            *c = at_field(c.clone(), "spec.runtimeConfigName", missing);
        }
    }
    replace(&mut components, violations);
    components
}

/// The type of the template's `Discovered` condition (services read it: see
/// `service::selection::phase`).
pub const DISCOVERED: &str = "Discovered";

/// The `Discovered` condition: (true, reason, message).
pub fn discovered_condition(state: &TemplateState) -> (bool, &'static str, String) {
    match &state.decision {
        Decision::Skip(Skip::Inline) => (
            true,
            "InlineModelSources",
            "model sources are given inline; discovery skipped".into(),
        ),
        Decision::Skip(Skip::Done) | Decision::Succeeded(_) => {
            (true, "DiscoveryComplete", "profile discovered".into())
        }
        Decision::Skip(Skip::NoModel) => (false, "AwaitingModel", "waiting for the model".into()),
        Decision::Skip(Skip::Upstream) => (
            false,
            "AwaitingUpstream",
            "waiting for the runtime config".into(),
        ),
        Decision::Skip(Skip::GpuUnavailable) => (
            false,
            "GPUNotAvailable",
            "discovery waits until the GPU is present".into(),
        ),
        Decision::Running | Decision::Create => {
            (false, "AwaitingDiscovery", "discovery job running".into())
        }
        Decision::Throttled => (
            false,
            "DiscoveryThrottled",
            "waiting for a discovery slot".into(),
        ),
        Decision::Failed { reason, .. } | Decision::Backoff { reason, .. } => {
            (false, failure_reason(reason), reason.clone())
        }
    }
}

fn failure_reason(reason: &str) -> &'static str {
    if reason.starts_with("DiscoveryOutputInvalid") {
        "DiscoveryOutputInvalid"
    } else {
        "DiscoveryFailed"
    }
}

fn discovery_health(
    state: &TemplateState,
    errors: Vec<CategorizedError>,
    max: usize,
) -> ComponentHealth {
    let attempts = state
        .discovery
        .as_ref()
        .and_then(|d| d.attempts)
        .unwrap_or(0);
    let h = |s: ComponentState, reason: &'static str, message: String| {
        ComponentHealth::with_state("Discovery", s, Reason::custom(reason), message)
    };
    let mut health = match &state.decision {
        Decision::Skip(Skip::NoModel) => h(
            ComponentState::Pending,
            "AwaitingModel",
            "waiting for the model".into(),
        ),
        Decision::Skip(Skip::Upstream) => h(
            ComponentState::Pending,
            "AwaitingUpstream",
            "discovery waits for the runtime config".into(),
        ),
        Decision::Skip(Skip::GpuUnavailable) => h(
            ComponentState::Pending,
            "WaitingForGPU",
            "discovery waits until the GPU is present".into(),
        ),
        Decision::Skip(Skip::Inline) => h(
            ComponentState::Ready,
            "InlineModelSources",
            "model sources are given inline".into(),
        ),
        Decision::Skip(Skip::Done) | Decision::Succeeded(_) => h(
            ComponentState::Ready,
            "DiscoveryComplete",
            "profile discovered".into(),
        ),
        Decision::Running => h(
            ComponentState::Progressing,
            "DiscoveryRunning",
            format!("discovery job running (attempt {attempts})"),
        ),
        Decision::Create => h(
            ComponentState::Progressing,
            "DiscoveryJobCreated",
            "creating the discovery job".to_owned(),
        ),
        Decision::Throttled => h(
            ComponentState::Pending,
            "DiscoveryThrottled",
            format!("all {max} discovery slots are in use cluster-wide; waiting for a slot"),
        ),
        Decision::Failed { reason, retry_in } => {
            let when = retry_in.map_or_else(
                || "retrying now".to_owned(),
                |d| format!("retrying in {}s", secs(d)),
            );
            h(
                ComponentState::Failed,
                failure_reason(reason),
                format!("attempt {attempts} failed: {reason}; {when}"),
            )
        }
        Decision::Backoff { reason, retry_in } => h(
            ComponentState::Failed,
            failure_reason(reason),
            format!(
                "attempt {attempts} failed: {reason}; retrying in {}s",
                secs(*retry_in)
            ),
        ),
    };
    if !errors.is_empty() {
        health.state = None;
        health.reason = None;
        health.message = None;
        health.errors = errors;
    }
    health
}

fn gpu_health(gpu: &Result<GpuAvailability, CategorizedError>) -> ComponentHealth {
    let h = |s: ComponentState, reason: &'static str, message: String| {
        ComponentHealth::with_state("GPU", s, Reason::custom(reason), message).upstream()
    };
    match gpu {
        Ok(GpuAvailability::CpuOnly) => {
            h(ComponentState::Ready, "NoGPURequired", "CPU only".into())
        }
        Ok(GpuAvailability::Available { models, .. }) => h(
            ComponentState::Ready,
            "GPUAvailable",
            format!("available: {}", models.join(", ")),
        ),
        Ok(GpuAvailability::NotAvailable { reason, message }) => {
            h(ComponentState::NotAvailable, reason, message.clone())
        }
        Ok(GpuAvailability::Invalid(m)) => ComponentHealth::new("GPU").upstream().error(
            CategorizedError::new(ErrorCategory::InvalidSpec, m.clone())
                .with_reason(Reason::custom("InvalidHardware")),
        ),
        Ok(GpuAvailability::ResourceMismatch(m)) => ComponentHealth::new("GPU").upstream().error(
            CategorizedError::new(ErrorCategory::InvalidSpec, m.clone())
                .with_reason(Reason::custom("GPUResourceMismatch")),
        ),
        Err(e) => ComponentHealth::new("GPU").upstream().error(e.clone()),
    }
}

/// Builds the state and components; `runtime_exists` says whether the serving runtime child
/// exists (an error when its kind could not be listed: KServe not installed), `previous` is
/// what the status recorded.
pub fn compose(
    fetched: Fetched,
    inline_sources: &[AIMModelSource],
    previous: Previous<'_>,
    runtime_component: &'static str,
    runtime_exists: Result<bool, CategorizedError>,
    max_active: usize,
) -> (TemplateState, Vec<ComponentHealth>) {
    let (rc_health, runtime_config) = resolve::resolve(&fetched.runtime_config);
    let model_health = upstream("Model", &fetched.model, |m: &ModelRef| {
        ComponentHealth::with_state(
            "Model",
            ComponentState::Ready,
            Reason::custom("ModelResolved"),
            format!(
                "{} {}",
                m.reference.kind.as_deref().unwrap_or_default(),
                m.reference.name.as_deref().unwrap_or_default()
            ),
        )
    });
    let mut model_health = model_health;
    for e in &mut model_health.errors {
        if e.category == ErrorCategory::MissingUpstreamDependency {
            e.reason = Reason::custom("ModelNotFound");
        }
    }
    let gpu_health = gpu_health(&fetched.gpu);
    let (profile, model_sources) = match &fetched.decision {
        Decision::Succeeded(d) => (Some(d.profile.clone()), d.model_sources.clone()),
        Decision::Skip(Skip::Inline) => (None, inline_sources.to_vec()),
        Decision::Skip(Skip::Done) => (previous.profile.cloned(), previous.model_sources.to_vec()),
        _ => (None, Vec::new()),
    };
    let model = fetched.model.ok().flatten();
    let gpu = fetched.gpu.ok();
    let gpu_available = gpu.as_ref().is_some_and(GpuAvailability::is_available);
    // Discovered, GPU gone for now: the runtime stays (with the affinity recorded earlier).
    let kept = fetched.decision == Decision::Skip(Skip::Done) && !gpu_available;
    let runtime_planned = model.is_some() && (gpu_available || kept);
    let state = TemplateState {
        model,
        gpu,
        job: fetched.job,
        decision: fetched.decision,
        discovery: fetched.discovery,
        runtime_config,
        profile,
        model_sources,
        runtime_planned,
        job_uid: fetched
            .job_uid
            .or_else(|| previous.job_uid.map(str::to_owned)),
        kept_affinity: previous.affinity.cloned(),
        cache: None,
    };
    let discovery = discovery_health(&state, fetched.discovery_errors, max_active);
    let mut components = vec![rc_health, model_health, gpu_health, discovery];
    if state.runtime_planned {
        components.push(match runtime_exists {
            // Its kind not served (KServe not installed: `KindNotInstalled`, naming the CRD),
            // or its listing failed.
            Err(e) => ComponentHealth::new(runtime_component)
                .downstream()
                .error(e),
            Ok(true) => ComponentHealth::with_state(
                runtime_component,
                ComponentState::Ready,
                Reason::custom("RuntimeCreated"),
                "",
            )
            .downstream(),
            Ok(false) => ComponentHealth::with_state(
                runtime_component,
                ComponentState::Progressing,
                Reason::custom("CreatingRuntime"),
                "",
            )
            .downstream(),
        });
    }
    (state, components)
}

#[cfg(test)]
mod tests {
    use kinfer_api::aim::AIMClusterServiceTemplate;
    use serde_json::json;

    use super::*;
    use crate::service::validation::place;

    #[test]
    fn components_name_the_spec_fields() {
        let t: AIMClusterServiceTemplate = serde_json::from_value(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMClusterServiceTemplate",
            "metadata": {"name": "t"},
            "spec": {"modelName": "$(rm -rf /)", "runtimeConfigName": "ok"}}))
        .expect("template");
        let missing = |c: &str, m: &str| {
            ComponentHealth::new(c.to_owned())
                .upstream()
                .error(CategorizedError::new(
                    ErrorCategory::MissingUpstreamDependency,
                    m.to_owned(),
                ))
        };
        let fetched = vec![
            missing(resolve::COMPONENT, "runtime config \"ok\" not found"),
            missing("Model", "Model not found"),
        ];
        let out = with_fields(fetched.clone(), place(&t, placed), "$(rm -rf /)", None);
        assert_eq!(
            out[0].effective_message(),
            "spec.runtimeConfigName: runtime config \"ok\" not found"
        );
        assert_eq!(out[1].effective_reason().to_string(), "ModelNotFound");
        assert_eq!(out[1].errors[0].category, ErrorCategory::InvalidSpec);
        assert!(
            out[1]
                .effective_message()
                .starts_with("spec.modelName: \"$(rm -rf /)\" is not a valid object name"),
            "{}",
            out[1].effective_message()
        );

        // A valid name that names nothing: the field and where it was looked for.
        let out = with_fields(fetched, Vec::new(), "qwen", Some("team"));
        assert_eq!(
            out[1].effective_message(),
            "spec.modelName: no AIMModel \"qwen\" in namespace team and no AIMClusterModel \"qwen\""
        );
    }
}
