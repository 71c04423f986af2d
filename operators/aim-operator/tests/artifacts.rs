//! AIMArtifact: size check, claim, download and each failure class, on the simulated cluster.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kinfer_api::aim::{AIMArtifact, CachingMode};
use kinfer_api::phase::Phase;
use kinfer_builders::naming::aim as names;
use kinfer_testkit::simulator::{JobOutcome, LogHook};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::serving::*;
use support::*;

/// Logs by pod-name prefix (the Jobs are `<artifact>-<stage>-<hash>`).
fn logs(table: &'static [(&'static str, &'static str)]) -> LogHook {
    Arc::new(move |_ns: &str, name: &str, _pod: &serde_json::Value| {
        table
            .iter()
            .find(|(prefix, _)| name.starts_with(prefix))
            .map(|(_, log)| (*log).to_owned())
    })
}

async fn artifact(env: &Env, name: &str, spec: serde_json::Value) -> Api<AIMArtifact> {
    let api: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &api,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
               "metadata": {"name": name, "namespace": NS}, "spec": spec}),
    )
    .await;
    api
}

fn phase_is(p: Phase) -> impl Fn(&AIMArtifact) -> bool {
    move |a: &AIMArtifact| {
        a.status
            .as_ref()
            .is_some_and(|s| s.status == p && s.observed_generation == a.metadata.generation)
    }
}

fn cond(a: &AIMArtifact, t: &str) -> (String, String, String) {
    cond_in(&a.status.as_ref().unwrap().conditions, t)
}

fn valid_upstream(a: &AIMArtifact) {
    valid_against(
        "reference/aim/crds",
        "aim.eai.amd.com_aimartifacts.yaml",
        "v1alpha1",
        &serde_json::to_value(a).unwrap(),
    );
}

#[tokio::test]
async fn size_check_then_claim_then_download() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(logs(&[(
        "big-check-size",
        "resolving hf://org/big\n{\"url\":\"hf://org/big\",\"sizeBytes\":5368709120}\n",
    )]));
    let api = artifact(
        &env,
        "big",
        json!({"sourceUri": "hf://org/big", "modelId": "org/big"}),
    )
    .await;
    let ready = wait(&api, "big", "Ready", phase_is(Phase::Ready)).await;
    let st = ready.status.clone().unwrap();
    assert_eq!(st.discovered_size_bytes, Some(5_368_709_120));
    assert_eq!(st.display_size.as_deref(), Some("5.0 GiB"));
    // 5 GiB + 10% = 5.5 GiB, rounded up.
    assert_eq!(
        st.allocated_size.as_ref().map(|q| q.0.as_str()),
        Some("6Gi")
    );
    assert_eq!(
        (st.headroom_percent, st.mode),
        (Some(10), Some(CachingMode::Shared))
    );
    assert_eq!(cond(&ready, "DownloadJobReady").1, "DownloadComplete");
    valid_upstream(&ready);

    let uid = ready.uid().unwrap();
    let claim = names::artifact_child_name("big", &uid, "cache").unwrap();
    assert_eq!(st.persistent_volume_claim.as_deref(), Some(claim.as_str()));
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), NS);
    let pvc = pvcs.get(claim.as_str()).await.unwrap();
    assert_eq!(
        pvc.spec
            .as_ref()
            .unwrap()
            .resources
            .as_ref()
            .unwrap()
            .requests
            .as_ref()
            .unwrap()["storage"]
            .0,
        "6Gi"
    );

    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    let download = jobs
        .get(
            names::artifact_child_name("big", &uid, "download")
                .unwrap()
                .as_str(),
        )
        .await
        .unwrap();
    let template = download.spec.unwrap().template;
    // The pods carry the artifact's label: their events reach the artifact.
    assert_eq!(
        template.metadata.unwrap().labels.unwrap()["aim.eai.amd.com/artifact.name"],
        "big"
    );
    let pod = template.spec.unwrap();
    let c = &pod.containers[0];
    assert_eq!(c.args.as_deref(), Some(&["hf://org/big".to_owned()][..]));
    let env_of = |n: &str| {
        c.env
            .iter()
            .flatten()
            .find(|e| e.name == n)
            .and_then(|e| e.value.clone())
    };
    assert_eq!(env_of("EXPECTED_SIZE_BYTES").as_deref(), Some("5368709120"));
    assert_eq!(env_of("TARGET_DIR").as_deref(), Some("/cache"));
    let psc = pod.security_context.unwrap();
    assert_eq!(psc.run_as_non_root, Some(true));
    let sc = c.security_context.clone().unwrap();
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(
        sc.capabilities.unwrap().drop.unwrap(),
        vec!["ALL".to_owned()]
    );
    assert_eq!(
        psc.seccomp_profile
            .map(|s| s.type_)
            .or(sc.seccomp_profile.map(|s| s.type_))
            .as_deref(),
        Some("RuntimeDefault")
    );
    steady(&env, NS).await;

    // A bigger size later never resizes the claim.
    api.patch(
        "big",
        &PatchParams::apply("test").force(),
        &Patch::Apply(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
        "metadata": {"name": "big", "namespace": NS},
        "spec": {"sourceUri": "hf://org/big", "modelId": "org/big", "size": "100Gi"}})),
    )
    .await
    .unwrap();
    wait(&api, "big", "Ready again", phase_is(Phase::Ready)).await;
    let pvc = pvcs.get(claim.as_str()).await.unwrap();
    assert_eq!(
        pvc.spec.unwrap().resources.unwrap().requests.unwrap()["storage"].0,
        "6Gi"
    );
    steady(&env, NS).await;
}

