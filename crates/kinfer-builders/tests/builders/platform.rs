//! Service, autoscaling, InferencePool and monitoring builders.

use kinfer_api::inference_pool::{FailureMode, InferencePool};
use kinfer_api::monitoring::PodMonitor;
use kinfer_builders::autoscaling::{HpaInput, Metric, horizontal_pod_autoscaler};
use kinfer_builders::deployment::Role;
use kinfer_builders::inference_pool::{PoolInput, inference_pool};
use kinfer_builders::monitoring::{ScrapeTarget, role_pod_monitor};
use kinfer_builders::service::{ServiceInput, Track, service, track_service};

use crate::common::{assert_core_valid, assert_ours_valid, assert_upstream_valid, input};
use crate::snapshot;

#[test]
fn services_validate_and_snapshot() {
    let i: ServiceInput = input("service");
    let s = service(&i).expect("builds");
    assert_core_valid(&s);
    assert_eq!(s.metadata.name.as_deref(), Some("llama-serving"));
    snapshot!("service", &s);
    let canary = track_service(&i, Track::Canary).expect("builds");
    let stable = track_service(&i, Track::Stable).expect("builds");
    assert_core_valid(&canary);
    assert_eq!(
        canary.metadata.name.as_deref(),
        Some("llama-serving-canary")
    );
    assert_eq!(
        stable
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .expect("selector")["kinfer.dev/track"],
        "stable"
    );
    snapshot!("service_canary", &canary);
}

#[test]
fn hpa_defaults_to_cpu_utilisation() {
    let hpa = horizontal_pod_autoscaler(&input::<HpaInput>("hpa-cpu")).expect("builds");
    assert_core_valid(&hpa);
    let json = serde_json::to_value(&hpa).expect("json");
    assert_eq!(json["spec"]["metrics"][0]["resource"]["name"], "cpu");
    assert_eq!(
        json["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    snapshot!("hpa_cpu", &hpa);
}

#[test]
fn hpa_uses_a_custom_or_external_metric_when_given() {
    let hpa = horizontal_pod_autoscaler(&input::<HpaInput>("hpa-pods")).expect("builds");
    assert_core_valid(&hpa);
    let json = serde_json::to_value(&hpa).expect("json");
    assert_eq!(
        json["spec"]["metrics"][0]["pods"]["metric"]["name"],
        "vllm:num_requests_waiting"
    );
    snapshot!("hpa_pods", &hpa);
    let mut external: HpaInput = input("hpa-pods");
    external.metric = Some(Metric::External {
        name: "queue_depth".to_owned(),
        selector: [("queue".to_owned(), "llama".to_owned())].into(),
        value: Some("100".to_owned()),
        average_value: None,
    });
    let hpa = horizontal_pod_autoscaler(&external).expect("builds");
    assert_core_valid(&hpa);
    assert_eq!(
        serde_json::to_value(&hpa).expect("json")["spec"]["metrics"][0]["external"]["target"]["type"],
        "Value"
    );
    external.min_replicas = 0;
    assert!(horizontal_pod_autoscaler(&external).is_err());
}

#[test]
fn inference_pool_validates_and_snapshots() {
    let i: PoolInput = input("pool");
    let pool = inference_pool(&i).expect("builds");
    assert_upstream_valid(
        &pool,
        "gateway-api-inference-extension/inference.networking.k8s.io_inferencepools.yaml",
        "v1",
    );
    assert_ours_valid::<InferencePool>(&pool);
    assert_eq!(
        pool.spec.endpoint_picker_ref.failure_mode,
        Some(FailureMode::FailClose)
    );
    assert_eq!(
        pool.spec.selector.match_labels["llm-d.ai/inferenceServing"],
        "true"
    );
    assert!(
        !pool
            .spec
            .selector
            .match_labels
            .contains_key("llm-d.ai/role"),
        "decode and prefill both match"
    );
    snapshot!("inference_pool", &pool);
}

#[test]
fn pod_monitors_validate_and_snapshot() {
    let i: PoolInput = input("pool");
    for role in [Role::Decode, Role::Prefill] {
        let pm = role_pod_monitor(&i.parent, role, &ScrapeTarget::default()).expect("builds");
        assert_upstream_valid(
            &pm,
            "prometheus-operator/monitoring.coreos.com_podmonitors.yaml",
            "v1",
        );
        assert_ours_valid::<PodMonitor>(&pm);
    }
    let pm = role_pod_monitor(&i.parent, Role::Decode, &ScrapeTarget::default()).expect("builds");
    assert_eq!(pm.spec.selector.match_labels["llm-d.ai/role"], "decode");
    snapshot!("pod_monitor_decode", &pm);
}

#[test]
fn pod_monitors_scrape_the_given_target() {
    let i: PoolInput = input("pool");
    let target = ScrapeTarget {
        port_name: "proxy".into(),
        path: "/stats".into(),
        interval: "15s".into(),
    };
    let pm = role_pod_monitor(&i.parent, Role::Prefill, &target).expect("builds");
    assert_ours_valid::<PodMonitor>(&pm);
    let e = &pm.spec.pod_metrics_endpoints[0];
    assert_eq!(
        (e.port.as_deref(), e.path.as_deref(), e.interval.as_deref()),
        (Some("proxy"), Some("/stats"), Some("15s"))
    );
    assert_eq!(
        ScrapeTarget::default(),
        ScrapeTarget {
            port_name: "http".into(),
            path: "/metrics".into(),
            interval: "30s".into()
        }
    );
}
