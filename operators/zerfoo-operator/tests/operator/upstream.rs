//! Upstream's `operator_test.go` cases, re-expressed against a real API server: create, scale,
//! canary, health check (on create and on change, and the TCP default without one), delete,
//! autoscaling, no HPA without config, update of an existing Deployment, canary removal. (The
//! 13 validation cases are in `validation.rs`.)

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::Service;
use kinfer_api::zerfoo::{CanarySpec, GoDuration, HealthCheckSpec, ZerfooInferenceService};
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};

use crate::common::{NS, WAIT, condition_status, container, env, replicas, valid_spec, wait_for};

#[tokio::test]
async fn create_runs_the_primary_and_the_service_until_ready() {
    let mut env = env().await;
    env.start_controller();
    env.create("my-llama", valid_spec()).await.unwrap();
    env.wait_ready("my-llama").await;

    let d = env.deployment("my-llama-primary").await;
    assert_eq!(d.namespace().as_deref(), Some(NS));
    assert_eq!(replicas(&d), Some(2));
    let c = container(&d);
    assert_eq!(
        c.args.as_deref().unwrap(),
        ["serve", "--model", "llama3-8b-q4", "--port", "8080"]
    );
    let requests = c.resources.as_ref().unwrap().requests.as_ref().unwrap();
    assert_eq!(requests["cpu"].0, "4");
    assert_eq!(requests["memory"].0, "16Gi");
    assert_eq!(requests["nvidia.com/gpu"].0, "1");
    assert!(env.svcs.get("my-llama-svc").await.is_ok());
    assert!(env.svcs.get("my-llama-primary").await.is_ok());

    let zis = env.get("my-llama").await;
    let status = zis.status.clone().unwrap();
    assert_eq!(status.replicas, Some(2));
    assert_eq!(status.ready_replicas, Some(2));
    assert_eq!(status.observed_generation, zis.metadata.generation);
    for t in [
        "Ready",
        "ConfigValid",
        "PrimaryReady",
        "CanaryReady",
        "AutoscalingReady",
        "RouteReady",
    ] {
        assert_eq!(condition_status(&zis, t), "True", "{t}");
    }
}

#[tokio::test]
async fn scale_2_to_5_updates_the_deployment() {
    let env = env().await;
    env.create("my-llama", valid_spec()).await.unwrap();
    env.converge("my-llama").await;
    let uid = env.deployment("my-llama-primary").await.uid();
    env.edit("my-llama", |s| s.replicas = 5).await;
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas(&d), Some(5));
    assert_eq!(d.uid(), uid, "updated in place, not recreated");
    assert_eq!(env.get("my-llama").await.status.unwrap().replicas, Some(5));
}

#[tokio::test]
async fn canary_80_20_runs_two_models_and_splits_traffic() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.canary = Some(CanarySpec {
        model_ref: "llama3-8b-q8".into(),
        weight: 20,
    });
    spec.gateway_ref = Some(kinfer_api::zerfoo::GatewayRef {
        name: "public".into(),
        namespace: Some("infra".into()),
        section_name: None,
    });
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;

    assert_eq!(
        env.deployment_names().await,
        ["my-llama-canary", "my-llama-primary"]
    );
    let canary = env.deployment("my-llama-canary").await;
    assert_eq!(
        container(&canary).args.as_deref().unwrap()[2],
        "llama3-8b-q8"
    );
    let route = env.routes.get("my-llama-route").await.unwrap();
    assert_eq!(
        crate::common::backends(&route),
        [
            ("my-llama-primary".to_owned(), 80),
            ("my-llama-canary".to_owned(), 20)
        ]
    );
    // The shared Service selects both tracks; each track Service one.
    let svc = env.svcs.get("my-llama-svc").await.unwrap();
    let selector = svc.spec.unwrap().selector.unwrap();
    assert!(!selector.contains_key("app.kubernetes.io/component"));
    let canary_svc = env.svcs.get("my-llama-canary").await.unwrap();
    assert_eq!(
        canary_svc.spec.unwrap().selector.unwrap()["app.kubernetes.io/component"],
        "canary"
    );
    assert!(env.get("my-llama").await.status.unwrap().ready);
}

/// No HPA exists in the test namespace.
async fn assert_no_hpa(env: &crate::common::Env) {
    let hpas = env.hpas.list(&ListParams::default()).await.unwrap().items;
    assert!(hpas.is_empty(), "{hpas:?}");
}

