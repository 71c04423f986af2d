//! Canary sizing and routing: replicas proportional to the weight (also under autoscaling),
//! the weighted HTTPRoute from the operator's default gateway, and every created object valid
//! against its schema.

use std::collections::BTreeMap;

use gateway_api::httproutes::HttpRoute;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kinfer_api::zerfoo::{CanarySpec, ZerfooInferenceService};
use kinfer_builders::gateway::GatewayRef;
use kinfer_crdcheck::{SchemaValidator, load_yaml_documents, shared_dir};
use kube::CustomResourceExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use zerfoo_operator::OperatorConfig;

use crate::common::{Env, NS, backends, condition_status, env, env_with, replicas, valid_spec};

fn with_canary(weight: i32) -> kinfer_api::zerfoo::ZerfooInferenceServiceSpec {
    let mut spec = valid_spec();
    spec.canary = Some(CanarySpec {
        model_ref: "llama3-8b-q8".into(),
        weight,
    });
    spec
}

#[tokio::test]
async fn canary_replicas_are_proportional_to_the_weight() {
    let env = env().await;
    let mut spec = with_canary(25);
    spec.replicas = 10;
    env.create("fixed", spec).await.unwrap();
    env.converge("fixed").await;
    assert_eq!(replicas(&env.deployment("fixed-canary").await), Some(3));
    assert_eq!(env.get("fixed").await.status.unwrap().replicas, Some(13));

    env.edit("fixed", |s| s.canary.as_mut().unwrap().weight = 1)
        .await;
    env.converge("fixed").await;
    assert_eq!(replicas(&env.deployment("fixed-canary").await), Some(1));

    // Under autoscaling the canary follows the primary's current replicas.
    let mut spec = with_canary(25);
    spec.min_replicas = Some(2);
    spec.max_replicas = Some(10);
    env.create("scaled", spec).await.unwrap();
    env.converge("scaled").await;
    assert_eq!(replicas(&env.deployment("scaled-canary").await), Some(1));
    env.scale_as_hpa("scaled-primary", 8).await;
    env.converge("scaled").await;
    assert_eq!(replicas(&env.deployment("scaled-canary").await), Some(2));
    assert_eq!(replicas(&env.deployment("scaled-primary").await), Some(8));
}

fn default_gateway() -> OperatorConfig {
    OperatorConfig {
        default_gateway: Some(GatewayRef {
            name: "public".into(),
            namespace: Some("infra".into()),
            section_name: Some("https".into()),
        }),
        ..OperatorConfig::default()
    }
}

#[tokio::test]
async fn a_configured_gateway_gets_an_exactly_weighted_route() {
    let env = env_with(default_gateway()).await;
    env.create("my-llama", with_canary(30)).await.unwrap();
    env.converge("my-llama").await;
    let route = env.routes.get("my-llama-route").await.unwrap();
    assert_eq!(
        backends(&route),
        [
            ("my-llama-primary".to_owned(), 70),
            ("my-llama-canary".to_owned(), 30)
        ]
    );
    let parent = &route.spec.parent_refs.as_ref().unwrap()[0];
    assert_eq!(parent.name, "public");
    assert_eq!(parent.namespace.as_deref(), Some("infra"));
    assert_eq!(parent.section_name.as_deref(), Some("https"));
    let zis = env.get("my-llama").await;
    assert_eq!(condition_status(&zis, "RouteReady"), "True");
    assert!(zis.status.unwrap().ready);

    env.edit("my-llama", |s| s.canary.as_mut().unwrap().weight = 50)
        .await;
    env.converge("my-llama").await;
    let route = env.routes.get("my-llama-route").await.unwrap();
    assert_eq!(backends(&route)[1], ("my-llama-canary".to_owned(), 50));
}

