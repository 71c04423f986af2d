//! Template-side caching (NOTES row 20): a namespace template with `spec.caching.enabled`
//! gets its own AIMTemplateCache, named like it and owned by it, whose shared artifacts the
//! services' caches reuse; turning caching off removes the cache.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;

use aim_operator::scheme::controller;
use aim_operator::template::TemplatePipeline;
use kinfer_api::aim::{AIMArtifact, AIMServiceTemplate, AIMTemplateCache};
use kinfer_api::phase::Phase;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::serving::*;
use support::*;

const PAUSED: &str = "aim.eai.amd.com/reconciliation-paused";

fn cached_template(enabled: bool) -> serde_json::Value {
    json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
           "metadata": {"name": "warm", "namespace": NS},
           "spec": {"modelName": "m",
                    "env": [{"name": "FROM_TEMPLATE", "value": "1"}],
                    "modelSources": [{"modelId": "org/warm", "sourceUri": "hf://org/warm", "size": "1Gi"}],
                    "caching": {"enabled": enabled,
                                "env": [{"name": "HF_TOKEN", "value": "t"}]}}})
}

/// A cluster with the model and template `warm` (caching `enabled`).
async fn warm(enabled: bool) -> (Env, Api<AIMServiceTemplate>, Api<AIMTemplateCache>) {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    model(&env, NS).await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    apply_json(&templates, cached_template(enabled)).await;
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    (env, templates, caches)
}

#[tokio::test]
async fn a_caching_template_gets_its_own_cache_and_loses_it_when_caching_is_off() {
    let (env, templates, caches) = warm(true).await;

    // The cache: named like the template, owned by it, Shared, with the caching env.
    let cache = wait(&caches, "warm", "Ready", phase_is(Phase::Ready)).await;
    let owner = &cache.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("AIMServiceTemplate", "warm")
    );
    assert_eq!(cache.spec.template_name, "warm");
    assert_eq!(cache.spec.mode, kinfer_api::aim::CachingMode::Shared);
    let names: Vec<&str> = cache.spec.env.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["FROM_TEMPLATE", "HF_TOKEN"],
        "spec.caching.env over the template's env"
    );

    // Its artifact has no owner (shared) and carries upstream's labels.
    let entry = cache.status.as_ref().unwrap().artifacts["org/warm"].clone();
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let art = artifacts.get(&entry.name).await.unwrap();
    assert!(art.owner_references().is_empty());
    assert_eq!(art.labels()["aim.eai.amd.com/template-cache.name"], "warm");
    assert_eq!(art.labels()["aim.eai.amd.com/template.name"], "warm");
    assert_eq!(art.labels()["template-created"], "true");

    // The template reports it, and a second reconcile writes nothing.
    let t = wait(
        &templates,
        "warm",
        "cache reported",
        |t: &AIMServiceTemplate| {
            t.status.as_ref().is_some_and(|s| {
                condition(&s.conditions, "CacheWarm").is_some_and(|c| c.status == "True")
            })
        },
    )
    .await;
    let st = t.status.as_ref().unwrap();
    assert_eq!(st.status, Phase::Ready);
    let r = st.resolved_cache.as_ref().unwrap();
    assert_eq!(r.name.as_deref(), Some("warm"));
    assert_eq!(r.uid, cache.uid());
    assert_eq!(
        condition(&st.conditions, "CacheWarm").unwrap().reason,
        "CacheReady"
    );
    let again = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &t,
        )
        .await;
    assert_eq!(again.writes(), 0, "{again:?}");

    // Caching off: the cache is removed (its Ready shared artifact stays for reuse), and the
    // template no longer reports one.
    apply_json(&templates, cached_template(false)).await;
    wait_gone(&caches, "warm").await;
    let t = wait(&templates, "warm", "no cache", |t: &AIMServiceTemplate| {
        t.status.as_ref().is_some_and(|s| {
            s.observed_generation == t.metadata.generation
                && s.resolved_cache.is_none()
                && condition(&s.conditions, "CacheWarm").is_none()
        })
    })
    .await;
    assert_eq!(t.status.unwrap().status, Phase::Ready);
    assert!(artifacts.get_opt(&entry.name).await.unwrap().is_some());
    assert_eq!(
        caches
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        0
    );
}

