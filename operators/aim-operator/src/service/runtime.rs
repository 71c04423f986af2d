//! The InferenceService's pods and autoscaler (NOTES rows 16 and 29), and `status.runtime`.
//! Pure.
//!
//! Contract:
//! - `InferenceServicePods`: the pods labelled `serving.kserve.io/inferenceservice=<isvc>`,
//!   diagnosed by [`kinfer_state::inspect::pods`]: Ready with at least one ready pod; image
//!   pull errors are classified from the pod status (`ImagePullAuthFailure` Auth, so the
//!   service is Failed; `ImageNotFound` MissingUpstream; anything else `ImagePullBackOff`
//!   Infrastructure), as are OOM kills and crash loops. When no pod is visible (KServe has not
//!   created them, or a cluster without KServe's pod controller such as the test cluster) the
//!   component follows the InferenceService: Ready when KServe reports it Ready (its
//!   readiness counts ready pods), else Progressing `PodsNotCreated`.
//! - `HPA` (only with `minReplicas`, `maxReplicas` or `autoScaling`, where KServe's
//!   autoscaler class is `external`): the service owns an `autoscaling/v2` HPA on the
//!   predictor Deployment `<isvc>-predictor` between min and max, on the first pod metric of
//!   `autoScaling` with a value target (per-pod average), else CPU at 80% of requests. Absent
//!   is Progressing `HPANotFound`; a scaling condition False is Degraded with the HPA's
//!   reason; no condition and no desired count yet is Progressing `WaitingForMetrics`;
//!   otherwise Ready `HPAOperational`.
//! - `status.runtime`: fixed replicas give `replicas: "N"`; autoscaling gives min, max, the
//!   HPA's current and desired counts and `replicas: "current/desired (min-max)"`.

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Pod;
use kinfer_api::aim::AIMService;
use kinfer_api::aim::service::AIMServiceRuntimeStatus;
use kinfer_builders::autoscaling::{HpaInput, Metric, Target};
use kinfer_builders::kserve::Scaling;
use kinfer_builders::naming::Dns1035Label;
use kinfer_state::health::ComponentHealth;
use kinfer_state::{ComponentState, Reason};

/// The pods component (`InferenceServicePodsReady`).
pub const PODS: &str = "InferenceServicePods";
/// The autoscaler component (`HPAReady`).
pub const HPA: &str = "HPA";
/// The label KServe puts on an InferenceService's pods.
pub const ISVC_POD_LABEL: &str = "serving.kserve.io/inferenceservice";
/// The AIM label of the InferenceService that KServe copies to its pods: the pod watch is
/// scoped to it.
pub const AIM_POD_LABEL: &str = crate::scheme::labels::SERVICE;

fn health(
    component: &'static str,
    s: ComponentState,
    reason: &str,
    msg: String,
) -> ComponentHealth {
    ComponentHealth::with_state(component, s, Reason::custom(reason.to_owned()), msg).downstream()
}

/// The pods component of InferenceService `isvc`; `isvc_ready` is KServe's `Ready`.
pub fn pods_health(isvc: &str, pods: &[Pod], isvc_ready: bool) -> ComponentHealth {
    if pods.is_empty() {
        return if isvc_ready {
            health(
                PODS,
                ComponentState::Ready,
                "InferenceServiceReady",
                format!("no pods of {isvc} visible; KServe reports the InferenceService Ready"),
            )
        } else {
            health(
                PODS,
                ComponentState::Progressing,
                "PodsNotCreated",
                format!("no pods of {isvc} yet"),
            )
        };
    }
    let mut h = kinfer_state::inspect::pods(pods, 1).downstream();
    h.component = PODS.into();
    h
}

/// The predictor Deployment KServe creates for InferenceService `isvc` (raw deployment mode).
pub fn predictor(isvc: &str) -> Result<Dns1035Label, kinfer_builders::naming::NameError> {
    Dns1035Label::new(format!("{isvc}-predictor"))
}

fn metric(svc: &AIMService) -> Option<Metric> {
    svc.spec
        .auto_scaling
        .iter()
        .flat_map(|a| &a.metrics)
        .filter_map(|m| m.podmetric.as_ref())
        .find_map(|p| {
            let name = p.metric.metric_names.first()?;
            let value = p
                .target
                .average_value
                .clone()
                .or_else(|| p.target.value.clone())?;
            Some(Metric::Pods {
                name: name.clone(),
                average_value: value,
            })
        })
}

/// The HPA input of an autoscaled service (`None` for fixed replicas).
pub fn hpa_input(
    svc: &AIMService,
    parent: &kinfer_builders::Parent,
    isvc: &str,
    scaling: Scaling,
) -> Result<Option<HpaInput>, kinfer_builders::Error> {
    let Scaling::External { min, max } = scaling else {
        return Ok(None);
    };
    Ok(Some(HpaInput {
        parent: parent.clone(),
        app: kinfer_builders::kserve::APP.to_owned(),
        component: "autoscaler".to_owned(),
        target: Target {
            api_version: "apps/v1".to_owned(),
            kind: "Deployment".to_owned(),
            name: predictor(isvc)?,
        },
        min_replicas: min,
        max_replicas: max,
        metric: metric(svc),
    }))
}

/// The HPA component from the live HPA (`None`: not created yet).
pub fn hpa_health(live: Option<&HorizontalPodAutoscaler>, name: &str) -> ComponentHealth {
    let Some(h) = live else {
        return health(
            HPA,
            ComponentState::Progressing,
            "HPANotFound",
            format!("creating HorizontalPodAutoscaler {name}"),
        );
    };
    let mut inspected = kinfer_state::inspect::hpa(h).downstream();
    inspected.component = HPA.into();
    match inspected.effective_state() {
        ComponentState::Ready => health(
            HPA,
            ComponentState::Ready,
            "HPAOperational",
            format!("HorizontalPodAutoscaler {name} is scaling"),
        ),
        ComponentState::Progressing => {
            let desired = h.status.as_ref().map(|s| s.desired_replicas);
            match desired {
                Some(n) => health(
                    HPA,
                    ComponentState::Ready,
                    "HPAOperational",
                    format!("HorizontalPodAutoscaler {name} wants {n} replicas"),
                ),
                None => health(
                    HPA,
                    ComponentState::Progressing,
                    "WaitingForMetrics",
                    format!("HorizontalPodAutoscaler {name} has no metrics yet"),
                ),
            }
        }
        _ => inspected,
    }
}

/// `status.runtime`; see the module contract.
pub fn runtime_status(
    scaling: Scaling,
    hpa: Option<&HorizontalPodAutoscaler>,
) -> AIMServiceRuntimeStatus {
    match scaling {
        Scaling::Fixed { replicas } => AIMServiceRuntimeStatus {
            replicas: Some(replicas.to_string()),
            ..AIMServiceRuntimeStatus::default()
        },
        Scaling::External { min, max } => {
            let st = hpa.and_then(|h| h.status.as_ref());
            let current = st.and_then(|s| s.current_replicas);
            let desired = st.map(|s| s.desired_replicas);
            let show = |n: Option<i32>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
            AIMServiceRuntimeStatus {
                current_replicas: current,
                desired_replicas: desired,
                min_replicas: Some(min),
                max_replicas: Some(max),
                replicas: Some(format!("{}/{} ({min}-{max})", show(current), show(desired))),
            }
        }
    }
}
