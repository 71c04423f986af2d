//! Discovery: noisy logs, malformed output, failure with backoff, and the cluster-wide cap.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use aim_operator::scheme::controller;
use aim_operator::template::{TemplatePipeline, discovery_job_name};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kinfer_api::aim::{AIMModel, AIMServiceTemplate};
use kinfer_api::phase::Phase;
use kinfer_testkit::JobOutcome;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use serde_json::json;
use support::*;

const IMAGE: &str = "ghcr.io/silogen/aim-dummy:0.1.0";

async fn model(env: &Env) {
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &models,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
               "metadata": {"name": "m", "namespace": NS},
               "spec": {"image": IMAGE, "imageMetadata": {}}}),
    )
    .await;
}

fn template_json(name: &str) -> serde_json::Value {
    json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
           "metadata": {"name": name, "namespace": NS},
           "spec": {"modelName": "m", "metric": "latency", "precision": "fp16"}})
}

fn override_log(template: &str) -> Option<String> {
    match template {
        "noisy" => Some(format!(
            "[INFO] loading profiles\nWARNING: [gpu] not found, continuing\n{}\n[done] exit 0\n",
            discovery_output("latency", "fp16", "MI300X")
        )),
        "malformed" => Some(
            "[INFO] crash\n[{\"profile\": {\"metadata\": {\"metric\": \"fastest\"}}}]\n".into(),
        ),
        _ => None,
    }
}

fn discovery_condition(t: &AIMServiceTemplate) -> Option<(String, String)> {
    let s = t.status.as_ref()?;
    condition(&s.conditions, "DiscoveryReady").map(|c| (c.status.clone(), c.reason.clone()))
}

#[tokio::test]
async fn noisy_log_malformed_output_and_failure_with_backoff() {
    let env = start().await;
    env.cluster
        .simulator()
        .set_log_hook(echo_hook(override_log));
    env.cluster
        .simulator()
        .job_outcome("discover-fails-", JobOutcome::Fail);
    model(&env).await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    for name in ["noisy", "malformed", "fails"] {
        apply_json(&templates, template_json(name)).await;
    }

    let noisy = wait(
        &templates,
        "noisy",
        "Ready despite log noise",
        |t: &AIMServiceTemplate| t.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
    )
    .await;
    assert!(noisy.status.unwrap().profile.is_some());

    let malformed = wait(
        &templates,
        "malformed",
        "Failed on malformed output",
        |t: &AIMServiceTemplate| {
            discovery_condition(t).is_some_and(|(_, r)| r == "DiscoveryOutputInvalid")
        },
    )
    .await;
    let s = malformed.status.as_ref().unwrap();
    assert_eq!(s.status, Phase::Failed);
    assert!(s.profile.is_none(), "never Ready without a profile");
    let discovered = condition(&s.conditions, "Discovered").unwrap();
    assert_eq!(
        (discovered.status.as_str(), discovered.reason.as_str()),
        ("False", "DiscoveryOutputInvalid")
    );
    assert!(
        s.discovery
            .as_ref()
            .unwrap()
            .last_failure_reason
            .as_deref()
            .unwrap()
            .contains("metric")
    );

    let fails = wait(
        &templates,
        "fails",
        "Failed after the job failed",
        |t: &AIMServiceTemplate| {
            discovery_condition(t).is_some_and(|(_, r)| r == "DiscoveryFailed")
        },
    )
    .await;
    let s = fails.status.as_ref().unwrap();
    assert_eq!(s.status, Phase::Failed);
    assert_eq!(s.discovery.as_ref().unwrap().attempts, Some(1));
    assert_eq!(
        s.discovery.as_ref().unwrap().last_failure_reason.as_deref(),
        Some("BackoffLimitExceeded")
    );
    // Backing off: no write, and the next attempt is 60 s away (the clock has not moved).
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &fails,
        )
        .await;
    assert_eq!(r.writes(), 0, "{r:?}");
    assert_eq!(r.action, Action::requeue(Duration::from_mins(1)));
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    let count = |items: &[Job]| {
        items
            .iter()
            .filter(|j| {
                j.metadata
                    .name
                    .as_deref()
                    .unwrap_or_default()
                    .starts_with("discover-fails-")
            })
            .count()
    };
    assert_eq!(
        count(&jobs.list(&ListParams::default()).await.unwrap().items),
        1
    );

    // After the backoff the failed Job is replaced and the attempt counted; the next delay doubles.
    env.clock.advance(Duration::from_secs(61));
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &fails,
        )
        .await;
    assert_eq!(r.deleted, 1, "the failed job is dropped: {r:?}");
    let again = wait(
        &templates,
        "fails",
        "second attempt failed",
        |t: &AIMServiceTemplate| {
            t.status
                .as_ref()
                .and_then(|s| s.discovery.as_ref())
                .and_then(|d| d.attempts)
                == Some(2)
                && discovery_condition(t).is_some_and(|(_, r)| r == "DiscoveryFailed")
        },
    )
    .await;
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &again,
        )
        .await;
    assert_eq!(r.action, Action::requeue(Duration::from_mins(2)));

    // The steady Ready template writes nothing.
    let noisy = templates.get("noisy").await.unwrap();
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &noisy,
        )
        .await;
    assert_eq!(r.writes(), 0, "{r:?}");
}

