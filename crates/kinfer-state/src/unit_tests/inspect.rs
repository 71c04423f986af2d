#![allow(clippy::type_complexity)] // case tables

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use serde_json::{Value, json};

use super::*;
use crate::category::ErrorCategory;
use crate::health::{ComponentHealth, ComponentState};

fn summary(h: &ComponentHealth) -> (ComponentState, String, Option<ErrorCategory>) {
    (
        h.effective_state(),
        h.effective_reason().to_string(),
        h.errors.first().map(|e| e.category),
    )
}

fn waiting_pod(reason: &str, message: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "status": {"phase": "Pending", "containerStatuses": [{
            "name": "main", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": reason, "message": message}}
        }]}
    }))
    .unwrap()
}

#[test]
fn image_pull_classification() {
    use ErrorCategory::*;
    let cases = [
        (
            "failed to authorize: failed to fetch anonymous token: unexpected status: 401 Unauthorized",
            Auth,
            "ImagePullAuthFailure",
        ),
        (
            "pull access denied, repository does not exist or may require authorization",
            Auth,
            "ImagePullAuthFailure",
        ),
        (
            "failed to resolve reference \"docker.io/x/y:1\": docker.io/x/y:1: not found",
            MissingUpstreamDependency,
            "ImageNotFound",
        ),
        (
            "manifest unknown: manifest unknown",
            MissingUpstreamDependency,
            "ImageNotFound",
        ),
        (
            "dial tcp 10.0.0.1:443: i/o timeout",
            Infrastructure,
            "ImagePullBackOff",
        ),
        (
            "Back-off pulling image \"x\"",
            Infrastructure,
            "ImagePullBackOff",
        ),
        // A digest that happens to contain 401/404 is not a status code.
        (
            "failed to pull \"r.io/m@sha256:a401b4040c\": rpc error: code = Unknown desc = context canceled",
            Infrastructure,
            "ImagePullBackOff",
        ),
        // DNS failure is infrastructure, not a missing image.
        (
            "dial tcp: lookup registry.example: no such host",
            Infrastructure,
            "ImagePullBackOff",
        ),
        (
            "unexpected status code 401 Unauthorized",
            Auth,
            "ImagePullAuthFailure",
        ),
        (
            "reading manifest 1.0: unexpected status: 404",
            MissingUpstreamDependency,
            "ImageNotFound",
        ),
        (
            "Error response from daemon: no such image: x:1",
            MissingUpstreamDependency,
            "ImageNotFound",
        ),
    ];
    for (msg, cat, reason) in cases {
        assert_eq!(classify_image_pull(msg), (cat, reason), "{msg}");
        let h = pods(&[waiting_pod("ErrImagePull", msg)], 1);
        assert_eq!(h.errors[0].category, cat, "{msg}");
        assert_eq!(h.effective_reason().as_str(), reason);
    }
}

#[test]
fn a_recovered_oom_kill_is_not_a_failure() {
    let recovered: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "main", "image": "i", "imageID": "", "ready": true, "restartCount": 1,
            "state": {"running": {}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
        }]}
    }))
    .unwrap();
    let d = diagnose_pod(&recovered);
    assert_eq!(d.state, ComponentState::Ready, "{d:?}");
    assert!(d.error.is_none());
}

