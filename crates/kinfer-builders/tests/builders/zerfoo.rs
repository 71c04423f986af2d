use gateway_api::httproutes::HttpRoute;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kinfer_builders::gateway::GatewayRef;
use kinfer_builders::gateway_weighted::{WeightedBackend, WeightedRouteInput, weighted_route};
use kinfer_builders::meta::Parent;
use kinfer_builders::naming::Dns1123Subdomain;
use kinfer_builders::zerfoo::{
    AutoscalerInput, DeploymentInput, RouteInput, Track, autoscaler, deployment, route,
    shared_service, track_service,
};

use crate::common::{assert_core_valid, assert_restricted, assert_upstream_valid, input};
use crate::snapshot;

const HTTPROUTES: &str = "gateway-api/gateway.networking.k8s.io_httproutes.yaml";

fn check_route(route: &HttpRoute) {
    assert_upstream_valid(route, HTTPROUTES, "v1");
    assert_core_valid(route);
}

fn backends(route: &HttpRoute) -> Vec<(String, Option<i32>, Option<i32>)> {
    route.spec.rules.as_ref().expect("rules")[0]
        .backend_refs
        .as_ref()
        .expect("backends")
        .iter()
        .map(|b| (b.name.clone(), b.port, b.weight))
        .collect()
}

fn parent() -> Parent {
    input::<RouteInput>("zerfoo-route").parent
}