#[tokio::test]
async fn at_most_ten_discovery_jobs_run_cluster_wide() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    model(&env).await;
    let models: Api<AIMModel> = Api::namespaced(env.client.clone(), NS);
    let m = models.get("m").await.unwrap();
    let model_ref = model_ref(&m);
    let names: Vec<String> = (0..25).map(|i| format!("t-{i:02}")).collect();
    let mut jobs = Vec::new();
    for name in &names {
        let t: AIMServiceTemplate = serde_json::from_value(template_json(name)).unwrap();
        let job = discovery_job_name(
            name,
            Some(NS),
            &t.spec.common,
            &model_ref,
            &env.ctx,
            controller::TEMPLATE,
        )
        .unwrap();
        env.cluster.hold("jobs", NS, &job);
        jobs.push(job);
    }
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    for name in &names {
        apply_json(&templates, template_json(name)).await;
    }
    for name in &names {
        wait(
            &templates,
            name,
            "discovery started or throttled",
            |t: &AIMServiceTemplate| {
                discovery_condition(t).is_some_and(|(_, r)| {
                    r == "DiscoveryThrottled"
                        || r == "DiscoveryRunning"
                        || r == "DiscoveryJobCreated"
                })
            },
        )
        .await;
    }
    let all = templates.list(&ListParams::default()).await.unwrap().items;
    let throttled = all
        .iter()
        .filter(|t| discovery_condition(t).is_some_and(|(_, r)| r == "DiscoveryThrottled"))
        .count();
    let running = Api::<Job>::namespaced(env.client.clone(), NS)
        .list(&ListParams::default().labels(aim_operator::template::fetch::DISCOVERY_SELECTOR))
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(running, 10, "the cap holds");
    assert_eq!(throttled, 15);

    for job in &jobs {
        env.cluster.release("jobs", NS, job);
    }
    for name in &names {
        wait(
            &templates,
            name,
            "Ready once slots free up",
            |t: &AIMServiceTemplate| t.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
        )
        .await;
    }
}

async fn job_name_of(env: &Env, template: &str) -> String {
    let m = Api::<AIMModel>::namespaced(env.client.clone(), NS)
        .get("m")
        .await
        .unwrap();
    let t: AIMServiceTemplate = serde_json::from_value(template_json(template)).unwrap();
    discovery_job_name(
        template,
        Some(NS),
        &t.spec.common,
        &model_ref(&m),
        &env.ctx,
        controller::TEMPLATE,
    )
    .unwrap()
}

fn attempts(t: &AIMServiceTemplate) -> Option<i32> {
    t.status.as_ref()?.discovery.as_ref()?.attempts
}

/// Applies template `name` and waits until it is Ready after exactly one discovery Job.
async fn discovers_in_the_one_slot(templates: &Api<AIMServiceTemplate>, name: &str) {
    apply_json(templates, template_json(name)).await;
    let t = wait(
        templates,
        name,
        "Ready with the one slot",
        |t: &AIMServiceTemplate| t.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
    )
    .await;
    assert_eq!(attempts(&t), Some(1));
}

