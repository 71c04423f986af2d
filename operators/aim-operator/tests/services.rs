//! AIMService: model and template resolution, selection, derived templates, the
//! InferenceService, routing and long names, on the simulated cluster.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use gateway_api::httproutes::HttpRoute;
use kinfer_api::aim::{
    AIMClusterModel, AIMClusterServiceTemplate, AIMModel, AIMServiceState, AIMServiceTemplate,
};
use kinfer_api::kserve::InferenceService;
use kinfer_builders::naming::aim as names;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::serving::*;
use support::*;

async fn isvc(env: &Env, ns: &str, svc: &str) -> InferenceService {
    let name = names::inference_service_name(svc, ns).unwrap();
    let api: Api<InferenceService> = Api::namespaced(env.client.clone(), ns);
    let isvc = api.get(name.as_str()).await.unwrap();
    valid_against(
        "upstream-crds/kserve",
        "serving.kserve.io_inferenceservices.yaml",
        "v1beta1",
        &serde_json::to_value(&isvc).unwrap(),
    );
    isvc
}

async fn selection_cluster() -> Env {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "mi300x", "74a1").await;
    model(&env, NS).await;
    template(&env, NS, "mi300x-lat-fp8", "MI300X", "latency", "fp8").await;
    template(&env, NS, "mi300x-thr-fp16", "MI300X", "throughput", "fp16").await;
    template(&env, NS, "mi325x-lat-fp8", "MI325X", "latency", "fp8").await;
    env
}

