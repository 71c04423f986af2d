//! AIMService caching: shared and dedicated template caches, artifacts, the finalizer and
//! namespace deletion, custom models, on the simulated cluster.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
use kinfer_api::aim::{AIMArtifact, AIMService, AIMServiceState, AIMTemplateCache, CachingMode};
use kinfer_api::kserve::InferenceService;
use kinfer_api::phase::Phase;
use kinfer_builders::naming::aim as names;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::serving::*;
use support::*;

const TEMPLATE: &str = "mi300x-lat-fp8";

async fn catalog(env: &Env, ns: &str) {
    model(env, ns).await;
    template(env, ns, TEMPLATE, "MI300X", "latency", "fp8").await;
}

async fn cluster() -> Env {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    gpu_node(&env.client, "mi300x", "74a1").await;
    catalog(&env, NS).await;
    env
}

fn mounts(isvc: &InferenceService) -> Vec<(String, String)> {
    let p = &isvc.spec.predictor;
    let claims: Vec<(String, String)> = p
        .volumes
        .iter()
        .flatten()
        .filter_map(|v| {
            Some((
                v.name.clone(),
                v.persistent_volume_claim.as_ref()?.claim_name.clone(),
            ))
        })
        .collect();
    p.model
        .as_ref()
        .and_then(|m| m.volume_mounts.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            let claim = claims
                .iter()
                .find(|(n, _)| *n == m.name)
                .map(|(_, c)| c.clone())
                .unwrap_or_default();
            (claim, m.mount_path)
        })
        .collect()
}

#[tokio::test]
async fn shared_cache_is_reused_by_two_services_and_outlives_them_when_ready() {
    let env = cluster().await;
    let a = service(&env, NS, "a", json!({"model": {"name": "m"}})).await;
    let b = service(
        &env,
        NS,
        "b",
        json!({"model": {"name": "m"}, "caching": {"mode": "Auto"}}),
    )
    .await;
    let a_live = wait(&a, "a", "Running", state_is(AIMServiceState::Running)).await;
    let b_live = wait(&b, "b", "Running", state_is(AIMServiceState::Running)).await;

    let name = names::shared_template_cache_name(TEMPLATE, NS)
        .unwrap()
        .to_string();
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let all = caches.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(
        all.iter().map(ResourceExt::name_any).collect::<Vec<_>>(),
        vec![name.clone()],
        "one cache"
    );
    let cache = &all[0];
    assert!(
        cache.owner_references().is_empty(),
        "a shared cache has no owner"
    );
    assert_eq!(
        cache.labels()["aim.eai.amd.com/service"],
        "a",
        "kept by the first service by name"
    );
    assert_eq!(cache.spec.mode, CachingMode::Shared);
    assert_eq!(cache.spec.template_name, TEMPLATE);
    assert!(
        cache.spec.model_sources.is_empty(),
        "sources are read from the template"
    );
    assert_eq!(
        cache
            .status
            .as_ref()
            .unwrap()
            .resolved_template_kind
            .as_deref(),
        Some("AIMServiceTemplate")
    );
    valid(cache);
    valid_upstream(
        "aim.eai.amd.com_aimtemplatecaches.yaml",
        &serde_json::to_value(cache).unwrap(),
    );
    let cache_ref = |s: &AIMService| {
        s.status
            .as_ref()
            .unwrap()
            .cache
            .as_ref()
            .unwrap()
            .template_cache_ref
            .clone()
            .unwrap()
    };
    assert_eq!(cache_ref(&a_live), cache_ref(&b_live));
    assert_eq!(cache_ref(&a_live).name.as_deref(), Some(name.as_str()));
    assert_eq!(cond(&a_live, "CacheReady").0, "True");

    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let arts = artifacts.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(arts.len(), 1, "one artifact: {arts:#?}");
    let art = &arts[0];
    assert!(art.owner_references().is_empty());
    let st = art.status.as_ref().unwrap();
    assert_eq!(
        (st.status, st.mode),
        (Phase::Ready, Some(CachingMode::Shared))
    );
    valid(art);
    valid_upstream(
        "aim.eai.amd.com_aimartifacts.yaml",
        &serde_json::to_value(art).unwrap(),
    );
    // 2 GiB from discovery + 10% headroom, rounded up.
    let pvc_name = st.persistent_volume_claim.clone().unwrap();
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), NS);
    let pvc = pvcs.get(&pvc_name).await.unwrap();
    let spec = pvc.spec.unwrap();
    assert_eq!(
        spec.resources.unwrap().requests.unwrap()["storage"].0,
        "3Gi"
    );
    assert_eq!(spec.access_modes.unwrap(), vec!["ReadWriteMany".to_owned()]);
    let status_artifact = &cache.status.as_ref().unwrap().artifacts["org/model"];
    assert_eq!(status_artifact.name, art.name_any());
    assert_eq!(
        status_artifact.persistent_volume_claim.as_deref(),
        Some(pvc_name.as_str())
    );

    let isvcs: Api<InferenceService> = Api::namespaced(env.client.clone(), NS);
    for svc in ["a", "b"] {
        let isvc = isvcs
            .get(names::inference_service_name(svc, NS).unwrap().as_str())
            .await
            .unwrap();
        assert_eq!(
            mounts(&isvc),
            vec![(pvc_name.clone(), "/workspace/cache/org/model".to_owned())],
            "{svc}"
        );
    }
    steady(&env, NS).await;

    // The cache is recreated (deleted by hand): serving is not interrupted meanwhile, and the
    // new cache reuses the Ready artifact.
    let isvc_a = names::inference_service_name("a", NS).unwrap();
    let before = isvcs.get(isvc_a.as_str()).await.unwrap();
    caches
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let old_uid = cache.uid();
    wait(
        &caches,
        &name,
        "recreated and Ready",
        |c: &AIMTemplateCache| {
            c.uid() != old_uid && c.status.as_ref().is_some_and(|s| s.status == Phase::Ready)
        },
    )
    .await;
    let after = isvcs.get(isvc_a.as_str()).await.unwrap();
    assert_eq!(after.uid(), before.uid(), "the InferenceService was kept");
    assert_eq!(mounts(&after), mounts(&before));
    assert_eq!(
        artifacts
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    // The Ready shared cache survives its creator and the other service keeps running.
    a.delete("a", &DeleteParams::default()).await.unwrap();
    wait_gone(&a, "a").await;
    assert!(
        caches.get_opt(&name).await.unwrap().is_some(),
        "a Ready shared cache is kept"
    );
    wait(&b, "b", "still Running", state_is(AIMServiceState::Running)).await;
    // The next service by name keeps it applied from its next reconcile on.
    let live_b = b.get("b").await.unwrap();
    let pipeline = aim_operator::service::ServicePipeline::new(Arc::clone(&env.ctx));
    // (An event may have woken it already: whether this one writes is a race.)
    env.reconcile_once(pipeline, aim_operator::scheme::controller::SERVICE, &live_b)
        .await;
    let cache = caches.get(&name).await.unwrap();
    assert_eq!(cache.labels()["aim.eai.amd.com/service"], "b");
    steady(&env, NS).await;
}