#[test]
fn pod_diagnoses() {
    let crash: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "main", "image": "i", "imageID": "", "ready": false, "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}
        }]}
    }))
    .unwrap();
    let oom: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "main", "image": "i", "imageID": "", "ready": false, "restartCount": 1,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
        }]}
    }))
    .unwrap();
    let unschedulable: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "status": {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient amd.com/gpu."
        }]}
    }))
    .unwrap();
    let ready: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "main", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
            "state": {"running": {}}
        }]}
    }))
    .unwrap();
    let starting: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": "main", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"running": {}}
        }]}
    }))
    .unwrap();
    let evicted: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"}, "status": {"phase": "Failed", "reason": "Evicted", "message": "low memory"}
    }))
    .unwrap();
    let config: Pod = waiting_pod("CreateContainerConfigError", "secret \"hf\" not found");
    let cases: Vec<(
        &str,
        Vec<Pod>,
        (ComponentState, &str, Option<ErrorCategory>),
    )> = vec![
        (
            "no pods",
            vec![],
            (ComponentState::Progressing, "PodsNotCreated", None),
        ),
        (
            "crash loop",
            vec![crash.clone()],
            (ComponentState::Degraded, "CrashLoopBackOff", None),
        ),
        (
            "oom",
            vec![oom],
            (
                ComponentState::Failed,
                "OOMKilled",
                Some(ErrorCategory::ResourceExhaustion),
            ),
        ),
        (
            "unschedulable",
            vec![unschedulable.clone()],
            (ComponentState::Pending, "Unschedulable", None),
        ),
        (
            "ready",
            vec![ready.clone()],
            (ComponentState::Ready, "PodsReady", None),
        ),
        (
            "one ready of two is enough",
            vec![ready.clone(), crash.clone()],
            (ComponentState::Ready, "PodsReady", None),
        ),
        (
            "starting",
            vec![starting],
            (ComponentState::Progressing, "Starting", None),
        ),
        (
            "evicted",
            vec![evicted],
            (
                ComponentState::Degraded,
                "Evicted",
                Some(ErrorCategory::Infrastructure),
            ),
        ),
        (
            "config error",
            vec![config],
            (
                ComponentState::Degraded,
                "CreateContainerConfigError",
                Some(ErrorCategory::MissingUpstreamDependency),
            ),
        ),
        (
            "worst pod explains",
            vec![unschedulable, crash],
            (ComponentState::Degraded, "CrashLoopBackOff", None),
        ),
    ];
    for (name, list, (state, reason, cat)) in cases {
        let h = pods(&list, 1);
        assert_eq!(summary(&h), (state, reason.to_owned(), cat), "{name}");
    }
    assert_eq!(
        pods(&[ready], 2).effective_state(),
        ComponentState::Progressing
    );
}

#[test]
fn log_tail_classification() {
    use ErrorCategory::*;
    let cases = [
        (
            "OSError: [Errno 28] No space left on device",
            Some((ResourceExhaustion, "StorageFull")),
        ),
        (
            "botocore.exceptions.ClientError: InvalidAccessKeyId",
            Some((Auth, "SourceAuthFailure")),
        ),
        (
            "Cannot access gated repo for url https://huggingface.co/x",
            Some((Auth, "SourceAuthFailure")),
        ),
        (
            "huggingface_hub.errors.RepositoryNotFoundError: Repository Not Found",
            Some((InvalidSpec, "SourceNotFound")),
        ),
        (
            "An error occurred (NoSuchBucket)",
            Some((InvalidSpec, "SourceNotFound")),
        ),
        (
            "secrets is forbidden: User cannot get",
            Some((Infrastructure, "Forbidden")),
        ),
        ("all good", None),
    ];
    for (log, want) in cases {
        assert_eq!(classify_log_tail(log), want, "{log}");
    }
}

