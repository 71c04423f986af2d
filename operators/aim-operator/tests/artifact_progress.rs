//! AIMArtifact download progress: the download pod's own identity (ServiceAccount, Role,
//! RoleBinding) while the download runs, the pod's `status.progress` patches surviving the
//! operator's reconciles without a write of the operator's, and no credential left after.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kinfer_api::aim::AIMArtifact;
use kinfer_api::phase::Phase;
use kinfer_builders::discovery_job::progress_name;
use kinfer_builders::naming::aim as names;
use kube::api::{DeleteParams, Patch, PatchParams, WatchEvent, WatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use support::serving::*;
use support::*;

const PAUSED: &str = "aim.eai.amd.com/reconciliation-paused";
/// A label of the operator's on every object it creates.
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// The download of artifact `name`, held Progressing by the simulator.
struct Download {
    artifacts: Api<AIMArtifact>,
    uid: String,
    job: String,
    /// The one name of the ServiceAccount, Role and RoleBinding.
    identity: String,
}

/// Applies artifact `name` (its spec `extra` merged in) paused, holds its download Job, then
/// lets the operator run it and waits until the Job and the pod's identity exist.
async fn held_download(env: &Env, name: &str, extra: serde_json::Value) -> Download {
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let mut spec = json!({"sourceUri": format!("hf://org/{name}"), "size": "1Gi"});
    for (k, v) in extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    let a = apply_json(
        &artifacts,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
               "metadata": {"name": name, "namespace": NS, "annotations": {PAUSED: "true"}},
               "spec": spec}),
    )
    .await;
    let uid = a.uid().unwrap();
    let job = names::artifact_child_name(name, &uid, "download")
        .unwrap()
        .to_string();
    env.cluster.hold("jobs", NS, &job);
    set_paused(&artifacts, name, false).await;
    let identity = progress_name(name, &uid).unwrap().to_string();
    wait(
        &Api::<Job>::namespaced(env.client.clone(), NS),
        &job,
        "created",
        |_| true,
    )
    .await;
    for_identity(env, &identity, |_, _| {}).await;
    wait(&artifacts, name, "downloading", |a: &AIMArtifact| {
        a.status
            .as_ref()
            .is_some_and(|s| s.status == Phase::Progressing)
            && artifact_reason(a, "DownloadJobReady", "Downloading")
    })
    .await;
    Download {
        artifacts,
        uid,
        job,
        identity,
    }
}

/// A barrier before a change the operator must see: pauses artifact `name` and waits for a
/// paused skip, after which every earlier reconcile has finished (one at a time per object)
/// and later ones skip until the annotation goes. Returns the reconciles finished so far, for
/// [`one_reconcile_after`].
async fn hold_reconciles(env: &Env, artifacts: &Api<AIMArtifact>, name: &str) -> u64 {
    let controller = aim_operator::artifact::CONTROLLER;
    let skips = env.paused_skips(controller);
    set_paused(artifacts, name, true).await;
    until("a paused skip", || env.paused_skips(controller) > skips).await;
    env.reconciles(controller)
}

/// Unpauses artifact `name` and waits for a reconcile to finish: the first one after
/// [`hold_reconciles`] started after the change made in between, and saw it.
async fn one_reconcile_after(env: &Env, artifacts: &Api<AIMArtifact>, name: &str, finished: u64) {
    let controller = aim_operator::artifact::CONTROLLER;
    set_paused(artifacts, name, false).await;
    until("a reconcile after the change", || {
        env.reconciles(controller) > finished
    })
    .await;
}

/// Applies artifact `name` of 1Gi (no size check): its download Job's and identity's names.
async fn sized(artifacts: &Api<AIMArtifact>, name: &str) -> (String, String) {
    let a = apply_json(
        artifacts,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
               "metadata": {"name": name, "namespace": NS},
               "spec": {"sourceUri": format!("hf://org/{name}"), "size": "1Gi"}}),
    )
    .await;
    let uid = a.uid().unwrap();
    let job = names::artifact_child_name(name, &uid, "download")
        .unwrap()
        .to_string();
    (job, progress_name(name, &uid).unwrap().to_string())
}