#[tokio::test]
async fn a_blocked_template_counts_no_attempt_holds_no_slot_and_does_not_loop() {
    let env = start_with(|s| s.discovery.max_active = 1).await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    model(&env).await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    let mut blocked = template_json("blocked");
    blocked["spec"]["runtimeConfigName"] = json!("missing");
    apply_json(&templates, blocked).await;
    let t = wait(
        &templates,
        "blocked",
        "Failed on the missing runtime config",
        |t: &AIMServiceTemplate| {
            t.status.as_ref().is_some_and(|s| {
                condition(&s.conditions, "ConfigValid").is_some_and(|c| c.status == "False")
            })
        },
    )
    .await;
    assert_eq!(attempts(&t), None, "no Job, no attempt");
    assert_eq!(
        discovery_condition(&t),
        Some(("False".into(), "AwaitingUpstream".into()))
    );

    // The only slot is free: another template discovers at once.
    discovers_in_the_one_slot(&templates, "free").await;

    // Reconciling the blocked template again and again writes nothing, and nothing else
    // writes it either (the old hot loop rewrote its status hundreds of times a second).
    let live = templates.get("blocked").await.unwrap();
    env.cluster.counters().reset();
    for _ in 0..5 {
        let r = env
            .reconcile_once(
                TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
                controller::TEMPLATE,
                &live,
            )
            .await;
        assert_eq!(r.writes(), 0, "{r:?}");
        assert_eq!(r.action, Action::await_change(), "{r:?}");
    }
    assert_eq!(
        env.cluster
            .counters()
            .mutations(Some("aimservicetemplates")),
        0
    );
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    assert!(
        jobs.list(&ListParams::default().labels("aim.eai.amd.com/template=blocked"))
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // The runtime config appears: the watch re-enqueues the template, which discovers once.
    let configs: Api<kinfer_api::aim::AIMRuntimeConfig> = Api::namespaced(env.client.clone(), NS);
    apply_json(
        &configs,
        json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMRuntimeConfig",
               "metadata": {"name": "missing", "namespace": NS}, "spec": {}}),
    )
    .await;
    let t = wait(
        &templates,
        "blocked",
        "Ready once the config exists",
        |t: &AIMServiceTemplate| t.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
    )
    .await;
    assert_eq!(attempts(&t), Some(1));
}

/// Marks discovery pod `pod` of Job `job` as unable to pull its image.
async fn stuck_pod(env: &Env, job: &str, pod: &str) {
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), NS);
    let created: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod, "namespace": NS, "labels": {"job-name": job}},
        "spec": {"containers": [{"name": "discovery", "image": IMAGE}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &created).await.unwrap();
    let status = json!({"status": {"phase": "Pending", "containerStatuses": [{
        "name": "discovery", "image": IMAGE, "imageID": "", "ready": false, "restartCount": 0,
        "state": {"waiting": {"reason": "ErrImagePull",
                              "message": "manifest unknown: aim-dummy:0.1.0"}}}]}});
    pods.patch_status(pod, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_pod_that_cannot_pull_fails_the_attempt_and_frees_its_slot() {
    let env = start_with(|s| {
        s.discovery.max_active = 1;
        s.discovery.pod_recheck = Duration::from_millis(200);
    })
    .await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    model(&env).await;
    let job = job_name_of(&env, "stuck").await;
    env.cluster.hold("jobs", NS, &job);
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    apply_json(&templates, template_json("stuck")).await;
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    wait(&jobs, &job, "the discovery Job exists", |_| true).await;
    wait(&templates, "stuck", "attempt counted", |t| {
        attempts(t) == Some(1)
    })
    .await;

    // The slot is taken: a second template waits without rewriting its status.
    apply_json(&templates, template_json("next")).await;
    let waiting = wait(
        &templates,
        "next",
        "throttled, its ServingRuntime created",
        |t: &AIMServiceTemplate| {
            discovery_condition(t).is_some_and(|(_, r)| r == "DiscoveryThrottled")
                && t.status.as_ref().is_some_and(|s| {
                    condition(&s.conditions, "ServingRuntimeReady")
                        .is_some_and(|c| c.status == "True")
                })
        },
    )
    .await;
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &waiting,
        )
        .await;
    assert_eq!(
        r.writes(),
        0,
        "a throttled template writes no status: {r:?}"
    );
    assert_eq!(
        r.action,
        Action::requeue(Duration::from_millis(300)),
        "{r:?}"
    );

    // The pod cannot pull: the attempt fails with the pod's reason and the Job goes.
    stuck_pod(&env, &job, &format!("{job}-pod")).await;
    let failed = wait(
        &templates,
        "stuck",
        "failed with the pull error",
        |t: &AIMServiceTemplate| {
            discovery_condition(t).is_some_and(|(_, r)| r == "DiscoveryFailed")
        },
    )
    .await;
    let s = failed.status.unwrap();
    assert_eq!(s.status, Phase::Failed);
    let d = s.discovery.unwrap();
    assert_eq!(d.attempts, Some(1));
    assert_eq!(
        d.last_failure_reason.as_deref(),
        Some("ErrImagePull: manifest unknown: aim-dummy:0.1.0")
    );
    wait_gone(&jobs, &job).await;

    // Its slot is free: the waiting template discovers.
    wait(
        &templates,
        "next",
        "Ready once the slot is free",
        |t: &AIMServiceTemplate| t.status.as_ref().is_some_and(|s| s.status == Phase::Ready),
    )
    .await;
}

#[tokio::test]
async fn a_transient_model_error_keeps_the_profile() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    model(&env).await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    apply_json(&templates, template_json("t")).await;
    let ready = wait(&templates, "t", "Ready", |t: &AIMServiceTemplate| {
        t.status.as_ref().is_some_and(|s| s.status == Phase::Ready)
    })
    .await;
    let before = ready.status.clone().unwrap();
    assert!(before.profile.is_some());

    // The operator's context reads models from its informer cache: a context without
    // caches reads them from the API server, where the fault is.
    let direct = Arc::new(
        aim_operator::Context::new(env.ctx.settings.clone())
            .unwrap()
            .with_clock(Arc::clone(&env.ctx.clock)),
    );
    env.cluster
        .faults()
        .inject(kinfer_testkit::Fault::status("get", "aimmodels", 500));
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(direct),
            controller::TEMPLATE,
            &ready,
        )
        .await;
    assert!(
        r.errors
            .iter()
            .any(|e| e.category == kinfer_state::ErrorCategory::Infrastructure),
        "{r:?}"
    );
    let during = templates.get("t").await.unwrap().status.unwrap();
    assert_eq!(during.profile, before.profile, "the profile is kept");
    assert_eq!(during.model_sources, before.model_sources);
    assert_eq!(during.discovery, before.discovery);
    let runtimes: Api<kinfer_api::kserve::ServingRuntime> = Api::namespaced(env.client.clone(), NS);
    assert!(runtimes.get_opt("t").await.unwrap().is_some(), "not pruned");

    env.cluster.faults().clear();
    let r = env
        .reconcile_once(
            TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
            controller::TEMPLATE,
            &templates.get("t").await.unwrap(),
        )
        .await;
    assert!(r.errors.is_empty(), "{r:?}");
    let after = templates.get("t").await.unwrap().status.unwrap();
    assert_eq!(after.profile, before.profile);
    assert_eq!(after.discovery, before.discovery, "not discovered again");
}