/// A shared artifact's claim and Jobs keep its `aim.eai.amd.com/` labels but not its
/// creator's, which a takeover by another cache changes after they were created (two renders
/// of the examples labelled the download Job with different caches).
#[tokio::test]
async fn a_shared_artifacts_children_do_not_name_its_creator() {
    let env = start().await;
    let api: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &api,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
               "metadata": {"name": "shared", "namespace": NS, "labels": {
                   "aim.eai.amd.com/template-cache.name": "cache-b",
                   "aim.eai.amd.com/template.name": "template-b",
                   "aim.eai.amd.com/template.scope": "Namespace",
                   "aim.eai.amd.com/template.index": "0",
                   "aim.eai.amd.com/team": "search",
                   "template-created": "true"}},
               "spec": {"sourceUri": "hf://org/shared", "modelId": "org/shared", "size": "1Gi"}}),
    )
    .await;
    let ready = wait(&api, "shared", "Ready", phase_is(Phase::Ready)).await;
    let uid = ready.uid().unwrap();
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), NS);
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    let claim = names::artifact_child_name("shared", &uid, "cache").unwrap();
    let download = names::artifact_child_name("shared", &uid, "download").unwrap();
    let pvc = pvcs.get(claim.as_str()).await.unwrap();
    let job = jobs.get(download.as_str()).await.unwrap();
    let pod_labels = job
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    for (what, labels) in [
        ("claim", pvc.labels().clone()),
        ("download Job", job.labels().clone()),
        ("download pod", pod_labels),
    ] {
        assert_eq!(
            labels
                .get("aim.eai.amd.com/artifact.name")
                .map(String::as_str),
            Some("shared"),
            "{what}: {labels:?}"
        );
        assert_eq!(
            labels.get("aim.eai.amd.com/team").map(String::as_str),
            Some("search"),
            "{what} inherits the artifact's other labels: {labels:?}"
        );
        for creator in [
            "aim.eai.amd.com/template-cache.name",
            "aim.eai.amd.com/template.name",
            "aim.eai.amd.com/template.scope",
            "aim.eai.amd.com/template.index",
        ] {
            assert!(
                !labels.contains_key(creator),
                "{what} carries {creator}: {labels:?}"
            );
        }
    }
    steady(&env, NS).await;
}

const FAILURES: &[(&str, &str)] = &[
    (
        "auth-download",
        "huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url https://huggingface.co/org/auth",
    ),
    (
        "missing-download",
        "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url https://huggingface.co/api/models/org/missing",
    ),
    (
        "full-download",
        "OSError: [Errno 28] No space left on device: '/cache/org/full/model.safetensors'",
    ),
    (
        "stall-download",
        "download stalled: no progress for 120s, giving up",
    ),
    ("odd-download", "unexpected exit"),
    (
        "badsize-check-size",
        "{\"url\":\"hf://org/badsize\",\"sizeBytes\":0}",
    ),
];

