//! The first automatic template choice waits for discovery: while a template of the model is
//! still Pending/Progressing the service is Pending with `TemplatesExistButNotReady` naming
//! it, even though another template is already Ready; once every template has settled the
//! best one (MI300X latency fp8) is chosen, whichever discovery finished first.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use aim_operator::scheme::controller;
use aim_operator::template::discovery_job_name;
use k8s_openapi::api::batch::v1::Job;
use kinfer_api::aim::{AIMModel, AIMServiceState, AIMServiceTemplate};
use kinfer_api::kserve::InferenceService;
use kinfer_api::phase::Phase;
use kinfer_builders::naming::aim as names;
use kube::Api;
use serde_json::json;
use support::serving::*;
use support::*;

#[tokio::test]
async fn first_choice_waits_for_discovering_templates_then_takes_the_best() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "mi300x", "74a1").await;
    // The templates first: without their model they wait (no discovery Job yet), so the best
    // template's Job can be held before it exists.
    template(&env, NS, "mi300x-lat-fp8", "MI300X", "latency", "fp8").await;
    template(&env, NS, "mi300x-thr-fp16", "MI300X", "throughput", "fp16").await;
    template(&env, NS, "mi325x-lat-fp8", "MI325X", "latency", "fp8").await;
    let model_spec: AIMModel = serde_json::from_value(
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
               "metadata": {"name": "m", "namespace": NS},
               "spec": {"image": IMAGE, "imageMetadata": {}}}),
    )
    .unwrap();
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    let best = templates.get("mi300x-lat-fp8").await.unwrap();
    // The Job name does not depend on the model's UID, so the local copy will do.
    let model_ref = model_ref(&model_spec);
    let job = discovery_job_name(
        "mi300x-lat-fp8",
        Some(NS),
        &best.spec.common,
        &model_ref,
        &env.ctx,
        controller::TEMPLATE,
    )
    .unwrap();
    env.cluster.hold("jobs", NS, &job);
    model(&env, NS).await;

    let services = service(&env, NS, "chat", json!({"model": {"name": "m"}})).await;
    // The lower-ranked template is Ready, the MI325X one NotAvailable (no such GPU), the best
    // one still discovering: the service waits and names it.
    wait(
        &templates,
        "mi300x-thr-fp16",
        "Ready",
        phase_is(Phase::Ready),
    )
    .await;
    wait(
        &templates,
        "mi325x-lat-fp8",
        "NotAvailable",
        phase_is(Phase::NotAvailable),
    )
    .await;
    let waiting = wait(&services, "chat", "waiting for discovery", |s| {
        s.status.as_ref().is_some_and(|st| {
            condition(&st.conditions, "TemplateReady")
                .is_some_and(|c| c.message.contains("waiting for the discovery of"))
        })
    })
    .await;
    let st = waiting.status.as_ref().unwrap();
    assert_eq!(st.status, AIMServiceState::Pending);
    let (status, reason, message) = cond(&waiting, "TemplateReady");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "TemplatesExistButNotReady")
    );
    assert!(message.contains("mi300x-lat-fp8"), "{message}");
    assert!(
        message.starts_with("mi300x-thr-fp16 ranks first among the Ready templates"),
        "{message}"
    );
    assert!(st.resolved_template.is_none(), "no choice while waiting");
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    assert!(
        jobs.get_opt(&job).await.unwrap().is_some(),
        "the held Job is the best template's discovery"
    );
    assert_eq!(
        templates
            .get("mi300x-lat-fp8")
            .await
            .unwrap()
            .status
            .map(|s| s.status),
        Some(Phase::Progressing)
    );
    let isvcs: Api<InferenceService> = Api::namespaced(env.client.clone(), NS);
    let isvc = names::inference_service_name("chat", NS).unwrap();
    assert!(isvcs.get_opt(isvc.as_str()).await.unwrap().is_none());

    // Discovery finishes: every template has settled, the best one is chosen and runs.
    env.cluster.release("jobs", NS, &job);
    let running = wait(
        &services,
        "chat",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let chosen = running.status.unwrap().resolved_template.unwrap();
    assert_eq!(chosen.name.as_deref(), Some("mi300x-lat-fp8"));
    assert!(isvcs.get_opt(isvc.as_str()).await.unwrap().is_some());
    steady_service(&env, &services, "chat").await;
}