#[tokio::test]
async fn dedicated_cache_is_owned_by_the_service_and_collected_with_it() {
    let env = cluster().await;
    let services = service(
        &env,
        NS,
        "solo",
        json!({"model": {"name": "m"}, "caching": {"mode": "Dedicated"}}),
    )
    .await;
    let live = wait(
        &services,
        "solo",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let name = names::dedicated_template_cache_name(TEMPLATE, "solo", &live.uid().unwrap())
        .unwrap()
        .to_string();
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let cache = caches.get(&name).await.unwrap();
    assert_eq!(cache.spec.mode, CachingMode::Dedicated);
    let owner = &cache.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("AIMService", live.uid().unwrap().as_str(), Some(true))
    );
    valid(&cache);
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let art_name = cache.status.as_ref().unwrap().artifacts["org/model"]
        .name
        .clone();
    let art = artifacts.get(&art_name).await.unwrap();
    assert_eq!(
        art.owner_references()[0].uid,
        cache.uid().unwrap(),
        "owned by the cache"
    );
    assert_eq!(
        art.status.as_ref().unwrap().mode,
        Some(CachingMode::Dedicated)
    );
    steady(&env, NS).await;

    // A label someone else puts on the owned artifact stays theirs: the cache keeps applying
    // what it computes, not the live object.
    artifacts
        .patch(
            &art_name,
            &kube::api::PatchParams::apply("someone").force(),
            &kube::api::Patch::Apply(json!({
                "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
                "metadata": {"name": art_name, "namespace": NS,
                             "labels": {"example.com/owner": "ops"}}})),
        )
        .await
        .unwrap();
    // A propagated label change makes the cache write the artifact again.
    caches
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"metadata": {"labels": {"aim.eai.amd.com/extra": "1"}}}),
            ),
        )
        .await
        .unwrap();
    let art = wait(
        &artifacts,
        &art_name,
        "label propagated",
        |a: &AIMArtifact| a.labels().get("aim.eai.amd.com/extra").is_some(),
    )
    .await;
    assert_eq!(art.labels()["example.com/owner"], "ops");
    for m in art.metadata.managed_fields.iter().flatten() {
        let fields = serde_json::to_string(&m.fields_v1).unwrap();
        if m.manager.as_deref() != Some("someone") {
            assert!(
                !fields.contains("example.com/owner"),
                "{:?} took the label over",
                m.manager
            );
        }
    }

    services
        .delete("solo", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&services, "solo").await;
    wait_gone(&caches, &name).await;
    wait_gone(&artifacts, &art_name).await;
}