/// Sets or removes the paused annotation of artifact `name`.
async fn set_paused(artifacts: &Api<AIMArtifact>, name: &str, paused: bool) {
    let value = if paused { json!("true") } else { json!(null) };
    artifacts
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {PAUSED: value}}})),
        )
        .await
        .unwrap();
}

/// Waits for the ServiceAccount, Role and RoleBinding named `name` and hands each one's
/// metadata (with its kind) to `check`.
async fn for_identity(
    env: &Env,
    name: &str,
    mut check: impl FnMut(&str, &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta),
) -> (ServiceAccount, Role, RoleBinding) {
    let sa: ServiceAccount = live(env, name).await;
    let role: Role = live(env, name).await;
    let binding: RoleBinding = live(env, name).await;
    check("ServiceAccount", sa.meta());
    check("Role", role.meta());
    check("RoleBinding", binding.meta());
    (sa, role, binding)
}

/// Object `name` of kind `K` in [`NS`], once it exists.
async fn live<K>(env: &Env, name: &str) -> K
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    wait(
        &Api::<K>::namespaced(env.client.clone(), NS),
        name,
        "created",
        |_| true,
    )
    .await
}

async fn identity_gone(env: &Env, name: &str) {
    wait_gone(
        &Api::<ServiceAccount>::namespaced(env.client.clone(), NS),
        name,
    )
    .await;
    wait_gone(&Api::<Role>::namespaced(env.client.clone(), NS), name).await;
    wait_gone(
        &Api::<RoleBinding>::namespaced(env.client.clone(), NS),
        name,
    )
    .await;
}

fn progress_of(a: &AIMArtifact) -> serde_json::Value {
    serde_json::to_value(a.status.as_ref().and_then(|s| s.progress.clone())).unwrap()
}