#[tokio::test]
async fn every_created_object_validates_against_its_schema() {
    let env = env_with(default_gateway()).await;
    let mut spec = with_canary(20);
    spec.min_replicas = Some(2);
    spec.max_replicas = Some(10);
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;

    // Our own kind, status included, against the CRD generated from kinfer-api.
    let zis = env.get("my-llama").await;
    let crd = serde_json::to_value(ZerfooInferenceService::crd()).unwrap();
    let ours = SchemaValidator::from_crd(&crd, Some("v1")).unwrap();
    let mut value = serde_json::to_value(&zis).unwrap();
    value["metadata"] = serde_json::json!({});
    assert_eq!(ours.errors(&value), Vec::<String>::new());

    // Built-in kinds: each stored object round-trips through its k8s-openapi type without
    // losing or changing a field (so every field is one the typed schema knows), and is
    // structurally sound.
    let deployments: Vec<Deployment> =
        round_trip(&env, &["my-llama-primary", "my-llama-canary"]).await;
    for d in &deployments {
        check_deployment(d);
    }
    let services: Vec<Service> = round_trip(
        &env,
        &["my-llama-svc", "my-llama-primary", "my-llama-canary"],
    )
    .await;
    for svc in &services {
        let name = svc.name_any();
        let spec = svc.spec.as_ref().expect("service spec");
        assert!(
            spec.selector.as_ref().is_some_and(|s| !s.is_empty()),
            "{name}: selects nothing"
        );
        for port in spec.ports.iter().flatten() {
            assert!(
                port.name.as_deref().is_some_and(|n| !n.is_empty()),
                "{name}: unnamed port"
            );
            assert_eq!(
                port.target_port,
                Some(IntOrString::String("http".into())),
                "{name}: targets the pods' named port"
            );
        }
        // Every Service selects pods of at least one Deployment.
        let selector = spec.selector.as_ref().unwrap();
        assert!(
            deployments
                .iter()
                .any(|d| subset(selector, template_labels(d))),
            "{name}: its selector matches no Deployment's pods"
        );
    }
    let hpas: Vec<HorizontalPodAutoscaler> = round_trip(&env, &["my-llama-hpa"]).await;
    let hpa = hpas[0].spec.as_ref().expect("hpa spec");
    assert_eq!(hpa.scale_target_ref.api_version.as_deref(), Some("apps/v1"));
    assert_eq!(hpa.scale_target_ref.kind, "Deployment");
    assert_eq!(hpa.scale_target_ref.name, "my-llama-primary");
    assert_eq!((hpa.min_replicas, hpa.max_replicas), (Some(2), 10));
    assert!(
        hpa.metrics.iter().flatten().any(|m| m.type_ == "Resource"),
        "the HPA scales on a resource metric"
    );

    // The HTTPRoute against the upstream Gateway API CRD.
    let Some(shared) = shared_dir() else { return };
    let docs = load_yaml_documents(
        &shared.join("upstream-crds/gateway-api/gateway.networking.k8s.io_httproutes.yaml"),
    );
    let upstream = SchemaValidator::from_crd(&docs[0], Some("v1")).unwrap();
    let route: HttpRoute = env.routes.get("my-llama-route").await.unwrap();
    let mut value = serde_json::to_value(&route).unwrap();
    value["metadata"] = serde_json::json!({});
    if let Some(s) = value.as_object_mut() {
        s.remove("status");
    }
    assert_eq!(upstream.errors(&value), Vec::<String>::new());
}

/// Reads `names` of kind `K` untyped and deserialises each into `K`; serialising the typed
/// object back must give exactly what the API server stored (status aside).
async fn round_trip<K>(env: &Env, names: &[&str]) -> Vec<K>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
{
    let api: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), NS, &ApiResource::erase::<K>(&()));
    let mut out = Vec::new();
    for name in names {
        let mut raw = serde_json::to_value(api.get(name).await.expect("stored")).unwrap();
        let typed: K = serde_json::from_value(raw.clone())
            .unwrap_or_else(|e| panic!("{name} does not deserialise as {}: {e}", K::kind(&())));
        let mut back = serde_json::to_value(&typed).unwrap();
        // Status is written by the (simulated) controllers, not by this operator, and may
        // carry fields newer than the k8s-openapi version in use.
        for v in [&mut raw, &mut back] {
            v.as_object_mut().unwrap().remove("status");
        }
        assert_eq!(
            back,
            raw,
            "{name} does not round-trip through {}",
            K::kind(&())
        );
        out.push(typed);
    }
    out
}

fn template_labels(d: &Deployment) -> &BTreeMap<String, String> {
    d.spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.as_ref())
        .expect("template labels")
}

fn subset(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The selector selects the template's pods, the pod is restricted (Pod Security Standard
/// `restricted`), and every container port is named.
fn check_deployment(d: &Deployment) {
    let name = d.name_any();
    let spec = d.spec.as_ref().expect("deployment spec");
    assert!(
        spec.selector.match_expressions.is_none(),
        "{name}: match expressions"
    );
    let selector = spec.selector.match_labels.as_ref().expect("match labels");
    assert!(!selector.is_empty(), "{name}: empty selector");
    assert!(
        subset(selector, template_labels(d)),
        "{name}: selector {selector:?} is not a subset of the template labels"
    );
    let pod = spec.template.spec.as_ref().expect("pod spec");
    let pod_security = pod.security_context.as_ref().expect("pod security context");
    assert_eq!(
        pod_security.run_as_non_root,
        Some(true),
        "{name}: runAsNonRoot"
    );
    assert!(
        pod_security.run_as_user.is_some_and(|u| u != 0),
        "{name}: runAsUser"
    );
    assert!(!pod.containers.is_empty());
    for c in pod
        .containers
        .iter()
        .chain(pod.init_containers.iter().flatten())
    {
        let sc = c
            .security_context
            .as_ref()
            .expect("container security context");
        assert_eq!(
            sc.allow_privilege_escalation,
            Some(false),
            "{name}/{}",
            c.name
        );
        assert_ne!(sc.privileged, Some(true), "{name}/{}", c.name);
        assert_ne!(sc.run_as_non_root, Some(false), "{name}/{}", c.name);
        let dropped = sc.capabilities.as_ref().and_then(|c| c.drop.as_ref());
        assert!(
            dropped.is_some_and(|d| d.iter().any(|c| c == "ALL")),
            "{name}/{}: capabilities not dropped",
            c.name
        );
        let seccomp = sc
            .seccomp_profile
            .as_ref()
            .or(pod_security.seccomp_profile.as_ref())
            .map(|p| p.type_.as_str());
        assert!(
            matches!(seccomp, Some("RuntimeDefault" | "Localhost")),
            "{name}/{}: seccomp {seccomp:?}",
            c.name
        );
        let ports = c.ports.as_deref().unwrap_or_default();
        assert!(!ports.is_empty(), "{name}/{}: no ports", c.name);
        for port in ports {
            assert!(
                port.name.as_deref().is_some_and(|n| !n.is_empty()),
                "{name}/{}: port {} unnamed",
                c.name,
                port.container_port
            );
        }
    }
}