fn probe_of(d: &Deployment) -> (String, i32, i32) {
    let p = container(d).readiness_probe.clone().unwrap();
    (
        p.http_get.unwrap().path.unwrap(),
        p.period_seconds.unwrap(),
        p.timeout_seconds.unwrap(),
    )
}

#[tokio::test]
async fn health_check_reaches_the_deployment_on_create_and_on_change() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.health_check = Some(HealthCheckSpec {
        path: "/ready".into(),
        interval: "30s".into(),
        timeout: "10s".into(),
    });
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(probe_of(&d), ("/ready".to_owned(), 30, 10));
    let liveness = container(&d).liveness_probe.clone().unwrap();
    assert_eq!(liveness.http_get.unwrap().path.as_deref(), Some("/ready"));

    // Upstream never propagated this change.
    env.edit("my-llama", |s| {
        s.health_check = Some(HealthCheckSpec {
            path: "/v1/health".into(),
            interval: "15s".into(),
            timeout: "3s".into(),
        });
    })
    .await;
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(probe_of(&d), ("/v1/health".to_owned(), 15, 3));
}

#[tokio::test]
async fn without_a_health_check_the_server_gets_tcp_probes_then_http_ones() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.health_check = None;
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    let c = container(&d);
    for probe in [&c.startup_probe, &c.readiness_probe, &c.liveness_probe] {
        let probe = probe.clone().expect("never unprobed");
        assert!(probe.http_get.is_none());
        assert!(probe.tcp_socket.is_some(), "{probe:?}");
    }

    // Adding a health check replaces the TCP checks (the apply drops what it no longer sets).
    env.edit("my-llama", |s| {
        s.health_check = Some(HealthCheckSpec {
            path: "/ready".into(),
            interval: "20s".into(),
            timeout: "2s".into(),
        });
    })
    .await;
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(probe_of(&d), ("/ready".to_owned(), 20, 2));
    let c = container(&d);
    for probe in [&c.startup_probe, &c.readiness_probe, &c.liveness_probe] {
        let probe = probe.clone().unwrap();
        assert!(probe.tcp_socket.is_none(), "{probe:?}");
        assert_eq!(probe.http_get.unwrap().path.as_deref(), Some("/ready"));
    }
}

#[tokio::test]
async fn delete_removes_every_child_through_owner_references() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.canary = Some(CanarySpec {
        model_ref: "llama3-8b-q8".into(),
        weight: 20,
    });
    spec.min_replicas = Some(2);
    spec.max_replicas = Some(10);
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;
    assert_eq!(
        env.svcs
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );

    let uid = env.get("my-llama").await.uid().unwrap();
    env.services
        .delete("my-llama", &DeleteParams::background())
        .await
        .unwrap();
    wait_for(
        &env.services,
        "my-llama",
        move |z: Option<&ZerfooInferenceService>| {
            z.is_none_or(|z| z.uid().as_deref() != Some(uid.as_str()))
        },
    )
    .await;
    for name in ["my-llama-primary", "my-llama-canary"] {
        wait_for(&env.deployments, name, |d: Option<&Deployment>| d.is_none()).await;
    }
    for name in ["my-llama-svc", "my-llama-primary", "my-llama-canary"] {
        wait_for(&env.svcs, name, |s: Option<&Service>| s.is_none()).await;
    }
    wait_for(
        &env.hpas,
        "my-llama-hpa",
        |h: Option<&HorizontalPodAutoscaler>| h.is_none(),
    )
    .await;
    let _ = WAIT;
}

#[tokio::test]
async fn autoscaling_2_to_10_creates_a_cpu_hpa_on_the_primary() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.min_replicas = Some(2);
    spec.max_replicas = Some(10);
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;
    let hpa = env.hpas.get("my-llama-hpa").await.unwrap();
    let s = hpa.spec.unwrap();
    assert_eq!(s.min_replicas, Some(2));
    assert_eq!(s.max_replicas, 10);
    assert_eq!(s.scale_target_ref.name, "my-llama-primary");
    assert_eq!(s.scale_target_ref.kind, "Deployment");
    let metric = &s.metrics.unwrap()[0];
    let resource = metric.resource.as_ref().unwrap();
    assert_eq!(resource.name, "cpu");
    assert_eq!(resource.target.average_utilization, Some(80));
    let zis = env.get("my-llama").await;
    assert_eq!(condition_status(&zis, "AutoscalingReady"), "True");
}