#[tokio::test]
async fn a_discovered_template_caches_once_its_sources_are_known() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    gpu_node(&env.client, "mi300x", "74a1").await;
    model(&env, NS).await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &templates,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
               "metadata": {"name": "disc", "namespace": NS},
               "spec": {"modelName": "m", "metric": "latency", "precision": "fp8",
                        "hardware": {"gpu": {"model": "MI300X", "requests": 1}},
                        "caching": {"enabled": true}}}),
    )
    .await;
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let cache = wait(&caches, "disc", "Ready", phase_is(Phase::Ready)).await;
    // The discovered source (the discovery hook reports org/model) is what it caches.
    assert!(
        cache
            .status
            .as_ref()
            .unwrap()
            .artifacts
            .contains_key("org/model"),
        "{cache:?}"
    );
    let t = templates.get("disc").await.unwrap();
    assert!(
        !t.status.as_ref().unwrap().model_sources.is_empty(),
        "the cache follows discovery"
    );
    steady(&env, NS).await;
}

/// The service's cache of a caching template.
async fn service_cache(env: &Env) -> AIMTemplateCache {
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let found = caches
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|c| {
                c.name_any() != "warm"
                    && c.status
                        .as_ref()
                        .is_some_and(|s| s.artifacts.contains_key("org/warm"))
            });
        if let Some(c) = found {
            return c;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no service cache listing org/warm"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A service on template `warm` with a shared cache: its cache lists the artifact of `uid`.
async fn service_sharing(env: &Env, uid: &str) {
    service(
        env,
        NS,
        "svc",
        json!({"model": {"name": "m"}, "template": {"name": "warm"},
               "caching": {"mode": "Shared"}}),
    )
    .await;
    let theirs = service_cache(env).await;
    let listed = &theirs.status.unwrap().artifacts["org/warm"];
    assert_eq!(
        listed.uid, uid,
        "the service reuses the template's artifact"
    );
}

/// Template `warm` caching with downloads that never finish (every artifact stays non-Ready),
/// once its cache lists the artifact of `org/warm`.
async fn warm_never_downloading() -> (
    Env,
    Api<AIMServiceTemplate>,
    Api<AIMTemplateCache>,
    kinfer_api::aim::template_cache::AIMResolvedArtifact,
) {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    env.cluster
        .simulator()
        .job_outcome("", kinfer_testkit::simulator::JobOutcome::Fail);
    model(&env, NS).await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    apply_json(&templates, cached_template(true)).await;
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let own = wait(
        &caches,
        "warm",
        "artifact listed",
        |c: &AIMTemplateCache| {
            c.status
                .as_ref()
                .is_some_and(|s| s.artifacts.contains_key("org/warm"))
        },
    )
    .await;
    let artifact = own.status.unwrap().artifacts["org/warm"].clone();
    (env, templates, caches, artifact)
}

/// Once artifact `name` is not Ready, applies the Shared cache `zpending` of template `warm`
/// with `sources`, paused: the operator never writes its status, as before its first
/// reconcile.
async fn pending_beside(
    artifacts: &Api<AIMArtifact>,
    name: &str,
    caches: &Api<AIMTemplateCache>,
    sources: serde_json::Value,
) {
    wait(artifacts, name, "not Ready", |a: &AIMArtifact| {
        a.status.as_ref().is_some_and(|s| s.status != Phase::Ready)
    })
    .await;
    apply_json(
        caches,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMTemplateCache",
               "metadata": {"name": "zpending", "namespace": NS,
                            "annotations": {PAUSED: "true"}},
               "spec": {"templateName": "warm", "templateScope": "Namespace",
                        "mode": "Shared", "modelSources": sources}}),
    )
    .await;
}

