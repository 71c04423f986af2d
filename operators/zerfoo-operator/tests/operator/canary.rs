//! Canary sizing and routing: replicas proportional to the weight (also under autoscaling),
//! the weighted HTTPRoute from the operator's default gateway, and every created object valid
//! against its schema.

use gateway_api::httproutes::HttpRoute;
use kinfer_api::zerfoo::{CanarySpec, ZerfooInferenceService};
use kinfer_builders::gateway::GatewayRef;
use kinfer_crdcheck::{SchemaValidator, load_yaml_documents, shared_dir};
use kube::CustomResourceExt;
use zerfoo_operator::OperatorConfig;

use crate::common::{backends, condition_status, env, env_with, replicas, valid_spec};

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

    // Built-in kinds: every object deserialises into its typed schema (the API server stored
    // them; a wrong field would have been pruned or refused).
    assert_eq!(env.deployment_names().await.len(), 2);
    assert!(env.hpas.get("my-llama-hpa").await.is_ok());

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