/// While the download runs, the pod's identity exists as built (owned by the artifact); the
/// progress the pod patches (as `kubectl patch` does, impersonating that ServiceAccount: the
/// test cluster does not evaluate RBAC, the Role's rules are checked by the builders' tests)
/// survives the operator's reconciles, which write nothing for it; once the download is over,
/// the artifact is Ready with the progress kept and the identity is gone.
#[tokio::test]
async fn progress_survives_reconciles_without_writes_and_the_identity_ends_with_the_download() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    let d = held_download(&env, "prog", json!({})).await;

    // (a) The pod runs as the identity; the three are exactly as built, owned by the artifact.
    let job = Api::<Job>::namespaced(env.client.clone(), NS)
        .get(&d.job)
        .await
        .unwrap();
    let pod = job.spec.unwrap().template.spec.unwrap();
    assert_eq!(
        pod.service_account_name.as_deref(),
        Some(d.identity.as_str())
    );
    assert_eq!(pod.automount_service_account_token, Some(true));
    assert_eq!(
        pod.security_context
            .as_ref()
            .and_then(|s| s.run_as_non_root),
        Some(true),
        "restricted pod security unchanged"
    );
    let (sa, role, binding) = for_identity(&env, &d.identity, |kind, meta| {
        let owners = meta.owner_references.clone().unwrap_or_default();
        assert!(
            owners
                .iter()
                .any(|o| o.uid == d.uid && o.kind == "AIMArtifact" && o.controller == Some(true)),
            "{kind} is owned by the artifact: {owners:?}"
        );
        let labels = meta.labels.clone().unwrap_or_default();
        assert_eq!(
            labels
                .get("aim.eai.amd.com/artifact.name")
                .map(String::as_str),
            Some("prog"),
            "{kind}: {labels:?}"
        );
        assert_eq!(
            labels
                .get("app.kubernetes.io/managed-by")
                .map(String::as_str),
            Some("aim-artifact-controller"),
            "{kind}: {labels:?}"
        );
    })
    .await;
    assert_eq!(sa.automount_service_account_token, Some(false));
    assert_eq!(
        serde_json::to_value(role.rules.unwrap()).unwrap(),
        json!([{"apiGroups": ["aim.eai.amd.com"], "resources": ["aimartifacts/status"],
                "resourceNames": ["prog"], "verbs": ["get", "patch"]}])
    );
    assert_eq!(
        serde_json::to_value(&binding.role_ref).unwrap(),
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": d.identity})
    );
    assert_eq!(
        serde_json::to_value(binding.subjects.unwrap()).unwrap(),
        json!([{"kind": "ServiceAccount", "name": d.identity, "namespace": NS}])
    );
    steady(&env, NS).await;

    // (b) The pod patches its progress, as the downloader's `kubectl patch` does.
    let writes = env.operator_writes();
    let pod_client = client_as(
        &env.cluster,
        &format!("system:serviceaccount:{NS}:{}", d.identity),
    )
    .await;
    let as_pod: Api<AIMArtifact> = Api::namespaced(pod_client, NS);
    let kubectl = PatchParams {
        field_manager: Some("kubectl-patch".into()),
        ..PatchParams::default()
    };
    for (pct, done) in [(42, 451_000_000_i64), (61, 655_000_000)] {
        let progress = json!({"totalBytes": 1_073_741_824_i64, "downloadedBytes": done,
                              "percentage": pct, "displayPercentage": format!("{pct} %")});
        let finished = hold_reconciles(&env, &d.artifacts, "prog").await;
        let (fetched, defaults) = (
            env.operator_requests("list", "pods"),
            env.operator_requests("get", "serviceaccounts"),
        );
        as_pod
            .patch_status(
                "prog",
                &kubectl,
                &Patch::Merge(json!({"status": {"progress": progress}})),
            )
            .await
            .unwrap();
        one_reconcile_after(&env, &d.artifacts, "prog", finished).await;
        assert!(
            env.operator_requests("list", "pods") > fetched,
            "that reconcile fetched (the download Job's pods)"
        );
        assert_eq!(
            env.operator_requests("get", "serviceaccounts"),
            defaults,
            "the identity exists: the default ServiceAccount is not read again"
        );
        let a = d.artifacts.get("prog").await.unwrap();
        assert_eq!(progress_of(&a), progress, "kept");
        assert_eq!(a.status.as_ref().unwrap().status, Phase::Progressing);
        // ... and a reconcile of the test's own engine writes nothing either.
        steady(&env, NS).await;
    }
    assert_eq!(
        env.operator_writes(),
        writes,
        "the operator wrote in response to progress ticks: {:#?}",
        env.cluster.counters().by_client().get(OPERATOR_USER)
    );
    only_the_pod_owns_progress(&d.artifacts.get("prog").await.unwrap());

    // (c) The download completes: Ready, the progress kept, and no credential left behind.
    env.cluster.release("jobs", NS, &d.job);
    let ready = wait(&d.artifacts, "prog", "Ready", |a: &AIMArtifact| {
        a.status.as_ref().is_some_and(|s| s.status == Phase::Ready)
    })
    .await;
    assert_eq!(
        progress_of(&ready)["percentage"],
        61,
        "the operator's Ready status write leaves the downloader's progress alone"
    );
    only_the_pod_owns_progress(&ready);
    identity_gone(&env, &d.identity).await;
    steady(&env, NS).await;
}

/// No manager but the pod's (`kubectl-patch`) owns a field of `status.progress`.
fn only_the_pod_owns_progress(a: &AIMArtifact) {
    for m in a.metadata.managed_fields.iter().flatten() {
        let fields = serde_json::to_string(&m.fields_v1).unwrap();
        if fields.contains("f:progress") {
            assert_eq!(m.manager.as_deref(), Some("kubectl-patch"), "{fields}");
        }
    }
}

#[tokio::test]
async fn deleting_the_artifact_removes_the_download_pods_identity() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    let d = held_download(&env, "gone", json!({})).await;
    d.artifacts
        .delete("gone", &DeleteParams::background())
        .await
        .unwrap();
    wait_gone(&d.artifacts, "gone").await;
    // Owner references: the cluster's garbage collector removes them with the artifact.
    identity_gone(&env, &d.identity).await;
}

