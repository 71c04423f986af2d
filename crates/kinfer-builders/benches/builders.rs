//! The cost of building each bundle from its resolved input (the fixtures in `tests/inputs/`).

#![allow(clippy::expect_used, clippy::many_single_char_names, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kinfer_builders::naming::Dns1123Label;
use kinfer_builders::{
    autoscaling, deployment, discovery_job, epp, gateway, inference_pool, kserve, monitoring,
    service,
};
use serde::de::DeserializeOwned;

fn fixture<T: DeserializeOwned>(text: &str) -> T {
    serde_saphyr::from_str(text).expect("fixture parses")
}

fn bundles(c: &mut Criterion) {
    let runtime: kserve::RuntimeInput =
        fixture(include_str!("../tests/inputs/kserve-runtime.yaml"));
    let isvc: kserve::InferenceServiceInput =
        fixture(include_str!("../tests/inputs/kserve-isvc.yaml"));
    let route: gateway::PredictorRouteInput =
        fixture(include_str!("../tests/inputs/gateway-predictor.yaml"));
    let ns = Dns1123Label::new("team-a").expect("valid");
    c.bench_function("aim_service (runtime + isvc + route)", |b| {
        b.iter(|| {
            let r = kserve::serving_runtime(black_box(&runtime), &ns);
            let i = kserve::inference_service(black_box(&isvc)).expect("builds");
            let h = gateway::predictor_route(black_box(&route)).expect("builds");
            (r, i, h)
        });
    });

    let decode: deployment::ModelDeploymentInput =
        fixture(include_str!("../tests/inputs/deployment-decode.yaml"));
    let prefill: deployment::ModelDeploymentInput =
        fixture(include_str!("../tests/inputs/deployment-prefill.yaml"));
    let pool: inference_pool::PoolInput = fixture(include_str!("../tests/inputs/pool.yaml"));
    let eppi: epp::EppInput = fixture(include_str!("../tests/inputs/epp.yaml"));
    let pool_route: gateway::PoolRouteInput =
        fixture(include_str!("../tests/inputs/gateway-pool.yaml"));
    c.bench_function(
        "model_service (decode + prefill + pool + epp + route + monitors)",
        |b| {
            b.iter(|| {
                let d = deployment::model_deployment(black_box(&decode)).expect("builds");
                let p = deployment::model_deployment(black_box(&prefill)).expect("builds");
                let ip = inference_pool::inference_pool(black_box(&pool)).expect("builds");
                let e = epp::epp_bundle(black_box(&eppi)).expect("builds");
                let r = gateway::pool_route(black_box(&pool_route)).expect("builds");
                let m = monitoring::role_pod_monitor(
                    &pool.parent,
                    deployment::Role::Decode,
                    &monitoring::ScrapeTarget::default(),
                )
                .expect("builds");
                (d, p, ip, e, r, m)
            });
        },
    );
    c.bench_function("epp bundle", |b| {
        b.iter(|| epp::epp_bundle(black_box(&eppi)).expect("builds"));
    });

    let svc: service::ServiceInput = fixture(include_str!("../tests/inputs/service.yaml"));
    let hpa: autoscaling::HpaInput = fixture(include_str!("../tests/inputs/hpa-cpu.yaml"));
    c.bench_function("zerfoo canary (2 services + hpa)", |b| {
        b.iter(|| {
            let s =
                service::track_service(black_box(&svc), service::Track::Stable).expect("builds");
            let c =
                service::track_service(black_box(&svc), service::Track::Canary).expect("builds");
            let h = autoscaling::horizontal_pod_autoscaler(black_box(&hpa)).expect("builds");
            (s, c, h)
        });
    });

    let discovery: discovery_job::DiscoveryInput =
        fixture(include_str!("../tests/inputs/discovery.yaml"));
    let artifact: discovery_job::ArtifactInput =
        fixture(include_str!("../tests/inputs/artifact.yaml"));
    c.bench_function("aim jobs (discovery + artifact download)", |b| {
        b.iter(|| {
            let d = discovery_job::discovery_job(black_box(&discovery)).expect("builds");
            let a = discovery_job::artifact_objects(black_box(&artifact)).expect("builds");
            (d, a)
        });
    });
}

criterion_group!(benches, bundles);
criterion_main!(benches);
