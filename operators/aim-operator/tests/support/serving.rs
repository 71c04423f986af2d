//! Serving-test helpers (services, caches, artifacts) shared by `services.rs`, `caching.rs` and
//! `artifacts.rs`.

use std::sync::Arc;

use kinfer_api::phase::Phase;
use kube::CustomResourceExt;

use aim_operator::artifact::ArtifactPipeline;
use aim_operator::cache::CachePipeline;
use aim_operator::scheme::controller;
use aim_operator::service::ServicePipeline;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kinfer_api::aim::{
    AIMArtifact, AIMModel, AIMService, AIMServiceState, AIMServiceTemplate, AIMTemplateCache,
};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use super::{Env, NS, apply_json, condition, echo_hook};

/// The AIM image of the test models.
pub const IMAGE: &str = "ghcr.io/silogen/aim-dummy:0.1.0";

/// AIMModel `m` with inline (empty) metadata.
pub async fn model(env: &Env, ns: &str) {
    model_with(&env.client, ns).await;
}

/// [`model`] through `client`.
pub async fn model_with(client: &Client, ns: &str) {
    let models: Api<AIMModel> = Api::namespaced(client.clone(), ns);
    apply_json(
        &models,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
               "metadata": {"name": "m", "namespace": ns},
               "spec": {"image": IMAGE, "imageMetadata": {}}}),
    )
    .await;
}

/// A template of model `m` for one GPU.
pub async fn template(env: &Env, ns: &str, name: &str, gpu: &str, metric: &str, precision: &str) {
    template_with(&env.client, ns, (name, gpu, metric, precision)).await;
}

/// [`template`] through `client`: `(name, gpu, metric, precision)`.
pub async fn template_with(
    client: &Client,
    ns: &str,
    (name, gpu, metric, precision): (&str, &str, &str, &str),
) {
    let templates: Api<AIMServiceTemplate> = Api::namespaced(client.clone(), ns);
    apply_json(
        &templates,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
               "metadata": {"name": name, "namespace": ns},
               "spec": {"modelName": "m", "metric": metric, "precision": precision,
                        "hardware": {"gpu": {"model": gpu, "requests": 1}}}}),
    )
    .await;
}

/// An AIMService labelled `team=ML.Ops`.
pub async fn service(env: &Env, ns: &str, name: &str, spec: serde_json::Value) -> Api<AIMService> {
    let services: Api<AIMService> = Api::namespaced(env.client.clone(), ns);
    apply_json(
        &services,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
               "metadata": {"name": name, "namespace": ns, "labels": {"team": "ML.Ops"}},
               "spec": spec}),
    )
    .await;
    services
}

/// A namespace.
pub async fn namespace(client: &Client, name: &str) {
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await
        .unwrap();
}

/// The service is in state `s` for its current generation.
pub fn state_is(s: AIMServiceState) -> impl Fn(&AIMService) -> bool {
    move |svc: &AIMService| {
        svc.status
            .as_ref()
            .is_some_and(|st| st.status == s && st.observed_generation == svc.meta().generation)
    }
}

/// (status, reason, message) of condition `t`.
pub fn cond_in(conditions: &[Condition], t: &str) -> (String, String, String) {
    let c = condition(conditions, t).unwrap_or_else(|| panic!("{t} missing: {conditions:#?}"));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

/// (status, reason, message) of a service's condition `t`.
pub fn cond(svc: &AIMService, t: &str) -> (String, String, String) {
    cond_in(&svc.status.as_ref().unwrap().conditions, t)
}

/// Whether artifact `a` has a condition `type_` with reason `reason`.
pub fn artifact_reason(a: &AIMArtifact, type_: &str, reason: &str) -> bool {
    a.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == type_ && c.reason == reason)
    })
}

/// A second reconcile of service `name` writes nothing.
pub async fn steady_service(env: &Env, services: &Api<AIMService>, name: &str) {
    let live = services.get(name).await.unwrap();
    let r = env
        .reconcile_once(
            ServicePipeline::new(Arc::clone(&env.ctx)),
            controller::SERVICE,
            &live,
        )
        .await;
    assert_eq!(r.writes(), 0, "service {name} steady: {r:?}");
}

/// Whether every shared artifact of `ns` that caches use carries the creator label of the
/// user sorting first (the takeover rule of `aim_operator::cache::compose::artifacts`), on the
/// API server and in the operator's artifact informer.
async fn takeovers_done(env: &Env, ns: &str) -> Result<(), String> {
    let caches = Api::<AIMTemplateCache>::namespaced(env.client.clone(), ns)
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?;
    let artifacts = Api::<AIMArtifact>::namespaced(env.client.clone(), ns)
        .list(&ListParams::default())
        .await
        .map_err(|e| e.to_string())?;
    for a in artifacts
        .items
        .iter()
        .filter(|a| a.owner_references().is_empty())
    {
        let name = a.name_any();
        let Some(first) = caches
            .items
            .iter()
            .filter(|c| {
                c.status
                    .as_ref()
                    .is_some_and(|s| s.artifacts.values().any(|r| r.name == name))
            })
            .map(ResourceExt::name_any)
            .min()
        else {
            continue;
        };
        let label = aim_operator::cache::compose::CREATOR_LABEL;
        let want = aim_operator::scheme::label_value(&first);
        if a.labels().get(label) != Some(&want) {
            return Err(format!(
                "{name} is labelled {:?}, not {want}",
                a.labels().get(label)
            ));
        }
        let informed =
            aim_operator::informers::Informers::get(&env.ctx.informers.artifacts, Some(ns), &name)
                .await
                .flatten();
        if informed.as_ref().and_then(|c| c.resource_version()) != a.resource_version() {
            return Err(format!("the operator's cache of {name} lags"));
        }
    }
    Ok(())
}