fn pull_secrets(
    refs: Option<Vec<k8s_openapi::api::core::v1::LocalObjectReference>>,
) -> Vec<String> {
    refs.into_iter().flatten().map(|r| r.name).collect()
}

/// Applies the namespace's `default` ServiceAccount with pull secret `mirror` and
/// `annotations`.
async fn mirror_on_default(env: &Env, annotations: serde_json::Value) -> Api<ServiceAccount> {
    let accounts: Api<ServiceAccount> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &accounts,
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "default", "namespace": NS, "annotations": annotations},
               "imagePullSecrets": [{"name": "mirror"}]}),
    )
    .await;
    accounts
}

/// The download pod no longer runs as the namespace's `default` ServiceAccount: its own
/// carries `default`'s pull secrets (a mirror configured there keeps working), nothing else of
/// it (no workload-identity annotation); both pods carry the artifact's `imagePullSecrets`.
#[tokio::test]
async fn pull_secrets_reach_both_pods_and_the_download_identity() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    mirror_on_default(
        &env,
        json!({"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/x"}),
    )
    .await;
    let own = json!({"imagePullSecrets": [{"name": "regcred"}]});
    let d = held_download(&env, "pulls", own.clone()).await;
    let (sa, _, _) = for_identity(&env, &d.identity, |_, _| {}).await;
    assert_eq!(pull_secrets(sa.image_pull_secrets.clone()), ["mirror"]);
    assert!(
        sa.metadata.annotations.unwrap_or_default().is_empty(),
        "workload identity is not copied"
    );
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    let pod = |j: Job| j.spec.unwrap().template.spec.unwrap();
    assert_eq!(
        pull_secrets(pod(jobs.get(&d.job).await.unwrap()).image_pull_secrets),
        ["regcred"]
    );

    // The size check's pod (no size in the spec).
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let a = apply_json(
        &artifacts,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
               "metadata": {"name": "measured", "namespace": NS},
               "spec": {"sourceUri": "hf://org/measured", "imagePullSecrets": own["imagePullSecrets"]}}),
    )
    .await;
    let check = names::artifact_child_name("measured", &a.uid().unwrap(), "check-size")
        .unwrap()
        .to_string();
    let check = wait(&jobs, &check, "created", |_| true).await;
    assert_eq!(pull_secrets(pod(check).image_pull_secrets), ["regcred"]);
}

/// The first ADDED event of `api` at or after resourceVersion `from` for an object `matches`
/// accepts: its resourceVersion (the test cluster's are one global counter).
async fn added_at<K>(api: &Api<K>, from: u64, matches: impl Fn(&K) -> bool) -> u64
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    use futures::StreamExt;
    let mut events = api
        .watch(&WatchParams::default(), &from.to_string())
        .await
        .unwrap()
        .boxed();
    let found = tokio::time::timeout(TIMEOUT, async {
        while let Some(e) = events.next().await {
            if let WatchEvent::Added(o) = e.unwrap()
                && matches(&o)
            {
                return o.meta().resource_version.clone();
            }
        }
        None
    })
    .await;
    found
        .ok()
        .flatten()
        .and_then(|rv| rv.parse().ok())
        .expect("added within the timeout")
}