#[tokio::test]
async fn automatic_selection_picks_mi300x_latency_fp8_and_runs() {
    let env = selection_cluster().await;
    let services = service(
        &env,
        NS,
        "chat",
        json!({"model": {"name": "m"}, "env": [
        {"name": "AIM_ENGINE_ARGS", "value": "{\"max_model_len\": 4096}"}]}),
    )
    .await;
    let svc = wait(
        &services,
        "chat",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let st = svc.status.as_ref().unwrap();
    assert_eq!(
        st.resolved_template.as_ref().unwrap().name.as_deref(),
        Some("mi300x-lat-fp8")
    );
    assert_eq!(
        st.resolved_model.as_ref().unwrap().name.as_deref(),
        Some("m")
    );
    let (s, reason, message) = cond(&svc, "TemplateReady");
    assert_eq!(
        (s.as_str(), reason.as_str()),
        ("True", "Resolved"),
        "{message}"
    );
    assert!(message.contains("mi300x-lat-fp8"), "{message}");
    assert_eq!(cond(&svc, "ModelReady").0, "True");
    assert_eq!(cond(&svc, "InferenceServiceReady").0, "True");
    assert!(st.routing.is_none(), "routing is off by default");

    let isvc = isvc(&env, NS, "chat").await;
    let model = isvc.spec.predictor.model.as_ref().unwrap();
    assert_eq!(model.runtime.as_deref(), Some("mi300x-lat-fp8"));
    let env_vars = model.env.as_ref().unwrap();
    let get = |n: &str| {
        env_vars
            .iter()
            .find(|e| e.name == n)
            .and_then(|e| e.value.clone())
    };
    assert_eq!(get("AIM_METRIC").as_deref(), Some("latency"));
    assert_eq!(get("AIM_PRECISION").as_deref(), Some("fp8"));
    assert_eq!(get("VLLM_USE_V1").as_deref(), Some("1"), "profile env");
    assert!(get("AIM_ENGINE_ARGS").unwrap().contains("4096"));
    let limits = model.resources.as_ref().unwrap().limits.as_ref().unwrap();
    assert_eq!(limits["amd.com/gpu"].0, "1");
    let routes: Api<HttpRoute> = Api::namespaced(env.client.clone(), NS);
    assert!(
        routes
            .list(&kube::api::ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    steady_service(&env, &services, "chat").await;
}

#[tokio::test]
async fn ambiguous_tie_names_the_tied_templates() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "mi300x", "74a1").await;
    model(&env, NS).await;
    template(&env, NS, "tie-a", "MI300X", "latency", "fp8").await;
    template(&env, NS, "tie-b", "MI300X", "latency", "fp8").await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    for t in ["tie-a", "tie-b"] {
        wait(&templates, t, "Ready", |t: &AIMServiceTemplate| {
            t.status
                .as_ref()
                .is_some_and(|s| s.status == kinfer_api::phase::Phase::Ready)
        })
        .await;
    }
    let services = service(&env, NS, "tie", json!({"model": {"name": "m"}})).await;
    let svc = wait(
        &services,
        "tie",
        "Failed",
        state_is(AIMServiceState::Failed),
    )
    .await;
    let (s, reason, message) = cond(&svc, "TemplateReady");
    assert_eq!(s, "False");
    assert_eq!(reason, "TemplateSelectionAmbiguous");
    assert!(
        message.contains("tie-a") && message.contains("tie-b"),
        "{message}"
    );
    steady_service(&env, &services, "tie").await;
}

#[tokio::test]
async fn explicit_template_and_overrides_derive_a_template() {
    let env = selection_cluster().await;
    let services = service(
        &env,
        NS,
        "explicit",
        json!({"model": {"name": "m"},
        "template": {"name": "mi300x-thr-fp16"}}),
    )
    .await;
    let svc = wait(
        &services,
        "explicit",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    assert_eq!(
        svc.status
            .unwrap()
            .resolved_template
            .unwrap()
            .name
            .as_deref(),
        Some("mi300x-thr-fp16")
    );

    // Overrides on an explicit namespace template: a derived template owned by the service.
    let services = service(
        &env,
        NS,
        "derived",
        json!({"model": {"name": "m"},
        "template": {"name": "mi300x-lat-fp8"}, "overrides": {"precision": "fp16"}}),
    )
    .await;
    let svc = wait(
        &services,
        "derived",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let want = names::derived_template_name(
        "mi300x-lat-fp8",
        names::Overrides {
            precision: Some("fp16"),
            ..Default::default()
        },
    )
    .unwrap();
    let resolved = svc
        .status
        .as_ref()
        .unwrap()
        .resolved_template
        .clone()
        .unwrap();
    assert_eq!(resolved.name.as_deref(), Some(want.as_str()));
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    let derived = templates.get(want.as_str()).await.unwrap();
    assert_eq!(
        derived.spec.common.parameters.precision.as_deref(),
        Some("fp16")
    );
    let owner = &derived.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("AIMService", "derived")
    );
    steady_service(&env, &services, "derived").await;

    // From a cluster-scoped base (upstream refuses this).
    let cmodels: Api<AIMClusterModel> = Api::all(env.client.clone());
    apply_json(
        &cmodels,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMClusterModel",
               "metadata": {"name": "cm"}, "spec": {"image": IMAGE, "imageMetadata": {}}}),
    )
    .await;
    let ctemplates: Api<AIMClusterServiceTemplate> = Api::all(env.client.clone());
    apply_json(
        &ctemplates,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMClusterServiceTemplate",
               "metadata": {"name": "cluster-base"},
               "spec": {"modelName": "cm", "metric": "latency", "precision": "fp8",
                        "hardware": {"gpu": {"model": "MI300X", "requests": 1}}}}),
    )
    .await;
    let services = service(
        &env,
        NS,
        "from-cluster",
        json!({"model": {"name": "cm"},
        "template": {"name": "cluster-base"}, "overrides": {"metric": "throughput"}}),
    )
    .await;
    let svc = wait(
        &services,
        "from-cluster",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let resolved = svc.status.unwrap().resolved_template.unwrap();
    assert!(
        resolved
            .name
            .as_deref()
            .unwrap()
            .starts_with("cluster-base-ovr-throughput-"),
        "{resolved:?}"
    );
    assert_eq!(resolved.namespace.as_deref(), Some(NS));
}

#[tokio::test]
async fn by_image_creates_a_model_without_owner() {
    let env = selection_cluster().await;
    let image = "ghcr.io/silogen/aim-other:0.2.0";
    let services = service(&env, NS, "by-image", json!({"model": {"image": image}})).await;
    let name = names::image_model_name(image).unwrap();
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);
    let created = wait(&models, name.as_str(), "created", |_m: &AIMModel| true).await;
    assert!(
        created.owner_references().is_empty(),
        "outlives the service"
    );
    assert_eq!(created.spec.image, image);
    // The model gets its metadata and a template.
    apply_json(
        &models,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
               "metadata": {"name": name.as_str(), "namespace": NS},
               "spec": {"image": image, "imageMetadata": {}}}),
    )
    .await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &templates,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
               "metadata": {"name": "other-lat", "namespace": NS},
               "spec": {"modelName": name.as_str(), "metric": "latency", "precision": "fp8",
                        "hardware": {"gpu": {"model": "MI300X", "requests": 1}}}}),
    )
    .await;
    let svc = wait(
        &services,
        "by-image",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let st = svc.status.unwrap();
    assert_eq!(
        st.resolved_model.unwrap().name.as_deref(),
        Some(name.as_str())
    );
    assert_eq!(
        st.resolved_template.unwrap().name.as_deref(),
        Some("other-lat")
    );

    // Two models with the same image: a clear error.
    apply_json(
        &models,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
               "metadata": {"name": "dup", "namespace": NS},
               "spec": {"image": image, "imageMetadata": {}}}),
    )
    .await;
    let services = service(&env, NS, "dup-image", json!({"model": {"image": image}})).await;
    let svc = wait(
        &services,
        "dup-image",
        "Failed",
        state_is(AIMServiceState::Failed),
    )
    .await;
    let (_, reason, message) = cond(&svc, "ModelReady");
    assert_eq!(reason, "MultipleModelsFound");
    assert!(
        message.contains("dup") && message.contains(name.as_str()),
        "{message}"
    );
}

