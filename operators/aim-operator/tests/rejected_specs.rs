//! Rejected specs on the simulated cluster: a rejected AIMService is Failed with the field
//! named in the condition of the component it feeds, creates nothing, says
//! `WaitingForDependencies` rather than `Creating`, and an edit that makes a running service
//! invalid changes none of its children.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use kinfer_api::aim::{AIMService, AIMServiceState};
use kinfer_api::kserve::InferenceService;
use kinfer_builders::naming::aim as names;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use support::serving::*;
use support::*;

/// The service is Failed for its generation.
fn failed(svc: &AIMService) -> bool {
    state_is(AIMServiceState::Failed)(svc)
}

async fn isvc_exists(env: &Env, svc: &str) -> Option<InferenceService> {
    let name = names::inference_service_name(svc, NS).unwrap();
    let api: Api<InferenceService> = Api::namespaced(env.client.clone(), NS);
    api.get_opt(name.as_str()).await.unwrap()
}

#[tokio::test]
async fn rejected_services_name_the_field_and_create_nothing() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "mi300x", "74a1").await;
    model(&env, NS).await;
    template(&env, NS, "mi300x-lat-fp8", "MI300X", "latency", "fp8").await;

    // A valid name of a config that does not exist; a name no object can have.
    let services = service(
        &env,
        NS,
        "missing-rc",
        json!({"model": {"name": "m"},
        "runtimeConfigName": "nope"}),
    )
    .await;
    service(
        &env,
        NS,
        "hostile-rc",
        json!({"model": {"name": "m"},
        "runtimeConfigName": "$(rm -rf /)"}),
    )
    .await;
    service(
        &env,
        NS,
        "hostile-model",
        json!({"model": {"name": "../m"}}),
    )
    .await;
    // The neighbour that keeps working.
    service(&env, NS, "ok", json!({"model": {"name": "m"}})).await;

    let svc = wait(&services, "missing-rc", "Failed", failed).await;
    let (s, reason, message) = cond(&svc, "RuntimeConfigReady");
    assert_eq!((s.as_str(), reason.as_str()), ("False", "ConfigNotFound"));
    assert!(
        message.starts_with("spec.runtimeConfigName: runtime config \"nope\" not found"),
        "{message}"
    );
    let svc = wait(&services, "hostile-rc", "Failed", failed).await;
    let (s, reason, message) = cond(&svc, "RuntimeConfigReady");
    assert_eq!((s.as_str(), reason.as_str()), ("False", "ConfigNotFound"));
    assert!(
        message.starts_with("spec.runtimeConfigName: \"$(rm -rf /)\" is not a valid object name"),
        "{message}"
    );
    assert_eq!(cond(&svc, "ConfigValid").1, "InvalidSpec");
    let svc = wait(&services, "hostile-model", "Failed", failed).await;
    let (_, reason, message) = cond(&svc, "ModelReady");
    assert_eq!(reason, "ModelNotFound");
    assert!(
        message.starts_with("spec.model.name: \"../m\""),
        "{message}"
    );

    wait(
        &services,
        "ok",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    for name in ["missing-rc", "hostile-rc"] {
        let svc = services.get(name).await.unwrap();
        // Model, template and cache are Ready for these too: only the runtime config holds
        // them, and nothing is being created.
        let (s, reason, message) = cond(&svc, "InferenceServiceReady");
        assert_eq!(
            (s.as_str(), reason.as_str()),
            ("False", "WaitingForDependencies"),
            "{name}: {message}"
        );
        assert!(message.contains("RuntimeConfig"), "{name}: {message}");
        assert!(isvc_exists(&env, name).await.is_none(), "{name}");
    }

    // A running service edited into an invalid spec: Failed naming the field; its
    // InferenceService is left exactly as it was.
    let before = isvc_exists(&env, "ok").await.expect("ok runs");
    services
        .patch(
            "ok",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"routing": {"enabled": true,
                "gatewayRef": {"name": "gw", "namespace": "infra"}, "requestTimeout": "P1D"},
                "env": [{"name": "A", "value": "x",
                         "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}})),
        )
        .await
        .unwrap();
    let svc = wait(&services, "ok", "Failed", failed).await;
    let (s, _, message) = cond(&svc, "HTTPRouteReady");
    assert_eq!(s, "False");
    assert!(
        message.starts_with("spec.routing.requestTimeout: \"P1D\""),
        "{message}"
    );
    let (_, _, message) = cond(&svc, "InferenceServiceReady");
    assert!(message.starts_with("spec.env[0].valueFrom"), "{message}");
    let (_, _, message) = cond(&svc, "Ready");
    assert!(message.contains("spec."), "{message}");
    steady_service(&env, &services, "ok").await;
    let after = isvc_exists(&env, "ok").await.expect("kept");
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "an invalid spec changes nothing"
    );
}