/// What a manifest written by upstream's Go types carries: `time.Duration` as integer
/// nanoseconds, and `minReplicas` without `maxReplicas` (autoscaling off upstream). Both are
/// accepted: the probes get the seconds, no HPA is made, and `AutoscalingReady` says why.
#[tokio::test]
async fn a_manifest_go_wrote_converges_with_nanosecond_durations_and_a_lone_bound() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.min_replicas = Some(2);
    spec.health_check = Some(HealthCheckSpec {
        path: "/ready".into(),
        interval: GoDuration::Nanoseconds(30_000_000_000),
        timeout: GoDuration::Nanoseconds(10_000_000_000),
    });
    env.create("go-written", spec).await.unwrap();
    env.converge("go-written").await;
    let d = env.deployment("go-written-primary").await;
    assert_eq!(probe_of(&d), ("/ready".to_owned(), 30, 10));
    assert_no_hpa(&env).await;
    let zis = env.get("go-written").await;
    assert_eq!(condition_status(&zis, "ConfigValid"), "True");
    assert_eq!(condition_status(&zis, "Ready"), "True");
    let autoscaling = crate::common::condition(&zis, "AutoscalingReady").unwrap();
    assert_eq!(autoscaling.reason, "NotConfigured");
    assert!(
        autoscaling.message.contains("spec.minReplicas")
            && autoscaling.message.contains("spec.maxReplicas"),
        "{}",
        autoscaling.message
    );
}

#[tokio::test]
async fn no_hpa_without_autoscaling_config() {
    let env = env().await;
    env.create("my-llama", valid_spec()).await.unwrap();
    env.converge("my-llama").await;
    assert_no_hpa(&env).await;
    let zis = env.get("my-llama").await;
    assert_eq!(
        crate::common::condition(&zis, "AutoscalingReady")
            .unwrap()
            .reason,
        "NotConfigured"
    );
}

#[tokio::test]
async fn an_existing_deployment_is_updated_not_recreated() {
    let env = env().await;
    env.create("my-llama", valid_spec()).await.unwrap();
    env.converge("my-llama").await;
    let before = env.deployment("my-llama-primary").await;

    // Someone scales the running Deployment down by hand (another field manager).
    let pp = PatchParams {
        field_manager: Some("kubectl-edit".into()),
        ..PatchParams::default()
    };
    env.deployments
        .patch(
            "my-llama-primary",
            &pp,
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    env.settle().await;
    let report = env.converge("my-llama").await;
    assert!(report.errors.is_empty(), "{report:?}");
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(d.uid(), before.uid(), "updated in place, not recreated");
    assert_eq!(replicas(&d), Some(2));
}

#[tokio::test]
async fn a_foreign_deployment_of_the_same_name_is_not_taken_over() {
    let env = env().await;
    let existing: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "my-llama-primary", "namespace": NS},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "other"}},
            "template": {
                "metadata": {"labels": {"app": "other"}},
                "spec": {"containers": [{"name": "other", "image": "other"}]}
            }
        }
    }))
    .unwrap();
    env.deployments
        .create(&PostParams::default(), &existing)
        .await
        .unwrap();
    env.create("my-llama", valid_spec()).await.unwrap();
    env.reconcile("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas(&d), Some(1), "left alone");
    assert_eq!(container(&d).image.as_deref(), Some("other"));
    let zis = env.get("my-llama").await;
    assert_eq!(condition_status(&zis, "ConfigValid"), "False");
    assert!(!zis.status.unwrap().ready);
}

#[tokio::test]
async fn removing_the_canary_removes_its_deployment_service_and_backend() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.canary = Some(CanarySpec {
        model_ref: "llama3-8b-q8".into(),
        weight: 20,
    });
    spec.gateway_ref = Some(kinfer_api::zerfoo::GatewayRef {
        name: "public".into(),
        namespace: None,
        section_name: None,
    });
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;
    assert!(env.svcs.get("my-llama-canary").await.is_ok());

    env.edit("my-llama", |s| s.canary = None).await;
    env.converge("my-llama").await;
    assert_eq!(env.deployment_names().await, ["my-llama-primary"]);
    assert!(env.svcs.get_opt("my-llama-canary").await.unwrap().is_none());
    let route = env.routes.get("my-llama-route").await.unwrap();
    assert_eq!(
        crate::common::backends(&route),
        [("my-llama-primary".to_owned(), 100)]
    );
    let zis = env.get("my-llama").await;
    assert_eq!(
        crate::common::condition(&zis, "CanaryReady")
            .unwrap()
            .reason,
        "NotConfigured"
    );
}
