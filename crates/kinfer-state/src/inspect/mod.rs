//! Health inspectors: one observed object (or list) to a [`ComponentHealth`].
//!
//! Contract: inspectors are pure functions over what was fetched; they never call the API
//! server and never read a clock. Each returns a health with an explicit state and a specific
//! reason (`ImagePullAuthFailure`, `CrashLoopBackOff`, `Unschedulable`, ...) and, where the
//! trouble has an [`ErrorCategory`](crate::ErrorCategory), a categorised error, so status
//! derivation and the retry decision see it. Component name and direction are set by the
//! caller (usually through [`crate::health::downstream`]); inspectors name the component after
//! the kind.
//!
//! Built-in kinds are read through their k8s-openapi types; third-party kinds (HTTPRoute,
//! InferencePool, KServe InferenceService) through their JSON status so no typed third-party
//! dependency is needed.

mod custom;
mod pod;
mod workload;

pub use custom::{http_route, http_route_any_parent, inference_pool, inference_service};
pub use pod::{PodDiagnosis, classify_image_pull, classify_log_tail, diagnose_pod, pods};
pub use workload::{deployment, hpa, job, pvc};

use crate::condition::Reason;
use crate::health::{ComponentHealth, ComponentState};

fn health(
    component: &'static str,
    state: ComponentState,
    reason: &'static str,
    message: impl Into<String>,
) -> ComponentHealth {
    ComponentHealth::with_state(component, state, Reason::custom(reason), message)
}

#[cfg(test)]
#[path = "../unit_tests/inspect.rs"]
mod tests;
