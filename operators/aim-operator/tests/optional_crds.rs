//! The AIM operator on a cluster without KServe or Gateway API: only its own CRDs are required.
//! The catalog runs, an AIMService names the CRD it waits for, and serving starts once the
//! CRDs are installed, with no restart of the process: the operator follows the CRDs
//! ([`aim_operator::controllers::Operator::run_following`]).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use aim_operator::Settings;
use aim_operator::controllers::{self, Operator};
use aim_operator::startup::SERVING_CRDS;
use kinfer_api::aim::{AIMModel, AIMService, AIMServiceState, AIMServiceTemplate};
use kinfer_api::kserve::InferenceService;
use kinfer_api::phase::Phase;
use kinfer_builders::naming::aim as names;
use kinfer_operator::CrdWatch;
use kinfer_state::metrics::Metrics;
use kinfer_testkit::TestCluster;
use kube::Api;
use serde_json::json;
use support::serving::*;
use support::*;
use tokio::sync::watch;

#[tokio::test]
async fn without_kserve_the_catalog_runs_and_serving_starts_when_its_crds_appear() {
    controllers::install_crypto_provider();
    let cluster = TestCluster::start_simulated().await.expect("cluster");
    cluster
        .install_crds(&kinfer_api::aim::crds())
        .expect("AIM CRDs");
    let client = cluster.client().expect("client");
    namespace(&client, NS).await;
    namespace(&client, SYSTEM_NS).await;
    cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&client, "mi300x", "74a1").await;

    let operator_client = client_as(&cluster, OPERATOR_USER).await;
    let (stop_tx, stop) = watch::channel(false);
    let crds = CrdWatch::start(&operator_client, &SERVING_CRDS, stop.clone())
        .await
        .expect("CRD watch");
    let settings = Settings {
        system_namespace: SYSTEM_NS.into(),
        ..Settings::default()
    };
    let running = tokio::spawn(Operator::run_following(
        operator_client,
        settings,
        Metrics::new(),
        crds.subscribe(),
        stop,
    ));

    // The catalog: a model and a template of it reach Ready without KServe.
    model_with(&client, NS).await;
    template_with(&client, NS, ("mi300x-lat-fp8", "MI300X", "latency", "fp8")).await;
    let models: Api<AIMModel> = Api::namespaced(client.clone(), NS);
    let templates: Api<AIMServiceTemplate> = Api::namespaced(client.clone(), NS);
    wait(&models, "m", "Ready", phase_is(Phase::Ready)).await;
    // The template is discovered; its ServingRuntime names the CRD it waits for.
    let template = wait(
        &templates,
        "mi300x-lat-fp8",
        "discovered, its runtime waiting for KServe",
        |t: &AIMServiceTemplate| {
            t.status.as_ref().is_some_and(|s| {
                !s.model_sources.is_empty()
                    && s.conditions.iter().any(|c| {
                        c.type_ == "ServingRuntimeReady"
                            && c.status == "False"
                            && c.reason == "KindNotInstalled"
                            && c.message.contains("servingruntimes.serving.kserve.io")
                    })
            })
        },
    )
    .await;
    let conditions = &template.status.as_ref().unwrap().conditions;
    assert_eq!(cond_in(conditions, "Discovered").0, "True");
    assert_eq!(cond_in(conditions, "DependenciesReachable").0, "False");

    // The service names the CRD it waits for.
    let services: Api<AIMService> = Api::namespaced(client.clone(), NS);
    apply_json(
        &services,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
               "metadata": {"name": "chat", "namespace": NS},
               "spec": {"model": {"name": "m"}}}),
    )
    .await;
    let waiting = wait(
        &services,
        "chat",
        "the missing CRD named",
        |s: &AIMService| {
            s.status.as_ref().is_some_and(|st| {
                st.conditions.iter().any(|c| {
                    c.type_ == "DependenciesReachable"
                        && c.status == "False"
                        && c.message.contains("inferenceservices.serving.kserve.io")
                })
            })
        },
    )
    .await;
    assert_eq!(
        cond(&waiting, "InferenceServiceReady").1,
        "KindNotInstalled"
    );

    // KServe and Gateway API appear: serving starts.
    let mut serving = kinfer_api::third_party::crds();
    serving.push(<gateway_api::httproutes::HttpRoute as kube::CustomResourceExt>::crd());
    cluster.install_crds(&serving).expect("serving CRDs");
    wait(
        &services,
        "chat",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let isvc = names::inference_service_name("chat", NS).unwrap();
    Api::<InferenceService>::namespaced(client.clone(), NS)
        .get(isvc.as_str())
        .await
        .expect("the InferenceService exists");

    stop_tx.send_replace(true);
    running
        .await
        .expect("the operator stops")
        .expect("the controllers started");
}
