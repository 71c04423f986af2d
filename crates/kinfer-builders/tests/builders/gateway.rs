use gateway_api::httproutes::HttpRoute;
use kinfer_builders::gateway::{PoolRouteInput, PredictorRouteInput, pool_route, predictor_route};

use crate::common::{assert_core_valid, assert_upstream_valid, input};
use crate::snapshot;

const CRD: &str = "gateway-api/gateway.networking.k8s.io_httproutes.yaml";

fn check(route: &HttpRoute) {
    assert_upstream_valid(route, CRD, "v1");
    assert_core_valid(route); // round trip through the gateway-api type
}

#[test]
fn predictor_route_validates_and_snapshots() {
    let route =
        predictor_route(&input::<PredictorRouteInput>("gateway-predictor")).expect("builds");
    check(&route);
    let rule = &route.spec.rules.as_ref().expect("rules")[0];
    assert_eq!(
        rule.backend_refs.as_ref().expect("backends")[0].name,
        "qwen-chat-predictor"
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
    let header = &rule.matches.as_ref().expect("matches")[0]
        .headers
        .as_ref()
        .expect("headers")[0];
    assert_eq!(header.name, "X-Gateway-Model-Name");
    assert_eq!(header.value, "meta-llama/Llama-3.1-8B-Instruct");
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
