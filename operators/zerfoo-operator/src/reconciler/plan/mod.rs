//! Plan: the children a service should have. Pure: no client, no clock, no randomness.
//!
//! Contract:
//! - The spec is validated first ([`Validate`]); any violation fails the plan with every field
//!   path ([`PlanError::InvalidSpec`]), so nothing is created or changed.
//! - Always: Deployment `<name>-primary`, Services `<name>-svc` (both tracks) and
//!   `<name>-primary`. With a canary: Deployment and Service `<name>-canary`. With
//!   autoscaling: HPA `<name>-hpa` on the primary. With a gateway: HTTPRoute `<name>-route`
//!   with weights `100 - weight` / `weight`. Everything is owned by the service; what is no
//!   longer planned (canary removed, autoscaling or gateway turned off) is an orphan the engine
//!   deletes.
//! - Primary replicas: `spec.replicas`. With autoscaling the primary releases the field
//!   ([`replicas_field`], [`kinfer_state::handover`]): the Deployment is created with
//!   `spec.replicas`, then the engine hands the field over (without force, so an HPA write is
//!   never undone) and never applies it again; turning autoscaling off applies it again, which
//!   takes it back.
//! - Canary replicas ([`canary_replicas`]): `ceil(base × weight / 100)`, at least 1 while the
//!   weight is positive, 0 at weight 0; `base` is `spec.replicas`, or under autoscaling the
//!   primary's current replicas.
//! - The objects themselves are built by [`kinfer_builders::zerfoo`] (names from
//!   [`kinfer_builders::naming::zerfoo`]); this step resolves their inputs: replica counts,
//!   `gpuMemory` to bytes with the configured vendor and resource ([`gpu`]), probe durations
//!   to whole seconds ([`health_probe`]), the Gateway.

use kinfer_api::quantity;
use kinfer_api::validation::{FieldErrors, Validate};
use kinfer_api::zerfoo::{GoDuration, HealthCheckSpec, ResourceSpec, ZerfooInferenceService};
use kinfer_builders::Parent;
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain, NameError};
use kinfer_builders::zerfoo::{
    self as build, AutoscalerInput, DeploymentInput, Gpu, HealthProbe, RouteInput, Track,
};
use kinfer_state::pipeline::DesiredError;
use kinfer_state::{Categorize, DesiredObject, ErrorCategory, FieldPath, Observation, PlanResult};
use kube::ResourceExt;

use super::compose::State;
use crate::config::OperatorConfig;

/// Errors of the plan step; every one is a spec the user must change (InvalidSpec).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The spec breaks the ZerfooInferenceService rules.
    #[error("{0}")]
    InvalidSpec(FieldErrors),
    /// The service's name or namespace is not usable for children.
    #[error("metadata: {0}")]
    Name(NameError),
    /// `spec.resources.gpuMemory` does not parse as a byte quantity.
    #[error("spec.resources.gpuMemory: {value:?} is not a byte quantity")]
    GpuMemory {
        /// The text.
        value: String,
    },
    /// A builder refused its input.
    #[error("build children: {0}")]
    BuildChild(kinfer_builders::Error),
    /// A child does not serialise.
    #[error("serialise child: {0}")]
    SerializeChild(DesiredError),
}

impl Categorize for PlanError {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::InvalidSpec
    }
}

impl From<kinfer_builders::Error> for PlanError {
    fn from(e: kinfer_builders::Error) -> Self {
        Self::BuildChild(e)
    }
}

impl From<DesiredError> for PlanError {
    fn from(e: DesiredError) -> Self {
        Self::SerializeChild(e)
    }
}

/// The primary's `spec.replicas` field, which an HPA owns while autoscaling.
pub fn replicas_field() -> FieldPath {
    FieldPath::parse("spec.replicas")
}

/// The replica count the canary's share is computed from; see the module contract.
pub fn canary_base(object: &ZerfooInferenceService, state: &State) -> i32 {
    if object.spec.autoscaling().is_none() {
        return object.spec.replicas;
    }
    state
        .primary
        .as_ref()
        .and_then(|d| d.spec.as_ref())
        .and_then(|s| s.replicas)
        .or_else(|| {
            state
                .hpa
                .as_ref()
                .and_then(|h| h.status.as_ref())
                .and_then(|s| s.current_replicas)
        })
        .unwrap_or(object.spec.replicas)
}

/// `ceil(base × weight / 100)`, at least 1 while `weight > 0`, 0 otherwise.
pub fn canary_replicas(base: i32, weight: i32) -> i32 {
    if weight <= 0 || base <= 0 {
        return i32::from(weight > 0);
    }
    let share = (i64::from(base) * i64::from(weight.min(100)) + 99) / 100;
    i32::try_from(share).unwrap_or(i32::MAX).max(1)
}