/// A second reconcile of every service, template cache and artifact of `ns` writes nothing.
///
/// A shared artifact's takeover by the cache sorting first is work the running operator may
/// still have queued when the states the test waited for are reached: it is awaited first.
pub async fn steady(env: &Env, ns: &str) {
    let settled = tokio::time::timeout(super::TIMEOUT, async {
        loop {
            match takeovers_done(env, ns).await {
                Ok(()) => return,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
    })
    .await;
    if settled.is_err() {
        let why = takeovers_done(env, ns).await;
        panic!("shared artifacts did not settle: {why:?}");
    }
    let services: Api<AIMService> = Api::namespaced(env.client.clone(), ns);
    for s in services.list(&ListParams::default()).await.unwrap() {
        steady_service(env, &services, &s.name_any()).await;
    }
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), ns);
    for c in caches.list(&ListParams::default()).await.unwrap() {
        let pipeline = CachePipeline::new(Arc::clone(&env.ctx));
        let r = env
            .reconcile_once(pipeline, aim_operator::cache::CONTROLLER, &c)
            .await;
        assert_eq!(r.writes(), 0, "cache {} steady: {r:?}", c.name_any());
    }
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), ns);
    for a in artifacts.list(&ListParams::default()).await.unwrap() {
        let pipeline = ArtifactPipeline::new(Arc::clone(&env.ctx));
        let r = env
            .reconcile_once(pipeline, aim_operator::artifact::CONTROLLER, &a)
            .await;
        assert_eq!(r.writes(), 0, "artifact {} steady: {r:?}", a.name_any());
    }
}

/// `obj` validates against the CRD in `../shared/<dir>/<file>`: skipped with a message without
/// the data, a failure under CI ([`kinfer_crdcheck::shared_dir`]).
pub fn valid_against(dir: &str, file: &str, version: &str, obj: &serde_json::Value) {
    let Some(shared) = kinfer_crdcheck::shared_dir() else {
        return;
    };
    let crd = kinfer_crdcheck::load_yaml_documents(&shared.join(dir).join(file)).remove(0);
    let v = kinfer_crdcheck::SchemaValidator::from_crd(&crd, Some(version)).unwrap();
    let errors = v.errors(obj);
    assert!(errors.is_empty(), "{file}: {errors:?}");
}

/// Discovery answers with its profile; every other pod (downloads) logs nothing.
pub fn discovery_hook() -> kinfer_testkit::simulator::LogHook {
    let echo = echo_hook(|_| None);
    Arc::new(move |ns: &str, name: &str, pod: &serde_json::Value| {
        if name.starts_with("discover-") {
            echo(ns, name, pod)
        } else {
            Some(String::new())
        }
    })
}

pub fn phase_is<K>(p: Phase) -> impl Fn(&K) -> bool
where
    K: Resource + serde::Serialize,
{
    move |o: &K| serde_json::to_value(o).unwrap()["status"]["status"] == json!(p.as_str())
}

/// Every object validates against its own CRD.
pub fn valid<K: CustomResourceExt + serde::Serialize>(obj: &K) {
    let crd = serde_json::to_value(K::crd()).unwrap();
    let v = kinfer_crdcheck::SchemaValidator::from_crd(&crd, Some("v1alpha1")).unwrap();
    let errors = v.errors(&serde_json::to_value(obj).unwrap());
    assert!(errors.is_empty(), "{} invalid: {errors:?}", K::crd_name());
}

/// And, for the kinds upstream defines, against upstream's CRD.
pub fn valid_upstream(file: &str, obj: &serde_json::Value) {
    valid_against("reference/aim/crds", file, "v1alpha1", obj);
}

/// Discovery answers with its profile, size checks with 500 MB, downloads log nothing.
pub fn sample_hook() -> kinfer_testkit::simulator::LogHook {
    let discovery = discovery_hook();
    Arc::new(move |ns: &str, name: &str, pod: &serde_json::Value| {
        if pod["spec"]["containers"][0]["name"] == "check-size" {
            let uri = pod["spec"]["containers"][0]["command"][1].clone();
            Some(json!({"url": uri, "sizeBytes": 500_000_000}).to_string())
        } else {
            discovery(ns, name, pod)
        }
    })
}

/// The template the template-cache sample (10) names, of model `model`: inline sources, so no
/// discovery is needed.
pub async fn happy_path_template(env: &Env, model: &str) {
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &templates,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
               "metadata": {"name": "happy-path-namespace", "namespace": NS},
               "spec": {"modelName": model,
                        "modelSources": [{"modelId": "org/happy", "sourceUri": "hf://org/happy", "size": "1Gi"}]}}),
    )
    .await;
}
