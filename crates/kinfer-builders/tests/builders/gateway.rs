use gateway_api::httproutes::HttpRoute;
use kinfer_builders::gateway::{PoolRouteInput, PredictorRouteInput, pool_route, predictor_route};
use kinfer_builders::meta::Parent;
use kinfer_builders::naming::aim::inference_service_name;

use crate::common::{assert_core_valid, assert_upstream_valid, input};
use crate::snapshot;

const CRD: &str = "gateway-api/gateway.networking.k8s.io_httproutes.yaml";

fn check(route: &HttpRoute) {
    assert_upstream_valid(route, CRD, "v1");
    assert_core_valid(route);
}

#[test]
fn predictor_route_validates_and_snapshots() {
    let route =
        predictor_route(&input::<PredictorRouteInput>("gateway-predictor")).expect("builds");
    check(&route);
    let rule = &route.spec.rules.as_ref().expect("rules")[0];
    let isvc = inference_service_name("qwen-chat", "team-a").expect("name");
    assert_eq!(route.metadata.name.as_deref(), Some(isvc.as_str()));
    assert_eq!(
        rule.backend_refs.as_ref().expect("backends")[0].name,
        format!("{isvc}-predictor")
    );
    assert_eq!(
        rule.backend_refs.as_ref().expect("backends")[0].port,
        Some(80)
    );
    assert_eq!(
        rule.timeouts.as_ref().expect("timeouts").request.as_deref(),
        Some("600s")
    );
    snapshot!("gateway_predictor_route", &route);
}

#[test]
fn pool_route_validates_and_snapshots() {
    let route = pool_route(&input::<PoolRouteInput>("gateway-pool")).expect("builds");
    check(&route);
    let rule = &route.spec.rules.as_ref().expect("rules")[0];
    let matches = rule.matches.as_ref().expect("matches");
    let header = |i: usize| matches[i].headers.as_ref().expect("headers")[0].clone();
    // otterscale's match, kept for clients of the adopted route ...
    assert_eq!(header(0).name, "OtterScale-Model-Name");
    assert_eq!(header(0).value, "llama");
    // ... and the OpenAI model name, ORed.
    assert_eq!(header(1).name, "X-Gateway-Model-Name");
    assert_eq!(header(1).value, "meta-llama/Llama-3.1-8B-Instruct");
    assert_eq!(route.metadata.name.as_deref(), Some("llama"));
    assert_eq!(
        route.spec.parent_refs.as_ref().expect("parents")[0]
            .namespace
            .as_deref(),
        Some("llm-d")
    );
    snapshot!("gateway_pool_route", &route);
}

#[test]
fn bad_paths_and_timeouts_are_rejected() {
    let mut bad: PredictorRouteInput = input("gateway-predictor");
    bad.path = "no-slash".to_owned();
    assert!(predictor_route(&bad).is_err());
    let mut bad: PoolRouteInput = input("gateway-pool");
    bad.timeouts.request = Some("5 minutes".to_owned());
    assert!(pool_route(&bad).is_err());
}

#[test]
fn aim_and_modelservice_routes_never_share_a_name() {
    // An AIMService and a ModelService of the same name in one namespace.
    let aim: PredictorRouteInput = input("gateway-predictor");
    let mut ms: PoolRouteInput = input("gateway-pool");
    ms.parent = Parent {
        managed_by: ms.parent.managed_by.clone(),
        ..aim.parent.clone()
    };
    let a = predictor_route(&aim).expect("builds").metadata.name;
    let b = pool_route(&ms).expect("builds").metadata.name;
    assert_eq!(b.as_deref(), Some("qwen-chat"));
    assert_ne!(a, b);
}