/// Deletes the cache of [`pending_beside`] and waits until it is gone.
async fn delete_pending(caches: &Api<AIMTemplateCache>) {
    caches
        .delete("zpending", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    wait_gone(caches, "zpending").await;
}

/// The template cache's finalizer deletes the non-Ready artifacts it created, but not one a
/// service's cache is waiting for: turning caching off mid-download leaves the service's
/// download alone.
#[tokio::test]
async fn turning_template_caching_off_keeps_a_download_a_service_waits_for() {
    let (env, templates, caches, artifact) = warm_never_downloading().await;
    service_sharing(&env, &artifact.uid).await;

    apply_json(&templates, cached_template(false)).await;
    wait_gone(&caches, "warm").await;
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let live = artifacts.get(&artifact.name).await.unwrap();
    assert_eq!(live.uid().as_deref(), Some(artifact.uid.as_str()));
    assert!(live.metadata.deletion_timestamp.is_none());
}

/// A service on a caching template reuses the template cache's artifact: one download.
#[tokio::test]
async fn a_service_on_a_caching_template_reuses_its_artifact() {
    let (env, _, caches) = warm(true).await;
    let own = wait(&caches, "warm", "Ready", phase_is(Phase::Ready)).await;
    let artifact = own.status.unwrap().artifacts["org/warm"].clone();
    service_sharing(&env, &artifact.uid).await;
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let all = artifacts.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(all.len(), 1, "one download: {all:#?}");
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(env.client.clone(), NS);
    let downloads = jobs
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|j| j.name_any().contains("download"))
        .count();
    assert_eq!(downloads, 1, "one download Job");
}

/// A spec change re-runs discovery; the template's cache is kept meanwhile, not pruned and
/// recreated (which would run its finalizer on downloads in flight).
#[tokio::test]
async fn a_rediscovered_template_keeps_its_cache() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    gpu_node(&env.client, "mi300x", "74a1").await;
    model(&env, NS).await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    let disc = |value: &str| {
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
               "metadata": {"name": "disc", "namespace": NS},
               "spec": {"modelName": "m", "metric": "latency", "precision": "fp8",
                        "env": [{"name": "X", "value": value}],
                        "hardware": {"gpu": {"model": "MI300X", "requests": 1}},
                        "caching": {"enabled": true}}})
    };
    apply_json(&templates, disc("1")).await;
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let before = wait(&caches, "disc", "Ready", phase_is(Phase::Ready)).await;
    let first_job = templates
        .get("disc")
        .await
        .unwrap()
        .status
        .and_then(|s| s.discovery_job)
        .and_then(|j| j.uid);
    let t = apply_json(&templates, disc("2")).await;
    let generation = t.metadata.generation;
    wait(
        &templates,
        "disc",
        "rediscovered",
        |t: &AIMServiceTemplate| {
            t.status.as_ref().is_some_and(|s| {
                s.observed_generation == generation
                    && s.status == Phase::Ready
                    && !s.model_sources.is_empty()
                    && s.discovery_job.as_ref().and_then(|j| j.uid.clone()) != first_job
            })
        },
    )
    .await;
    let after = caches.get("disc").await.unwrap();
    assert_eq!(after.uid(), before.uid(), "the same cache throughout");
    assert!(after.metadata.deletion_timestamp.is_none());
}

/// A user's cache of the template's name (upstream sample 10's shape) is left alone: the
/// template stays Ready and reports `CacheWarm=False/CacheNameTaken`.
#[tokio::test]
async fn a_users_cache_of_the_templates_name_does_not_fail_the_template() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    model(&env, NS).await;
    let caches: Api<AIMTemplateCache> = Api::namespaced(env.client.clone(), NS);
    let users = apply_json(
        &caches,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMTemplateCache",
               "metadata": {"name": "warm", "namespace": NS},
               "spec": {"templateName": "warm", "templateScope": "Namespace"}}),
    )
    .await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    apply_json(&templates, cached_template(true)).await;
    let t = wait(
        &templates,
        "warm",
        "Ready, name taken",
        |t: &AIMServiceTemplate| {
            t.status.as_ref().is_some_and(|s| {
                s.status == Phase::Ready
                    && condition(&s.conditions, "CacheWarm")
                        .is_some_and(|c| c.reason == "CacheNameTaken")
            })
        },
    )
    .await;
    let st = t.status.unwrap();
    assert_eq!(st.resolved_cache, None);
    assert_eq!(
        condition(&st.conditions, "ConfigValid").unwrap().status,
        "True",
        "no NameTaken error"
    );
    let live = caches.get("warm").await.unwrap();
    assert_eq!(live.uid(), users.uid());
    assert!(live.owner_references().is_empty(), "not taken over");
}

/// A template with inline sources never gets a profile: its reconcile does not re-read it from
/// the API server (that live read exists for templates waiting on discovery).
#[tokio::test]
async fn an_inline_template_is_not_reread_each_reconcile() {
    let (env, templates, _) = warm(false).await;
    let t = wait(&templates, "warm", "Ready", phase_is(Phase::Ready)).await;
    steady(&env, NS).await;
    env.cluster.counters().reset();
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &t,
        )
        .await;
    assert_eq!(r.writes(), 0, "{r:?}");
    assert_eq!(
        env.cluster
            .counters()
            .count("get", Some("aimservicetemplates")),
        0
    );
}