/// A custom model whose weights come from `uri`, in namespace `ns`.
fn custom(uri: &str, id: &str) -> serde_json::Value {
    json!({"model": {"custom": {"baseImage": IMAGE, "hardware": {"gpu": {"requests": 1}},
                                "modelSources": [{"modelId": id, "sourceUri": uri, "size": "1Gi"}]}},
           "template": {"allowUnoptimized": true}})
}

/// Download pods of artifacts for `gated` URIs fail as a gated repository would.
fn gated_hook() -> kinfer_testkit::simulator::LogHook {
    let echo = echo_hook(|_| None);
    Arc::new(move |ns: &str, name: &str, pod: &serde_json::Value| {
        if name.starts_with("discover-") {
            echo(ns, name, pod)
        } else if name.starts_with("hf---org-gated") {
            Some("huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url https://huggingface.co/org/gated".into())
        } else {
            Some(String::new())
        }
    })
}

/// A cluster where downloads of `hf://org/gated` fail as a gated repository would.
async fn gated_cluster() -> Env {
    let env = start().await;
    env.cluster.simulator().set_log_hook(gated_hook());
    env.cluster.simulator().job_outcome(
        "hf---org-gated",
        kinfer_testkit::simulator::JobOutcome::Fail,
    );
    gpu_node(&env.client, "mi300x", "74a1").await;
    env
}

#[tokio::test]
async fn custom_model_service_caches_its_source_and_surfaces_a_failed_download() {
    let env = gated_cluster().await;

    let ok = service(&env, NS, "custom", custom("hf://org/custom", "org/custom")).await;
    let live = wait(&ok, "custom", "Running", state_is(AIMServiceState::Running)).await;
    let isvc: Api<InferenceService> = Api::namespaced(env.client.clone(), NS);
    let isvc = isvc
        .get(
            names::inference_service_name("custom", NS)
                .unwrap()
                .as_str(),
        )
        .await
        .unwrap();
    let m = mounts(&isvc);
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].1, "/workspace/cache/org/custom");
    assert_eq!(cond(&live, "CacheReady").0, "True");

    let bad = service(&env, NS, "gated", custom("hf://org/gated", "org/gated")).await;
    let failed = wait(&bad, "gated", "Failed", state_is(AIMServiceState::Failed)).await;
    let (status, reason, message) = cond(&failed, "CacheReady");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "SourceAuthFailure"),
        "{message}"
    );
    assert!(message.contains("gated repo"), "{message}");
    let (status, reason, _) = cond(&failed, "InferenceServiceReady");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "WaitingForDependencies")
    );
    let names_of_isvcs: Vec<String> = Api::<InferenceService>::namespaced(env.client.clone(), NS)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert!(
        !names_of_isvcs.iter().any(|n| n.starts_with("gated")),
        "no InferenceService without a Ready cache: {names_of_isvcs:?}"
    );
}

/// The cache a service's status names.
fn cache_ref(s: &AIMService) -> Option<String> {
    aim_operator::service::cleanup::cache_in_use(s).map(str::to_owned)
}