#[test]
fn deployment_health() {
    let d = |spec: Value, status: Value| -> Deployment {
        serde_json::from_value(
            json!({"metadata": {"name": "d", "generation": 2}, "spec": spec, "status": status}),
        )
        .unwrap()
    };
    let sel = json!({"matchLabels": {"a": "b"}});
    let tpl = json!({"metadata": {}, "spec": {"containers": []}});
    let spec = json!({"replicas": 2, "selector": sel, "template": tpl});
    let cases = [
        (
            "available",
            json!({"observedGeneration": 2, "replicas": 2, "availableReplicas": 2, "updatedReplicas": 2}),
            (ComponentState::Ready, "DeploymentAvailable", None),
        ),
        (
            "rolling",
            json!({"observedGeneration": 2, "replicas": 3, "availableReplicas": 2, "updatedReplicas": 1}),
            (ComponentState::Progressing, "RolloutInProgress", None),
        ),
        (
            "old generation",
            json!({"observedGeneration": 1, "replicas": 2, "availableReplicas": 2, "updatedReplicas": 2}),
            (ComponentState::Progressing, "RolloutPending", None),
        ),
        (
            "deadline",
            json!({"observedGeneration": 2, "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]}),
            (ComponentState::Degraded, "ProgressDeadlineExceeded", None),
        ),
        (
            "quota",
            json!({"conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "pods \"x\" is forbidden: exceeded quota: gpu"}]}),
            (
                ComponentState::Failed,
                "QuotaExceeded",
                Some(ErrorCategory::ResourceExhaustion),
            ),
        ),
    ];
    for (name, status, (state, reason, cat)) in cases {
        assert_eq!(
            summary(&deployment(&d(spec.clone(), status))),
            (state, reason.to_owned(), cat),
            "{name}"
        );
    }
}

#[test]
fn job_pvc_hpa_health() {
    let job_with = |conds: Value| -> Job {
        serde_json::from_value(json!({"metadata": {"name": "j"}, "status": {"conditions": conds}}))
            .unwrap()
    };
    let c = |t: &str, r: &str| json!([{"type": t, "status": "True", "reason": r}]);
    assert_eq!(
        summary(&job(&job_with(c("Complete", "")))).0,
        ComponentState::Ready
    );
    assert_eq!(
        summary(&job(&job_with(c("Failed", "BackoffLimitExceeded")))),
        (
            ComponentState::Failed,
            "BackoffLimitExceeded".into(),
            Some(ErrorCategory::InvalidSpec)
        )
    );
    assert_eq!(
        summary(&job(&job_with(c("Failed", "PodFailurePolicy")))).2,
        Some(ErrorCategory::Infrastructure)
    );
    assert_eq!(
        summary(&job(&job_with(json!([])))).0,
        ComponentState::Progressing
    );

    let pvc_in = |phase: &str| -> PersistentVolumeClaim {
        serde_json::from_value(json!({"metadata": {"name": "c"}, "status": {"phase": phase}}))
            .unwrap()
    };
    assert_eq!(summary(&pvc(&pvc_in("Bound"))).0, ComponentState::Ready);
    assert_eq!(
        summary(&pvc(&pvc_in("Pending"))).0,
        ComponentState::Progressing
    );
    assert_eq!(summary(&pvc(&pvc_in("Lost"))).1, "ClaimLost");

    let hpa_with = |conds: Value| -> HorizontalPodAutoscaler {
        serde_json::from_value(json!({"metadata": {"name": "h"}, "status": {"desiredReplicas": 1, "conditions": conds}})).unwrap()
    };
    let ok = json!([{"type": "AbleToScale", "status": "True"}, {"type": "ScalingActive", "status": "True"}]);
    let bad = json!([{"type": "AbleToScale", "status": "True"}, {"type": "ScalingActive", "status": "False", "reason": "FailedGetResourceMetric"}]);
    assert_eq!(summary(&hpa(&hpa_with(ok))).0, ComponentState::Ready);
    assert_eq!(
        summary(&hpa(&hpa_with(bad))),
        (
            ComponentState::Degraded,
            "FailedGetResourceMetric".into(),
            None
        )
    );
    assert_eq!(
        summary(&hpa(&hpa_with(json!([])))).0,
        ComponentState::Progressing
    );
}