/// A Shared cache whose status is not written yet (a service's, just created) protects by its
/// spec the non-Ready artifact it is about to reuse: the template cache's finalizer keeps it
/// and hands it over (its creator label), so the pending cache's own finalizer deletes it
/// later (the pending cache sorts after `warm`: it would never relabel it itself). A pending
/// cache of other sources protects nothing, and neither does one whose template cannot be
/// read for a lasting reason (forbidden): the finalizer deletes the download, unblocked.
#[tokio::test]
async fn a_cache_not_reconciled_yet_keeps_the_download_it_is_about_to_reuse() {
    let other = json!([{"modelId": "org/other", "sourceUri": "hf://org/other", "size": "1Gi"}]);
    // Its own sources empty: the template's (`hf://org/warm`) are read.
    for (sources, forbidden, kept) in [
        (json!([]), false, true),
        (other, false, false),
        (json!([]), true, false),
    ] {
        let (env, templates, caches, artifact) = warm_never_downloading().await;
        let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
        pending_beside(&artifacts, &artifact.name, &caches, sources).await;
        if forbidden {
            env.cluster.faults().inject(
                kinfer_testkit::Fault::status("get", "aimservicetemplates", 403).named("warm"),
            );
        }
        apply_json(&templates, cached_template(false)).await;
        wait_gone(&caches, "warm").await;
        env.cluster.faults().clear();
        assert!(
            caches.get("zpending").await.unwrap().status.is_none(),
            "the pending cache was never reconciled"
        );
        if !kept {
            wait_gone(&artifacts, &artifact.name).await;
            continue;
        }
        let live = artifacts.get(&artifact.name).await.unwrap();
        assert_eq!(live.uid().as_deref(), Some(artifact.uid.as_str()));
        assert!(live.metadata.deletion_timestamp.is_none());
        assert_eq!(
            live.labels()
                .get("aim.eai.amd.com/template-cache.name")
                .map(String::as_str),
            Some("zpending"),
            "handed over to the cache that keeps it"
        );
        // The pending cache runs, uses the artifact, and is deleted: its finalizer answers for
        // the download now.
        caches
            .patch(
                "zpending",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {PAUSED: null}}})),
            )
            .await
            .unwrap();
        wait(&caches, "zpending", "uses it", |c: &AIMTemplateCache| {
            c.status
                .as_ref()
                .is_some_and(|s| s.artifacts.values().any(|a| a.uid == artifact.uid))
        })
        .await;
        delete_pending(&caches).await;
        wait_gone(&artifacts, &artifact.name).await;
    }
}

/// The hand-over reads the keeper again after its patch: a pending cache deleted between the
/// finalizer's list and that patch (never reconciled, so it has no finalizer of its own that
/// could answer for the artifact later) does not strand the artifact under its name; the
/// finalizer decides again without it, and deletes the artifact.
#[tokio::test]
async fn an_artifact_handed_to_a_cache_deleted_meanwhile_is_deleted() {
    let (env, templates, caches, artifact) = warm_never_downloading().await;
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    // It intends the artifact by its template's sources.
    pending_beside(&artifacts, &artifact.name, &caches, json!([])).await;
    // The hand-over's patch (the only write of the artifact's metadata here) is held while the
    // keeper goes.
    let fired = env.cluster.faults().fired();
    env.cluster.faults().inject(
        kinfer_testkit::Fault::latency("patch", "aimartifacts", std::time::Duration::from_secs(5))
            .named(&artifact.name)
            .times(1),
    );
    apply_json(&templates, cached_template(false)).await;
    until("the hand-over patch is sent", || {
        env.cluster.faults().fired() > fired
    })
    .await;
    delete_pending(&caches).await;
    assert_eq!(
        artifacts
            .get(&artifact.name)
            .await
            .unwrap()
            .labels()
            .get("aim.eai.amd.com/template-cache.name")
            .map(String::as_str),
        Some("warm"),
        "the keeper went before the hand-over landed"
    );
    wait_gone(&caches, "warm").await;
    wait_gone(&artifacts, &artifact.name).await;
}