#[tokio::test]
async fn deletion_removes_the_unready_caches_the_service_alone_uses_and_never_blocks_the_namespace()
{
    let env = gated_cluster().await;
    let services = service(&env, NS, "gated", custom("hf://org/gated", "org/gated")).await;
    let live = wait(
        &services,
        "gated",
        "Failed",
        state_is(AIMServiceState::Failed),
    )
    .await;
    assert!(
        live.finalizers()
            .contains(&aim_operator::service::FINALIZER.to_owned())
    );
    let cache_name = cache_ref(&live).unwrap();
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let cache = wait(&caches, &cache_name, "Failed", phase_is(Phase::Failed)).await;
    assert!(cache.owner_references().is_empty(), "shared");
    assert!(
        cache
            .finalizers()
            .contains(&aim_operator::cache::FINALIZER.to_owned())
    );
    let (_, reason, _) = cond_in(&cache.status.as_ref().unwrap().conditions, "ArtifactsReady");
    assert_eq!(reason, "SourceAuthFailure");
    let art_name = cache.status.as_ref().unwrap().artifacts["org/gated"]
        .name
        .clone();

    // A second service of the same model waits for the same shared cache, which carries the
    // first one's label: deleting the first leaves the cache to the second.
    service(&env, NS, "gated-too", custom("hf://org/gated", "org/gated")).await;
    wait(
        &services,
        "gated-too",
        "using the same cache",
        |s: &AIMService| cache_ref(s).as_deref() == Some(cache_name.as_str()),
    )
    .await;
    services
        .delete("gated", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&services, "gated").await;
    // The finalizer has run: whatever it deleted is being deleted by now.
    let kept = caches.get(&cache_name).await.unwrap();
    assert!(
        kept.metadata.deletion_timestamp.is_none(),
        "the cache another service uses was deleted"
    );
    services
        .delete("gated-too", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&services, "gated-too").await;
    wait_gone(&caches, &cache_name).await;
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    wait_gone(&artifacts, &art_name).await;

    // The same in a namespace that is being deleted: nothing holds it up.
    let doomed = "doomed";
    namespace(&env.client, doomed).await;
    let nss: Api<Namespace> = Api::all(env.client.clone());
    let doomed_services =
        service(&env, doomed, "gated", custom("hf://org/gated", "org/gated")).await;
    wait(
        &doomed_services,
        "gated",
        "Failed",
        state_is(AIMServiceState::Failed),
    )
    .await;
    nss.delete(doomed, &DeleteParams::default()).await.unwrap();
    wait_gone(&nss, doomed).await;
}

#[tokio::test]
async fn autoscaled_service_gets_an_hpa_and_reports_replicas() {
    let env = cluster().await;
    let services = service(
        &env,
        NS,
        "scaled",
        json!({"model": {"name": "m"}, "minReplicas": 1, "maxReplicas": 3}),
    )
    .await;
    let live = wait(
        &services,
        "scaled",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let st = live.status.as_ref().unwrap();
    assert_eq!(cond_in(&st.conditions, "HPAReady").0, "True");
    let runtime = st.runtime.as_ref().unwrap();
    assert_eq!(
        (
            runtime.min_replicas,
            runtime.max_replicas,
            runtime.current_replicas,
            runtime.desired_replicas,
            runtime.replicas.as_deref()
        ),
        (Some(1), Some(3), Some(1), Some(1), Some("1/1 (1-3)"))
    );
    let isvc = names::inference_service_name("scaled", NS).unwrap();
    let hpas: Api<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler> =
        Api::namespaced(env.client.clone(), NS);
    let hpa = hpas.get(&format!("{isvc}-predictor")).await.unwrap();
    let spec = hpa.spec.unwrap();
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(1), 3));
    assert_eq!(spec.scale_target_ref.name, format!("{isvc}-predictor"));
    steady(&env, NS).await;
}

#[tokio::test]
async fn image_pull_errors_of_inference_pods_are_classified() {
    let env = cluster().await;
    let services = service(&env, NS, "pull", json!({"model": {"name": "m"}})).await;
    wait(
        &services,
        "pull",
        "Running",
        state_is(AIMServiceState::Running),
    )
    .await;
    let isvc = names::inference_service_name("pull", NS).unwrap();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(env.client.clone(), NS);
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "pull-predictor-0", "namespace": NS,
                     // KServe copies the InferenceService's labels to its pods.
                     "labels": {"serving.kserve.io/inferenceservice": isvc.as_str(),
                                "aim.eai.amd.com/service": "pull"}},
        "spec": {"containers": [{"name": "kserve-container", "image": IMAGE}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let status = json!({"status": {"phase": "Pending", "containerStatuses": [{
        "name": "kserve-container", "image": IMAGE, "imageID": "", "ready": false, "restartCount": 0,
        "state": {"waiting": {"reason": "ImagePullBackOff",
                              "message": "failed to pull: 401 Unauthorized: authentication required"}}}]}});
    pods.patch_status(
        "pull-predictor-0",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&status),
    )
    .await
    .unwrap();
    let failed = wait(&services, "pull", "Failed", |s: &AIMService| {
        s.status
            .as_ref()
            .is_some_and(|st| st.status == AIMServiceState::Failed)
    })
    .await;
    let (status, reason, message) = cond(&failed, "InferenceServicePodsReady");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ImagePullAuthFailure"),
        "{message}"
    );
}