/// A download Job that fails for a retryable reason (a stall: Infrastructure) drops its pod's
/// identity while the retry waits; when the retry runs, the identity is created again before
/// the new Job (which fails again, and the identity goes again).
#[tokio::test]
async fn a_retried_download_gets_its_identity_back_before_its_new_job() {
    use std::sync::Arc;

    use aim_operator::artifact::{ArtifactPipeline, retry};

    let env = start().await;
    env.cluster.simulator().set_log_hook(std::sync::Arc::new(
        |_: &str, name: &str, _: &serde_json::Value| {
            name.starts_with("retried-download")
                .then(|| "download stalled: no progress for 120s, giving up".to_owned())
        },
    ));
    env.cluster.simulator().job_outcome(
        "retried-download",
        kinfer_testkit::simulator::JobOutcome::Fail,
    );
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let (job, identity) = sized(&artifacts, "retried").await;
    let stalled = |a: &AIMArtifact| artifact_reason(a, "DownloadJobReady", "DownloadTimeout");
    wait(&artifacts, "retried", "stalled", stalled).await;
    // Failed: the identity goes while the retry waits (the Job stays until then).
    identity_gone(&env, &identity).await;
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    let first = jobs.get(&job).await.unwrap();

    let from = env.cluster.resource_version();
    env.clock
        .set(retry::failed_at(&first).expect("failure time") + retry::MIN_DELAY);
    let r = env
        .reconcile_once(
            ArtifactPipeline::new(Arc::clone(&env.ctx)),
            aim_operator::artifact::CONTROLLER,
            &artifacts.get("retried").await.unwrap(),
        )
        .await;
    assert_eq!(
        r.deleted, 1,
        "the failed Job is deleted once the delay passed: {r:?}"
    );
    let old = first.uid();
    let new_job = added_at(&jobs, from, |j: &Job| j.name_any() == job && j.uid() != old).await;
    let named = |o: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        o.name.as_deref() == Some(identity.as_str())
    };
    let sa = added_at(
        &Api::<ServiceAccount>::namespaced(env.client.clone(), NS),
        from,
        |o| named(o.meta()),
    )
    .await;
    let role = added_at(
        &Api::<Role>::namespaced(env.client.clone(), NS),
        from,
        |o| named(o.meta()),
    )
    .await;
    let binding = added_at(
        &Api::<RoleBinding>::namespaced(env.client.clone(), NS),
        from,
        |o| named(o.meta()),
    )
    .await;
    assert!(
        sa < new_job && role < new_job && binding < new_job,
        "created before the new Job: sa {sa}, role {role}, binding {binding}, job {new_job}"
    );
    // The new attempt fails too: its identity goes again.
    wait(&jobs, &job, "failed again", |j: &Job| {
        j.uid() != old
            && j.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Failed" && c.status == "True"))
    })
    .await;
    identity_gone(&env, &identity).await;
}

/// The identity is decided from the live Job before anything else: an artifact whose objects
/// no longer build (an env var a container cannot carry) while its download runs reports the
/// error and keeps the running pod's identity.
#[tokio::test]
async fn a_build_error_mid_download_keeps_the_running_pods_identity() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    let d = held_download(&env, "broken", json!({})).await;
    let (sa, _, _) = for_identity(&env, &d.identity, |_, _| {}).await;
    d.artifacts
        .patch(
            "broken",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"env": [{"name": "TOKEN",
                "valueFrom": {"fileKeyRef": {"path": "token", "volumeName": "v", "key": "k"}}}]}})),
        )
        .await
        .unwrap();
    wait(
        &d.artifacts,
        "broken",
        "the error reported",
        |a: &AIMArtifact| {
            a.status
                .as_ref()
                .is_some_and(|s| s.observed_generation == a.metadata.generation)
                && artifact_reason(a, "DownloadJobReady", "InvalidArtifact")
        },
    )
    .await;
    let (kept, _, _) = for_identity(&env, &d.identity, |_, _| {}).await;
    assert_eq!(kept.uid(), sa.uid(), "the running pod's identity is kept");
    steady(&env, NS).await;
}