/// A reconcile of a stale cached copy (taken before discovery finished) keeps the profile the
/// live template already has: compose reads the status fetch re-read, not the stale one
/// (which once wrote the profile away and made the template discover again).
#[tokio::test]
async fn a_stale_copy_does_not_undo_a_finished_discovery() {
    let env = start().await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    model(&env).await;
    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    let stale = apply_json(&templates, template_json("stale")).await;
    assert!(stale.status.is_none(), "taken before any reconcile");
    let ready = wait(&templates, "stale", "Ready", |t: &AIMServiceTemplate| {
        t.status
            .as_ref()
            .is_some_and(|s| s.status == Phase::Ready && s.profile.is_some())
    })
    .await;
    env.reconcile_once(
        TemplatePipeline::<AIMServiceTemplate>::new(Arc::clone(&env.ctx)),
        controller::TEMPLATE,
        &stale,
    )
    .await;
    let live = templates.get("stale").await.unwrap();
    let st = live.status.as_ref().unwrap();
    assert_eq!(st.status, Phase::Ready);
    assert_eq!(st.profile, ready.status.as_ref().unwrap().profile);
    assert_eq!(
        st.model_sources,
        ready.status.as_ref().unwrap().model_sources
    );
}

/// A Job anyone may create with the discovery labels (no template controls it; suspended, so
/// it never ends) holds no discovery slot: with one slot, a template still discovers at once.
#[tokio::test]
async fn labelled_jobs_no_template_controls_hold_no_discovery_slot() {
    let env = start_with(|s| s.discovery.max_active = 1).await;
    env.cluster.simulator().set_log_hook(echo_hook(|_| None));
    model(&env).await;
    let squatter: Job = serde_json::from_value(json!({
        "metadata": {"name": "squatter", "namespace": NS, "labels": {
            "app.kubernetes.io/name": "aim-discovery",
            "app.kubernetes.io/component": "discovery"}},
        "spec": {"suspend": true, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}},
    }))
    .unwrap();
    let jobs: Api<Job> = Api::namespaced(env.client.clone(), NS);
    jobs.create(&PostParams::default(), &squatter)
        .await
        .unwrap();
    let listed = jobs
        .list(&ListParams::default().labels(aim_operator::template::fetch::DISCOVERY_SELECTOR))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1, "the squatter carries the labels");

    let templates: Api<AIMServiceTemplate> = Api::namespaced(env.client.clone(), NS);
    discovers_in_the_one_slot(&templates, "free").await;
}
