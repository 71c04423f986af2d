//! Deployment, Job, PersistentVolumeClaim and HorizontalPodAutoscaler health.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use super::health;
use crate::category::{CategorizedError, ErrorCategory};
use crate::condition::Reason;
use crate::health::{ComponentHealth, ComponentState};

/// A Deployment: Ready when the current generation is rolled out and every desired replica is
/// available; `ProgressDeadlineExceeded` is Degraded; a `ReplicaFailure` from a quota is
/// ResourceExhaustion.
pub fn deployment(d: &Deployment) -> ComponentHealth {
    let desired = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(st) = d.status.as_ref() else {
        return health(
            "Deployment",
            ComponentState::Progressing,
            "RolloutPending",
            "no status yet",
        );
    };
    let cond = |t: &str| st.conditions.iter().flatten().find(|c| c.type_ == t);
    if let Some(c) = cond("ReplicaFailure").filter(|c| c.status == "True") {
        let message = c.message.clone().unwrap_or_default();
        if message.contains("exceeded quota") {
            return ComponentHealth::new("Deployment").error(
                CategorizedError::new(ErrorCategory::ResourceExhaustion, message)
                    .with_reason(Reason::custom("QuotaExceeded")),
            );
        }
        let reason = c.reason.clone().unwrap_or_else(|| "ReplicaFailure".into());
        return ComponentHealth::with_state(
            "Deployment",
            ComponentState::Degraded,
            Reason::custom(reason),
            message,
        );
    }
    if let Some(c) = cond("Progressing")
        .filter(|c| c.status == "False" && c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
    {
        return health(
            "Deployment",
            ComponentState::Degraded,
            "ProgressDeadlineExceeded",
            c.message.clone().unwrap_or_default(),
        );
    }
    let generation = d.metadata.generation.unwrap_or(0);
    if st.observed_generation.unwrap_or(0) < generation {
        return health(
            "Deployment",
            ComponentState::Progressing,
            "RolloutPending",
            "new generation not observed yet",
        );
    }
    let available = st.available_replicas.unwrap_or(0);
    let updated = st.updated_replicas.unwrap_or(0);
    let total = st.replicas.unwrap_or(0);
    if available >= desired && updated >= desired && total <= desired {
        return health(
            "Deployment",
            ComponentState::Ready,
            "DeploymentAvailable",
            format!("{available}/{desired} replicas available"),
        );
    }
    health(
        "Deployment",
        ComponentState::Progressing,
        "RolloutInProgress",
        format!("{available}/{desired} replicas available, {updated} updated"),
    )
}

/// A Job: Complete is Ready; `BackoffLimitExceeded`/`DeadlineExceeded` failures are
/// InvalidSpec (the workload itself fails), other failures (eviction, pod failure policy on a
/// disruption) Infrastructure; suspended is Pending; otherwise Progressing.
pub fn job(j: &Job) -> ComponentHealth {
    let st = j.status.as_ref();
    let cond = |t: &str| {
        st.and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .find(|c| c.type_ == t && c.status == "True")
    };
    if cond("Complete").is_some() {
        return health("Job", ComponentState::Ready, "JobComplete", "");
    }
    if let Some(c) = cond("Failed") {
        let reason = c.reason.clone().unwrap_or_else(|| "JobFailed".into());
        let message = c.message.clone().unwrap_or_default();
        let category = match reason.as_str() {
            "BackoffLimitExceeded" | "DeadlineExceeded" | "MaxFailedIndexesExceeded" => {
                ErrorCategory::InvalidSpec
            }
            _ => ErrorCategory::Infrastructure,
        };
        return ComponentHealth::new("Job")
            .error(CategorizedError::new(category, message).with_reason(Reason::custom(reason)));
    }
    if cond("Suspended").is_some() || j.spec.as_ref().and_then(|s| s.suspend) == Some(true) {
        return health("Job", ComponentState::Pending, "JobSuspended", "");
    }
    let active = st.and_then(|s| s.active).unwrap_or(0);
    if active > 0 {
        return health(
            "Job",
            ComponentState::Progressing,
            "JobRunning",
            format!("{active} active pods"),
        );
    }
    health("Job", ComponentState::Progressing, "JobStarting", "")
}

/// A PersistentVolumeClaim: Bound is Ready, Pending is Progressing, Lost is Failed.
pub fn pvc(p: &PersistentVolumeClaim) -> ComponentHealth {
    match p.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Bound") => health(
            "PersistentVolumeClaim",
            ComponentState::Ready,
            "ClaimBound",
            "",
        ),
        Some("Lost") => ComponentHealth::new("PersistentVolumeClaim").error(
            CategorizedError::new(
                ErrorCategory::Infrastructure,
                "the bound volume no longer exists",
            )
            .with_reason(Reason::custom("ClaimLost")),
        ),
        _ => health(
            "PersistentVolumeClaim",
            ComponentState::Progressing,
            "ClaimPending",
            "waiting for a volume",
        ),
    }
}

/// A HorizontalPodAutoscaler (v2): `AbleToScale=False` or `ScalingActive=False` (other than
/// `ScalingDisabled`) is Degraded with the controller's reason; no conditions yet is
/// Progressing; otherwise Ready.
pub fn hpa(h: &HorizontalPodAutoscaler) -> ComponentHealth {
    let conds: Vec<_> = h
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .collect();
    if conds.is_empty() {
        return health(
            "HorizontalPodAutoscaler",
            ComponentState::Progressing,
            "AwaitingMetrics",
            "",
        );
    }
    for t in ["AbleToScale", "ScalingActive"] {
        if let Some(c) = conds.iter().find(|c| c.type_ == t && c.status == "False") {
            let reason = c.reason.clone().unwrap_or_else(|| format!("Not{t}"));
            if reason == "ScalingDisabled" {
                continue;
            }
            return ComponentHealth::with_state(
                "HorizontalPodAutoscaler",
                ComponentState::Degraded,
                Reason::custom(reason),
                c.message.clone().unwrap_or_default(),
            );
        }
    }
    health(
        "HorizontalPodAutoscaler",
        ComponentState::Ready,
        "ScalingActive",
        "",
    )
}