/// A failed read of the namespace's `default` ServiceAccount (here a 403: the operator's RBAC
/// rolled out without the grant) is the operator's trouble, Infrastructure: no download Job is
/// created without the pull secrets its identity needs, the artifact says why, and the
/// engine's backoff retries, so the Job appears once the read succeeds, with nothing else
/// changed.
#[tokio::test]
async fn an_unreadable_default_service_account_holds_the_download_until_it_can_be_read() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    env.cluster
        .faults()
        .inject(kinfer_testkit::Fault::status("get", "serviceaccounts", 403).named("default"));
    let artifacts: Api<AIMArtifact> = Api::namespaced(env.client.clone(), NS);
    let (job, identity) = sized(&artifacts, "denied").await;
    // Running once created, so its identity stays to be looked at.
    env.cluster.hold("jobs", NS, &job);
    let reported = wait(
        &artifacts,
        "denied",
        "the read failure",
        |a: &AIMArtifact| artifact_reason(a, "DownloadJobReady", "ControllerForbidden"),
    )
    .await;
    let c = support::condition(&reported.status.unwrap().conditions, "DownloadJobReady")
        .unwrap()
        .clone();
    assert_eq!(c.status, "False");
    assert!(
        c.message.contains("default ServiceAccount"),
        "{}",
        c.message
    );
    assert_ne!(reported.metadata.generation, None);
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    let accounts: Api<ServiceAccount> = Api::namespaced(env.client.clone(), NS);
    // Written in the same reconcile as the status, had they been planned.
    assert!(
        jobs.get_opt(&job).await.unwrap().is_none(),
        "no Job without its pull secrets"
    );
    assert!(accounts.get_opt(&identity).await.unwrap().is_none());
    // Cleared only now (the rule matches only GETs of `default`, not the reads above): a
    // reconcile after the clear would create both.
    env.cluster.faults().clear();

    // The fault cleared, nothing else changed: the backoff's retry creates the download.
    wait(&jobs, &job, "created", |_| true).await;
    for_identity(&env, &identity, |_, _| {}).await;
    assert_eq!(
        artifacts.get("denied").await.unwrap().metadata.generation,
        reported.metadata.generation,
        "no spec change was needed"
    );
}

/// ServiceAccount `imagePullSecrets` is an atomic list, and on OpenShift a controller adds a
/// `<sa>-dockercfg-*` entry to every ServiceAccount: once the download identity exists, its
/// live list is the desired one, so the operator writes nothing in response (and does not
/// read `default` again).
#[tokio::test]
async fn another_managers_pull_secret_on_the_download_account_is_left_alone() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(discovery_hook());
    let accounts = mirror_on_default(&env, json!({})).await;
    let d = held_download(&env, "ocp", json!({})).await;
    steady(&env, NS).await;
    let (writes, defaults) = (
        env.operator_writes(),
        env.operator_requests("get", "serviceaccounts"),
    );
    let finished = hold_reconciles(&env, &d.artifacts, "ocp").await;
    let dockercfg = format!("{}-dockercfg-x7k2p", d.identity);
    let openshift = PatchParams {
        field_manager: Some("openshift-controller-manager".into()),
        ..PatchParams::default()
    };
    accounts
        .patch(
            &d.identity,
            &openshift,
            &Patch::Merge(json!({"imagePullSecrets": [{"name": "mirror"}, {"name": dockercfg}]})),
        )
        .await
        .unwrap();
    one_reconcile_after(&env, &d.artifacts, "ocp", finished).await;
    // ... and a reconcile of the test's own engine, which lists the account afresh.
    steady(&env, NS).await;
    assert_eq!(
        env.operator_writes(),
        writes,
        "the operator wrote in response: {:#?}",
        env.cluster.counters().by_client().get(OPERATOR_USER)
    );
    assert_eq!(
        env.operator_requests("get", "serviceaccounts"),
        defaults,
        "default is not read while the identity exists"
    );
    let sa = accounts.get(&d.identity).await.unwrap();
    assert_eq!(
        pull_secrets(sa.image_pull_secrets),
        ["mirror", dockercfg.as_str()]
    );

    // A repair of the account (a label of ours removed) applies the live list, not a copy of
    // `default`'s that would drop the other manager's entry.
    accounts
        .patch(
            &d.identity,
            &openshift,
            &Patch::Merge(json!({"metadata": {"labels": {MANAGED_BY: null}}})),
        )
        .await
        .unwrap();
    let repaired = wait(&accounts, &d.identity, "repaired", |sa: &ServiceAccount| {
        sa.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(MANAGED_BY))
    })
    .await;
    assert_eq!(
        pull_secrets(repaired.image_pull_secrets),
        ["mirror", dockercfg.as_str()]
    );
}