#[tokio::test]
async fn download_failures_are_classified() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(logs(FAILURES));
    for (prefix, _) in FAILURES.iter().filter(|(p, _)| p.ends_with("-download")) {
        env.cluster
            .simulator()
            .job_outcome(prefix, JobOutcome::Fail);
    }
    let cases = [
        ("auth", Phase::Failed, "SourceAuthFailure"),
        ("missing", Phase::Failed, "SourceNotFound"),
        ("full", Phase::Failed, "StorageFull"),
        ("odd", Phase::Failed, "DownloadFailed"),
    ];
    let mut apis = Vec::new();
    for (name, _, _) in cases {
        let uri = format!("hf://org/{name}");
        apis.push(artifact(&env, name, json!({"sourceUri": uri, "size": "1Gi"})).await);
    }
    for ((name, phase, reason), api) in cases.iter().zip(&apis) {
        let a = wait(api, name, &format!("{phase:?}"), phase_is(*phase)).await;
        let (status, got, message) = cond(&a, "DownloadJobReady");
        assert_eq!(
            (status.as_str(), got.as_str()),
            ("False", *reason),
            "{name}: {message}"
        );
        assert_eq!(
            cond(&a, "Ready").1,
            *reason,
            "{name}: the Ready reason is the root cause"
        );
        assert!(message.contains("job "), "{name}: {message}");
    }
    // Once every case has reached its state (a steady check earlier would catch a later case
    // mid-transition).
    steady(&env, NS).await;
    let auth = apis[0].get("auth").await.unwrap();
    assert_eq!(cond(&auth, "AuthValid").0, "False");

    // The size check printed nonsense: InvalidModelSize, and no claim is made.
    let api = artifact(&env, "badsize", json!({"sourceUri": "hf://org/badsize"})).await;
    let a = wait(&api, "badsize", "Failed", phase_is(Phase::Failed)).await;
    assert_eq!(cond(&a, "CheckSizeJobReady").1, "InvalidModelSize");
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(env.client.clone(), NS);
    let claims = pvcs.list(&ListParams::default()).await.unwrap().items;
    assert!(
        !claims.iter().any(|c| c.name_any().starts_with("badsize")),
        "{claims:#?}"
    );

    // A stalled transfer is infrastructure, retried on the artifact's own schedule: Degraded
    // at once (the failure stays the component's error while the retry waits; the plan keeps
    // its requeue for the retry time despite it, not the engine's error backoff).
    let api = artifact(
        &env,
        "stall",
        json!({"sourceUri": "hf://org/stall", "size": "1Gi"}),
    )
    .await;
    let a = wait(&api, "stall", "Degraded", |a: &AIMArtifact| {
        a.status
            .as_ref()
            .is_some_and(|s| s.status == Phase::Degraded)
    })
    .await;
    let (status, reason, _) = cond(&a, "DownloadJobReady");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "DownloadTimeout")
    );
}

#[tokio::test]
async fn a_permanent_failure_is_not_retried_when_its_job_expires() {
    use aim_operator::artifact::ArtifactPipeline;
    use kube::api::DeleteParams;

    let env = start().await;
    env.cluster.simulator().set_log_hook(logs(FAILURES));
    for prefix in ["auth-download", "stall-download"] {
        env.cluster
            .simulator()
            .job_outcome(prefix, JobOutcome::Fail);
    }
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    // The Job's TTL expires (simulated: deleted).
    let expire = async |name: &str| {
        jobs.delete(name, &DeleteParams::background())
            .await
            .unwrap();
        wait_gone(&jobs, name).await;
    };

    let api = artifact(
        &env,
        "auth",
        json!({"sourceUri": "hf://org/auth", "size": "1Gi"}),
    )
    .await;
    let a = wait(&api, "auth", "Failed", phase_is(Phase::Failed)).await;
    let failed = cond(&a, "DownloadJobReady");
    assert_eq!(failed.1, "SourceAuthFailure", "{failed:?}");
    let job = names::artifact_child_name("auth", &a.uid().unwrap(), "download")
        .unwrap()
        .to_string();
    expire(&job).await;
    let live = api.get("auth").await.unwrap();
    env.reconcile_once(
        ArtifactPipeline::new(Arc::clone(&env.ctx)),
        aim_operator::artifact::CONTROLLER,
        &live,
    )
    .await;
    assert!(
        jobs.get_opt(&job).await.unwrap().is_none(),
        "a permanent failure is not retried"
    );
    let a = api.get("auth").await.unwrap();
    assert_eq!(a.status.as_ref().unwrap().status, Phase::Failed);
    assert_eq!(
        cond(&a, "DownloadJobReady"),
        failed,
        "the failure stays as it was"
    );
    steady(&env, NS).await;

    // A changed spec is a new attempt.
    api.patch(
        "auth",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"env": [{"name": "HF_TOKEN", "value": "new"}]}})),
    )
    .await
    .unwrap();
    wait(&jobs, &job, "re-created for the new spec", |_| true).await;

    // An infrastructure failure (a stalled transfer) is retried once its Job expired.
    let api = artifact(
        &env,
        "stall",
        json!({"sourceUri": "hf://org/stall", "size": "1Gi"}),
    )
    .await;
    let a = wait(&api, "stall", "timed out", |a: &AIMArtifact| {
        a.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "DownloadJobReady" && c.reason == "DownloadTimeout")
        })
    })
    .await;
    let job = names::artifact_child_name("stall", &a.uid().unwrap(), "download")
        .unwrap()
        .to_string();
    let old = jobs.get(&job).await.unwrap().uid();
    expire(&job).await;
    wait(&jobs, &job, "retried", |j: &Job| j.uid() != old).await;
}