#[test]
fn primary_deployment_validates_and_snapshots() {
    let d = deployment(&input::<DeploymentInput>("zerfoo-primary")).expect("builds");
    assert_core_valid(&d);
    assert_restricted(&d);
    assert_eq!(d.metadata.name.as_deref(), Some("my-llama-primary"));
    let json = serde_json::to_value(&d).expect("json");
    let c = &json["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "1");
    assert_eq!(c["readinessProbe"]["periodSeconds"], 10);
    assert_eq!(c["livenessProbe"]["timeoutSeconds"], 5);
    // The startup probe checks the same path and gives the model time to load.
    assert_eq!(
        c["startupProbe"]["httpGet"]["path"],
        c["readinessProbe"]["httpGet"]["path"]
    );
    assert_eq!(c["startupProbe"]["failureThreshold"], 180);
    let term = &json["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0];
    assert_eq!(term["matchExpressions"][0]["operator"], "Gt");
    assert_eq!(json["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0);
    snapshot!("zerfoo_primary_deployment", &d);
}

#[test]
fn canary_deployment_validates_and_snapshots() {
    let d = deployment(&input::<DeploymentInput>("zerfoo-canary")).expect("builds");
    assert_core_valid(&d);
    assert_restricted(&d);
    assert_eq!(d.metadata.name.as_deref(), Some("my-llama-canary"));
    let spec = d.spec.as_ref().expect("spec");
    let pod = spec.template.spec.as_ref().expect("pod");
    // Without a health check: TCP probes on the serving port, never none.
    let c = &pod.containers[0];
    for probe in [&c.startup_probe, &c.readiness_probe, &c.liveness_probe] {
        let probe = probe.as_ref().expect("probe");
        assert!(probe.http_get.is_none());
        let tcp = probe.tcp_socket.as_ref().expect("tcp probe");
        assert_eq!(tcp.port, IntOrString::String("http".into()));
    }
    assert_eq!(
        c.startup_probe.as_ref().and_then(|p| p.failure_threshold),
        Some(180),
        "30 minutes to load the model"
    );
    snapshot!("zerfoo_canary_deployment", &d);
}

#[test]
fn replicas_none_leaves_the_field_to_the_hpa() {
    let mut i: DeploymentInput = input("zerfoo-primary");
    i.replicas = None;
    let json = serde_json::to_value(deployment(&i).expect("builds")).expect("json");
    assert!(json["spec"].get("replicas").is_none());
    i.model_ref = String::new();
    assert!(deployment(&i).is_err());
}

#[test]
fn services_select_both_tracks_or_one() {
    let p = parent();
    let shared = shared_service(&p).expect("builds");
    let primary = track_service(&p, Track::Primary).expect("builds");
    let canary = track_service(&p, Track::Canary).expect("builds");
    for s in [&shared, &primary, &canary] {
        assert_core_valid(s);
    }
    let selector = |s: &k8s_openapi::api::core::v1::Service| {
        s.spec
            .as_ref()
            .expect("spec")
            .selector
            .clone()
            .expect("selector")
    };
    assert!(!selector(&shared).contains_key("app.kubernetes.io/component"));
    assert_eq!(
        selector(&canary)
            .get("app.kubernetes.io/component")
            .map(String::as_str),
        Some("canary")
    );
    assert_eq!(shared.metadata.name.as_deref(), Some("my-llama-svc"));
    snapshot!("zerfoo_services", &[shared, primary, canary]);
}

#[test]
fn autoscaler_targets_the_primary_under_upstream_name() {
    let hpa = autoscaler(&AutoscalerInput {
        parent: parent(),
        min_replicas: 2,
        max_replicas: 10,
        cpu_target: 70,
    })
    .expect("builds");
    assert_core_valid(&hpa);
    assert_eq!(hpa.metadata.name.as_deref(), Some("my-llama-hpa"));
    let spec = hpa.spec.as_ref().expect("spec");
    assert_eq!(spec.scale_target_ref.name, "my-llama-primary");
    assert_eq!(spec.max_replicas, 10);
    snapshot!("zerfoo_hpa", &hpa);
    let bad = AutoscalerInput {
        parent: parent(),
        min_replicas: 5,
        max_replicas: 2,
        cpu_target: 80,
    };
    assert!(autoscaler(&bad).is_err());
}

#[test]
fn canary_route_splits_exactly_and_validates() {
    let r = route(&input::<RouteInput>("zerfoo-route")).expect("builds");
    check_route(&r);
    assert_eq!(r.metadata.name.as_deref(), Some("my-llama-route"));
    assert_eq!(
        backends(&r),
        [
            ("my-llama-primary".to_owned(), Some(80), Some(80)),
            ("my-llama-canary".to_owned(), Some(80), Some(20)),
        ]
    );
    let parent_ref = &r.spec.parent_refs.as_ref().expect("parents")[0];
    assert_eq!(parent_ref.namespace.as_deref(), Some("infra"));
    assert_eq!(parent_ref.section_name.as_deref(), Some("https"));
    snapshot!("zerfoo_route", &r);
}

#[test]
fn route_without_canary_sends_everything_to_the_primary() {
    let mut i: RouteInput = input("zerfoo-route");
    i.canary_weight = None;
    let r = route(&i).expect("builds");
    check_route(&r);
    assert_eq!(
        backends(&r),
        [("my-llama-primary".to_owned(), Some(80), Some(100))]
    );
    // Weights outside 0..=100 are clamped, so the split stays a percentage.
    i.canary_weight = Some(150);
    let r = route(&i).expect("builds");
    check_route(&r);
    assert_eq!(backends(&r)[0].2, Some(0));
    assert_eq!(backends(&r)[1].2, Some(100));
}

fn weighted(backends: Vec<WeightedBackend>) -> WeightedRouteInput {
    WeightedRouteInput {
        parent: parent(),
        name: Dns1123Subdomain::new("split").expect("name"),
        app: "demo".to_owned(),
        component: "route".to_owned(),
        gateway: GatewayRef {
            name: "gw".to_owned(),
            namespace: None,
            section_name: None,
        },
        backends,
    }
}

fn backend(service: &str, weight: i32) -> WeightedBackend {
    WeightedBackend {
        service: service.to_owned(),
        port: 8080,
        weight,
    }
}

#[test]
fn weighted_route_checks_the_gateway_api_rules() {
    let three = weighted(vec![
        backend("a", 1),
        backend("b", 0),
        backend("c", 1_000_000),
    ]);
    let r = weighted_route(&three).expect("builds");
    check_route(&r);
    assert_eq!(backends(&r).len(), 3);
    for bad in [
        weighted(vec![]),
        weighted((0..17).map(|i| backend(&format!("s{i}"), 1)).collect()),
        weighted(vec![backend("a", 0), backend("b", 0)]),
        weighted(vec![backend("a", -1)]),
        weighted(vec![backend("a", 1_000_001)]),
        weighted(vec![backend("Not_A_Service", 1)]),
        weighted(vec![WeightedBackend {
            port: 0,
            ..backend("a", 1)
        }]),
    ] {
        assert!(weighted_route(&bad).is_err(), "{:?}", bad.backends);
    }
}