/// Another template's cache holding the shared cache name of [`TEMPLATE`], and service `a`
/// once it reports `CacheNameTaken`: (the name, the caches, the services, service `a`).
async fn name_taken(env: &Env) -> (String, Api<AIMTemplateCache>, Api<AIMService>, AIMService) {
    let name = names::shared_template_cache_name(TEMPLATE, NS)
        .unwrap()
        .to_string();
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let foreign: AIMTemplateCache = serde_json::from_value(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMTemplateCache",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"templateName": "someone-elses-template", "templateScope": "Namespace"}
    }))
    .unwrap();
    caches
        .create(&PostParams::default(), &foreign)
        .await
        .unwrap();
    let svc = service(env, NS, "a", json!({"model": {"name": "m"}})).await;
    let live = wait(&svc, "a", "CacheNameTaken", |s: &AIMService| {
        s.status
            .as_ref()
            .and_then(|st| support::condition(&st.conditions, "CacheReady"))
            .is_some_and(|c| c.reason == "CacheNameTaken")
    })
    .await;
    (name, caches, svc, live)
}

#[tokio::test]
async fn a_cache_of_another_template_holding_the_name_is_never_mounted_or_overwritten() {
    let env = cluster().await;
    let (name, caches, _, live) = name_taken(&env).await;
    let (status, _, message) = cond(&live, "CacheReady");
    assert_eq!(status, "False");
    assert!(
        message.contains("someone-elses-template") && message.contains(TEMPLATE),
        "{message}"
    );
    let after = caches.get(&name).await.unwrap();
    assert_eq!(after.spec.template_name, "someone-elses-template");
    assert!(
        after.labels().get("aim.eai.amd.com/service").is_none(),
        "not applied over: {:?}",
        after.labels()
    );
    // Settled first: an InferenceService a later reconcile created would fail here.
    steady(&env, NS).await;
    let isvcs: Api<InferenceService> = Api::namespaced(env.client.clone(), NS);
    assert!(
        isvcs
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "nothing is served from another template's volumes"
    );
}

/// The service reads template caches from the cache controller's informer cache, which can
/// lag a cache's creation: a cache missing from that read is looked up on the API server
/// before the service creates it, so a lagging read still reports `CacheNameTaken` and never
/// tries to apply over another template's cache.
#[tokio::test]
async fn a_cache_missing_from_a_lagging_cache_read_is_looked_up_before_it_is_created() {
    use kube::runtime::reflector;
    use kube::runtime::watcher::Event;

    let env = cluster().await;
    let (name, caches, svc, _) = name_taken(&env).await;

    // A context whose cache read has listed but not yet seen the foreign cache (every other
    // read goes to the API server).
    let lagging = aim_operator::Context::new(env.ctx.settings.clone())
        .unwrap()
        .with_clock(Arc::clone(&env.ctx.clock));
    let (reader, mut writer) = reflector::store();
    writer.apply_watcher_event(&Event::Init);
    writer.apply_watcher_event(&Event::InitDone);
    assert!(lagging.informers.caches.set(reader).is_ok());
    let pipeline = aim_operator::service::ServicePipeline::new(Arc::new(lagging));
    let live = svc.get("a").await.unwrap();
    let r = env
        .reconcile_once(pipeline, aim_operator::scheme::controller::SERVICE, &live)
        .await;
    // The engine refuses to take over an object it does not manage (`NameTaken`) anyway; the
    // lookup keeps the service's own diagnosis: the same status as the operator's, unwritten.
    assert!(
        r.errors.is_empty() && r.writes() == 0,
        "CacheNameTaken kept, nothing applied or written: {r:?}"
    );
    let after = caches.get(&name).await.unwrap();
    assert_eq!(after.spec.template_name, "someone-elses-template");
    assert!(
        after.labels().get("aim.eai.amd.com/service").is_none(),
        "not applied over: {:?}",
        after.labels()
    );
}