#[tokio::test]
async fn routing_on_off_and_invalid_path_template() {
    let env = selection_cluster().await;
    let routing = |path: &str| {
        json!({"model": {"name": "m"}, "routing": {"enabled": true,
            "gatewayRef": {"name": "gw", "namespace": "gateways"},
            "pathTemplate": path, "requestTimeout": "120s",
            "annotations": {"example.com/a": "b"}}})
    };
    let services = service(
        &env,
        NS,
        "routed",
        routing("/{.metadata.namespace}/{.metadata.labels['team']}/{.metadata.name}"),
    )
    .await;
    let svc = wait(
        &services,
        "routed",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let st = svc.status.as_ref().unwrap();
    assert_eq!(
        st.routing.as_ref().unwrap().path.as_deref(),
        Some("/test/ml-ops/routed")
    );
    assert_eq!(cond(&svc, "HTTPRouteReady").0, "True");
    let routes: Api<HttpRoute> = Api::namespaced(env.client.clone(), NS);
    let route = routes
        .get(names::route_name("routed", NS).unwrap().as_str())
        .await
        .unwrap();
    valid_against(
        "upstream-crds/gateway-api",
        "gateway.networking.k8s.io_httproutes.yaml",
        "v1",
        &serde_json::to_value(&route).unwrap(),
    );
    assert_eq!(route.annotations()["example.com/a"], "b");
    steady_service(&env, &services, "routed").await;

    let services = service(&env, NS, "bad-path", routing("/{.metadata.labels['nope']}")).await;
    let svc = wait(
        &services,
        "bad-path",
        "Degraded",
        state_is(AIMServiceState::Degraded),
    )
    .await;
    let (s, reason, message) = cond(&svc, "HTTPRouteReady");
    assert_eq!(
        (s.as_str(), reason.as_str()),
        ("False", "PathTemplateInvalid")
    );
    assert!(message.contains("nope"), "{message}");
    assert!(
        routes
            .get_opt(names::route_name("bad-path", NS).unwrap().as_str())
            .await
            .unwrap()
            .is_none(),
        "no route for an invalid template"
    );
    assert!(svc.status.unwrap().routing.is_none());
    isvc(&env, NS, "bad-path").await;
}

#[tokio::test]
async fn long_service_and_namespace_names() {
    let env = selection_cluster().await;
    let long_ns = format!("ns-{}", "n".repeat(57));
    let long_svc = format!("svc-{}", "s".repeat(56));
    assert_eq!((long_ns.len(), long_svc.len()), (60, 60));
    // 60-character service in a short namespace: every name fits.
    let services = service(
        &env,
        NS,
        &long_svc,
        json!({"model": {"name": "m"}, "overrides": {"precision": "fp16"},
               "routing": {"enabled": true, "gatewayRef": {"name": "gw"}}}),
    )
    .await;
    let svc = wait(
        &services,
        &long_svc,
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let isvc = isvc(&env, NS, &long_svc).await;
    let host = format!("{}-predictor-{NS}", isvc.name_any());
    assert!(host.len() <= 63, "{host}");
    let template = svc.status.unwrap().resolved_template.unwrap().name.unwrap();
    assert!(template.len() <= 63, "{template}");
    let route = names::route_name(&long_svc, NS).unwrap();
    assert!(route.as_str().len() <= 63);
    let routes: Api<HttpRoute> = Api::namespaced(env.client.clone(), NS);
    routes.get(route.as_str()).await.unwrap();

    // 60-character namespace: `<isvc>-predictor-<namespace>` cannot fit: a clear failure.
    namespace(&env.client, &long_ns).await;
    model(&env, &long_ns).await;
    let services = service(&env, &long_ns, &long_svc, json!({"model": {"name": "m"}})).await;
    let svc = wait(
        &services,
        &long_svc,
        "Failed",
        state_is(AIMServiceState::Failed),
    )
    .await;
    let (_, reason, message) = cond(&svc, "InferenceServiceReady");
    assert_eq!(reason, "NameTooLong", "{message}");
}

#[tokio::test]
async fn a_template_rediscovering_keeps_serving_up() {
    use aim_operator::scheme::controller;
    use aim_operator::service::ServicePipeline;
    use aim_operator::template::discovery_job_name;
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    use kinfer_api::phase::Phase;
    use kube::api::{Patch, PatchParams};

    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    gpu_node(&env.client, "mi300x", "74a1").await;
    model(&env, NS).await;
    template(&env, NS, "only", "MI300X", "latency", "fp8").await;
    let services = service(
        &env,
        NS,
        "flap",
        json!({"model": {"name": "m"}, "minReplicas": 1, "maxReplicas": 2,
               "routing": {"enabled": true,
                           "gatewayRef": {"name": "gw", "namespace": "gateways"}}}),
    )
    .await;
    wait(
        &services,
        "flap",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let isvc_name = names::inference_service_name("flap", NS)
        .unwrap()
        .to_string();
    let isvcs: Api<InferenceService> = Api::namespaced(env.client.clone(), NS);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(env.client.clone(), NS);
    let routes: Api<HttpRoute> = Api::namespaced(env.client.clone(), NS);
    let hpa_name = format!("{isvc_name}-predictor");
    let route_name = names::route_name("flap", NS).unwrap().to_string();
    let uids = async || {
        (
            isvcs.get_opt(&isvc_name).await.unwrap().map(|o| o.uid()),
            hpas.get_opt(&hpa_name).await.unwrap().map(|o| o.uid()),
            routes.get_opt(&route_name).await.unwrap().map(|o| o.uid()),
        )
    };
    let before = uids().await;
    assert!(
        before.0.is_some() && before.1.is_some() && before.2.is_some(),
        "{before:?}"
    );

    // The template's profile id changes: it re-discovers, and its discovery Job is held, so it is
    // Progressing (and the service's selection waits) for a while.
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    let t = templates.get("only").await.unwrap();
    let m = Api::<AIMModel>::namespaced(env.client.clone(), NS)
        .get("m")
        .await
        .unwrap();
    let model_ref = model_ref(&m);
    let mut spec = t.spec.common.clone();
    spec.profile_id = Some("flap".into());
    let job = discovery_job_name(
        "only",
        Some(NS),
        &spec,
        &model_ref,
        &env.ctx,
        controller::TEMPLATE,
    )
    .unwrap();
    env.cluster.hold("jobs", NS, &job);
    templates
        .patch(
            "only",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"profileId": "flap"}})),
        )
        .await
        .unwrap();
    wait(
        &templates,
        "only",
        "re-discovering",
        |t: &AIMServiceTemplate| t.status.as_ref().is_some_and(|s| s.status != Phase::Ready),
    )
    .await;
    wait(&services, "flap", "template not Ready", |s| {
        s.status.as_ref().is_some_and(|st| {
            condition(&st.conditions, "TemplateReady").is_some_and(|c| c.status != "True")
        })
    })
    .await;
    // One more reconcile for certain, with the template still not Ready.
    let live = services.get("flap").await.unwrap();
    env.reconcile_once(
        ServicePipeline::new(std::sync::Arc::clone(&env.ctx)),
        controller::SERVICE,
        &live,
    )
    .await;
    assert_eq!(
        uids().await,
        before,
        "serving kept while the template re-discovers"
    );

    env.cluster.release("jobs", NS, &job);
    wait(
        &services,
        "flap",
        "Running again",
        state_is(AIMServiceState::Running),
    )
    .await;
    assert_eq!(uids().await, before);

    // Switching routing and autoscaling off removes the route and the HPA explicitly.
    services
        .patch(
            "flap",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"routing": {"enabled": false},
                                          "minReplicas": null, "maxReplicas": null}})),
        )
        .await
        .unwrap();
    wait_gone(&routes, &route_name).await;
    wait_gone(&hpas, &hpa_name).await;
    assert_eq!(uids().await, (before.0, None, None));
}