/// The GPU request `resources.gpuMemory` asks for, if any: one GPU of the configured
/// resource on a node of the configured vendor with at least that much memory.
pub fn gpu(
    resources: Option<&ResourceSpec>,
    config: &OperatorConfig,
) -> Result<Option<Gpu>, PlanError> {
    let Some(raw) = resources.and_then(|r| r.gpu_memory.as_deref()) else {
        return Ok(None);
    };
    let memory_bytes = quantity::parse_bytes(raw).map_err(|_| PlanError::GpuMemory {
        value: raw.to_owned(),
    })?;
    Ok(Some(Gpu {
        resource: config.gpu_resource().to_owned(),
        vendor: config.gpu_vendor,
        memory_bytes,
    }))
}

/// A duration as whole seconds, rounded up, at least 1.
fn seconds(duration: &GoDuration) -> i32 {
    let s = duration.seconds().unwrap_or(1.0).ceil().max(1.0);
    if s >= f64::from(i32::MAX) {
        i32::MAX
    } else {
        // In range and integral after the checks above.
        #[allow(clippy::cast_possible_truncation)]
        let whole = s as i32;
        whole
    }
}

/// The probes `healthCheck` asks for: period = interval, timeout = timeout.
pub fn health_probe(health: &HealthCheckSpec) -> HealthProbe {
    HealthProbe {
        path: health.path.clone(),
        period_seconds: seconds(&health.interval),
        timeout_seconds: seconds(&health.timeout),
    }
}

/// The plan for one service; see the module contract.
pub fn plan(
    object: &ZerfooInferenceService,
    observation: &Observation<State>,
    config: &OperatorConfig,
    manager: &str,
) -> Result<PlanResult, PlanError> {
    object.validate().map_err(PlanError::InvalidSpec)?;
    let state = &observation.state;
    let parent = Parent {
        name: Dns1123Subdomain::new(object.name_any()).map_err(PlanError::Name)?,
        namespace: Dns1123Label::new(object.namespace().unwrap_or_default())
            .map_err(PlanError::Name)?,
        managed_by: manager.to_owned(),
    };
    let spec = &object.spec;
    let resources = spec.resources.as_ref();
    let primary = DeploymentInput {
        parent: parent.clone(),
        track: Track::Primary,
        model_ref: spec.model_ref.clone(),
        image: config.server_image.clone(),
        replicas: Some(spec.replicas),
        cpu: resources.and_then(|r| r.cpu.clone()),
        memory: resources.and_then(|r| r.memory.clone()),
        gpu: gpu(resources, config)?,
        health: spec.health_check.as_ref().map(health_probe),
    };
    let mut plan = PlanResult::default();
    let mut push = |o: Result<_, DesiredError>| -> Result<(), PlanError> {
        plan.apply.push(o?);
        Ok(())
    };
    let mut primary_object = DesiredObject::from_typed(&build::deployment(&primary)?)?;
    if spec.autoscaling().is_some() {
        primary_object = primary_object.release(replicas_field());
    }
    push(Ok(primary_object))?;
    push(DesiredObject::from_typed(&build::shared_service(&parent)?))?;
    push(DesiredObject::from_typed(&build::track_service(
        &parent,
        Track::Primary,
    )?))?;
    if let Some(canary) = &spec.canary {
        let input = DeploymentInput {
            track: Track::Canary,
            model_ref: canary.model_ref.clone(),
            replicas: Some(canary_replicas(canary_base(object, state), canary.weight)),
            ..primary
        };
        push(DesiredObject::from_typed(&build::deployment(&input)?))?;
        push(DesiredObject::from_typed(&build::track_service(
            &parent,
            Track::Canary,
        )?))?;
    }
    if let Some((min_replicas, max_replicas)) = spec.autoscaling() {
        push(DesiredObject::from_typed(&build::autoscaler(
            &AutoscalerInput {
                parent: parent.clone(),
                min_replicas,
                max_replicas,
                cpu_target: config.cpu_target,
            },
        )?))?;
    }
    if let Some(gateway) = &state.gateway {
        push(DesiredObject::from_typed(&build::route(&RouteInput {
            parent,
            gateway: gateway.clone(),
            canary_weight: spec.canary.as_ref().map(|c| c.weight),
        })?))?;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::{GoDuration, canary_replicas, seconds};

    #[test]
    fn probe_seconds_round_up() {
        assert_eq!(seconds(&"30s".into()), 30);
        assert_eq!(seconds(&"1500ms".into()), 2);
        assert_eq!(seconds(&"2m".into()), 120);
        assert_eq!(seconds(&GoDuration::Nanoseconds(30_000_000_000)), 30);
        assert_eq!(seconds(&GoDuration::Nanoseconds(1_500_000_000)), 2);
    }

    #[test]
    fn canary_share_rounds_up_and_keeps_one_pod() {
        assert_eq!(canary_replicas(2, 20), 1);
        assert_eq!(canary_replicas(10, 20), 2);
        assert_eq!(canary_replicas(10, 25), 3);
        assert_eq!(canary_replicas(5, 1), 1);
        assert_eq!(canary_replicas(5, 0), 0);
        assert_eq!(canary_replicas(4, 100), 4);
        assert_eq!(canary_replicas(0, 50), 1);
    }
}