#[test]
fn routes_pools_and_inference_services() {
    let route = |conds: Value| json!({"status": {"parents": [{"parentRef": {"name": "gw"}, "conditions": conds}]}});
    let ok =
        json!([{"type": "Accepted", "status": "True"}, {"type": "ResolvedRefs", "status": "True"}]);
    let refused = json!([{"type": "Accepted", "status": "False", "reason": "NotAllowedByListeners", "message": "no"}]);
    let backend = json!([{"type": "Accepted", "status": "True"}, {"type": "ResolvedRefs", "status": "False", "reason": "BackendNotFound"}]);
    assert_eq!(
        summary(&http_route(&route(ok.clone()))).0,
        ComponentState::Ready
    );
    assert_eq!(
        summary(&http_route(&route(refused))),
        (
            ComponentState::Failed,
            "NotAllowedByListeners".into(),
            Some(ErrorCategory::InvalidSpec)
        )
    );
    assert_eq!(
        summary(&http_route(&route(backend))),
        (ComponentState::Progressing, "BackendNotFound".into(), None)
    );
    assert_eq!(
        summary(&http_route(&json!({}))).0,
        ComponentState::Progressing
    );
    assert_eq!(
        summary(&inference_pool(
            &json!({"status": {"parent": [{"conditions": ok.clone()}]}})
        ))
        .0,
        ComponentState::Ready
    );
    assert_eq!(
        summary(&inference_pool(
            &json!({"status": {"parents": [{"conditions": ok}]}})
        ))
        .0,
        ComponentState::Ready
    );

    let isvc = |st: Value| json!({"status": st});
    assert_eq!(
        summary(&inference_service(&isvc(
            json!({"conditions": [{"type": "Ready", "status": "True"}]})
        )))
        .0,
        ComponentState::Ready
    );
    assert_eq!(
        summary(&inference_service(&isvc(
            json!({"conditions": [{"type": "Ready", "status": "False", "reason": "ServerlessModeRejected"}]})
        ))),
        (
            ComponentState::Failed,
            "ServerlessModeRejected".into(),
            Some(ErrorCategory::InvalidSpec)
        )
    );
    assert_eq!(
        summary(&inference_service(&isvc(
            json!({"modelStatus": {"lastFailureInfo": {"reason": "ModelLoadFailed", "message": "x"}}})
        ))),
        (ComponentState::Degraded, "ModelLoadFailed".into(), None)
    );
    assert_eq!(
        summary(&inference_service(&isvc(
            json!({"conditions": [{"type": "PredictorReady", "status": "False"}, {"type": "Ready", "status": "False"}]})
        ))),
        (
            ComponentState::Progressing,
            "PredictorReadyNotReady".into(),
            None
        )
    );
}

/// AIM Engine's reading of a route: one accepting Gateway is enough, and the message names the
/// ones that refused; with none, the strict reading's refusal stands.
#[test]
fn a_route_one_gateway_accepted_is_ready_naming_the_refusals() {
    let parent =
        |name: &str, conds: Value| json!({"parentRef": {"name": name}, "conditions": conds});
    let ok =
        json!([{"type": "Accepted", "status": "True"}, {"type": "ResolvedRefs", "status": "True"}]);
    let refused = json!([{"type": "Accepted", "status": "False", "reason": "NotAllowedByListeners", "message": "no"}]);
    let mixed =
        json!({"status": {"parents": [parent("public", ok), parent("internal", refused.clone())]}});
    let h = http_route_any_parent(&mixed);
    assert_eq!(summary(&h).0, ComponentState::Ready);
    assert_eq!(
        h.message.as_deref(),
        Some("accepted by public; not by internal (NotAllowedByListeners)")
    );
    assert_eq!(
        summary(&http_route(&mixed)).1,
        "NotAllowedByListeners",
        "the strict reading is unchanged"
    );
    let none = json!({"status": {"parents": [parent("internal", refused)]}});
    assert_eq!(
        summary(&http_route_any_parent(&none)),
        (
            ComponentState::Failed,
            "NotAllowedByListeners".into(),
            Some(ErrorCategory::InvalidSpec)
        )
    );
    assert_eq!(
        summary(&http_route_any_parent(&json!({}))).0,
        ComponentState::Progressing
    );
}