/// A retryable failure is run again on the bounded schedule of `artifact::retry` (30 s after a
/// quick failure), not after the failed Job's 600 s TTL; until then nothing is deleted.
#[tokio::test]
async fn a_retryable_failure_runs_again_after_the_retry_delay_not_the_ttl() {
    use aim_operator::artifact::{ArtifactPipeline, retry};

    let env = start().await;
    env.cluster.simulator().set_log_hook(logs(FAILURES));
    env.cluster
        .simulator()
        .job_outcome("stall-download", JobOutcome::Fail);
    let api = artifact(
        &env,
        "stall",
        json!({"sourceUri": "hf://org/stall", "size": "1Gi"}),
    )
    .await;
    let timed_out = |a: &AIMArtifact| artifact_reason(a, "DownloadJobReady", "DownloadTimeout");
    wait(&api, "stall", "timed out", timed_out).await;
    let uid = api.get("stall").await.unwrap().uid().unwrap();
    let job = names::artifact_child_name("stall", &uid, "download")
        .unwrap()
        .to_string();
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    let first = jobs.get(&job).await.unwrap();
    let failed_at = retry::failed_at(&first).expect("the Job's failure time");
    let once = async || {
        let live = api.get("stall").await.unwrap();
        env.reconcile_once(
            ArtifactPipeline::new(Arc::clone(&env.ctx)),
            aim_operator::artifact::CONTROLLER,
            &live,
        )
        .await
    };

    // Before the delay: the failed Job stays, the failure stays reported, and the reconcile
    // asks to run again exactly when the delay has passed (not on the engine's error backoff).
    let now = failed_at + Duration::from_secs(10);
    env.clock.set(now);
    let since = retry::waiting_since(&api.get("stall").await.unwrap(), "DownloadJob");
    let retry::Retry::After(due_in) = retry::retry(Some(failed_at), since, now) else {
        panic!("a retry 10 s after the failure is not due yet");
    };
    let r = once().await;
    assert_eq!(r.deleted, 0, "{r:?}");
    assert_eq!(
        r.action,
        kube::runtime::controller::Action::requeue(due_in),
        "requeued for the retry time: {r:?}"
    );
    assert!(due_in <= retry::MIN_DELAY, "{due_in:?}");
    assert_eq!(jobs.get(&job).await.unwrap().uid(), first.uid());
    assert!(timed_out(&api.get("stall").await.unwrap()));

    // Once it has passed (well before the TTL): deleted and run again.
    env.clock.set(failed_at + retry::MIN_DELAY);
    let r = once().await;
    assert!(
        r.deleted == 1 || jobs.get_opt(&job).await.unwrap().map(|j| j.uid()) != Some(first.uid()),
        "the failed Job is deleted once the delay passed: {r:?}"
    );
    wait(&jobs, &job, "run again", |j: &Job| j.uid() != first.uid()).await;
}

#[tokio::test]
async fn the_downloaders_status_fields_stay_the_downloaders() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(logs(&[]));
    let api = artifact(
        &env,
        "dl",
        json!({"sourceUri": "hf://org/dl", "size": "1Gi"}),
    )
    .await;
    wait(&api, "dl", "Ready", phase_is(Phase::Ready)).await;
    // The downloader patches its fields (as upstream's `kubectl patch` from the pod does).
    let progress = json!({"status": {
        "progress": {"percentage": 100, "displayPercentage": "100%"},
        "download": {"attempt": 1, "protocol": "HTTP"},
        "lastUsed": "2026-01-01T00:00:00Z"}});
    api.patch_status(
        "dl",
        &PatchParams::apply("downloader").force(),
        &Patch::Apply(
            json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
                              "metadata": {"name": "dl", "namespace": NS},
                              "status": progress["status"].clone()}),
        ),
    )
    .await
    .unwrap();
    // A spec change makes the operator write its status again.
    api.patch(
        "dl",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"env": [{"name": "X", "value": "1"}]}})),
    )
    .await
    .unwrap();
    let a = wait(&api, "dl", "status rewritten", phase_is(Phase::Ready)).await;
    let st = a.status.as_ref().unwrap();
    assert_eq!(
        st.progress.as_ref().and_then(|p| p.percentage),
        Some(100),
        "kept"
    );
    assert!(st.download.is_some() && st.last_used.is_some());
    for m in a.metadata.managed_fields.iter().flatten() {
        if m.manager.as_deref() == Some("downloader") {
            continue;
        }
        let fields = serde_json::to_string(&m.fields_v1).unwrap();
        for f in ["f:progress", "f:download", "f:lastUsed"] {
            assert!(!fields.contains(f), "{:?} owns {f}: {fields}", m.manager);
        }
    }
}
