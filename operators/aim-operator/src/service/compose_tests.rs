//! Template resolution under infrastructure errors of a template's own reconcile: the
//! service's choice follows the ranking, not an API server's 500.

use std::collections::BTreeMap;

use kinfer_api::aim::{AIMService, AIMServiceTemplate, AIMServiceTemplateStatus};
use kinfer_api::phase::Phase;
use kinfer_select::gpu::ClusterGpus;
use serde_json::{Value, json};

use super::*;

const UNREACHABLE: (&str, &str) = ("DependenciesReachable", "False");
const DISCOVERED: (&str, &str) = ("Discovered", "True");
const DISCOVERING: (&str, &str) = ("Discovered", "False");

/// A discovered MI300X template of model `m` with `metric` and `precision`.
fn template(
    name: &str,
    metric: &str,
    precision: &str,
    phase: &str,
    conds: &[(&str, &str)],
) -> TemplateInfo {
    let conditions: Vec<Value> = conds
        .iter()
        .map(|(t, s)| {
            json!({"type": t, "status": s, "reason": "R", "message": "",
                             "lastTransitionTime": "2026-01-01T00:00:00Z"})
        })
        .collect();
    let mut t: AIMServiceTemplate = serde_json::from_value(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
        "spec": {"modelName": "m", "metric": metric, "precision": precision,
                 "hardware": {"gpu": {"model": "MI300X", "requests": 1}}}}))
    .expect("template");
    t.status = Some(
        serde_json::from_value::<AIMServiceTemplateStatus>(json!({
            "status": phase, "conditions": conditions,
            "profile": {"metadata": {"type": "optimized"}}}))
        .expect("status"),
    );
    TemplateInfo::from(t)
}

fn model() -> ModelInfo {
    ModelInfo {
        name: "m".into(),
        reference: ResolvedReference {
            kind: Some("AIMModel".into()),
            name: Some("m".into()),
            namespace: Some("ns".into()),
            scope: Some(ResolutionScope::Namespace),
            uid: Some("uid-m".into()),
        },
        spec: AIMModelSpec::default(),
        phase: Phase::Ready,
    }
}

fn service(resolved: Option<&TemplateInfo>) -> AIMService {
    let mut svc: AIMService = serde_json::from_value(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
        "metadata": {"name": "s", "namespace": "ns", "uid": "uid-s"},
        "spec": {"model": {"name": "m"}}}))
    .expect("service");
    if let Some(t) = resolved {
        svc.status = Some(kinfer_api::aim::AIMServiceStatus {
            resolved_template: Some(t.reference()),
            ..Default::default()
        });
    }
    svc
}

fn mi300x() -> ClusterGpus {
    let node = BTreeMap::from([("amd.com/gpu.device-id".to_owned(), "74a1".to_owned())]);
    ClusterGpus::from_nodes([&node])
}

fn chosen(svc: &AIMService, templates: &[TemplateInfo]) -> (ComponentHealth, Option<String>) {
    let (health, choice) = resolve_template(svc, &model(), templates, &mi300x());
    (health, choice.template.map(|t| t.name))
}

#[test]
fn a_resolved_template_is_kept_through_its_own_infrastructure_error() {
    let lat = template(
        "lat-fp8",
        "latency",
        "fp8",
        "Degraded",
        &[UNREACHABLE, DISCOVERED],
    );
    let thr = template("thr-fp16", "throughput", "fp16", "Ready", &[DISCOVERED]);
    let svc = service(Some(&lat));
    let (health, name) = chosen(&svc, &[lat.clone(), thr.clone()]);
    assert_eq!(name.as_deref(), Some("lat-fp8"), "{health:?}");
    assert_eq!(health.effective_state(), ComponentState::Ready);

    // Degraded for another reason (no infrastructure error): re-selected, as before.
    let degraded = template("lat-fp8", "latency", "fp8", "Degraded", &[DISCOVERED]);
    let (_, name) = chosen(&service(Some(&degraded)), &[degraded, thr]);
    assert_eq!(name.as_deref(), Some("thr-fp16"));
}

#[test]
fn the_first_choice_waits_for_a_template_whose_discovery_met_an_infrastructure_error() {
    let thr = template("thr-fp16", "throughput", "fp16", "Ready", &[DISCOVERED]);
    let lat = template(
        "lat-fp8",
        "latency",
        "fp8",
        "Degraded",
        &[UNREACHABLE, DISCOVERING],
    );
    let (health, name) = chosen(&service(None), &[lat, thr.clone()]);
    assert_eq!(
        name, None,
        "must not choose while lat-fp8 is being discovered"
    );
    assert_eq!(health.effective_state(), ComponentState::Pending);
    assert!(
        health.effective_message().contains("lat-fp8"),
        "{}",
        health.effective_message()
    );

    // Once discovered, a 500 in the template's reconcile does not take it out of the ranking.
    let lat = template(
        "lat-fp8",
        "latency",
        "fp8",
        "Degraded",
        &[UNREACHABLE, DISCOVERED],
    );
    let (_, name) = chosen(&service(None), &[lat, thr]);
    assert_eq!(name.as_deref(), Some("lat-fp8"));
}

#[allow(clippy::needless_pass_by_value)] // fixtures read better by value
fn service_spec(spec: Value) -> AIMService {
    serde_json::from_value(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
        "metadata": {"name": "s", "namespace": "ns", "uid": "uid-s"}, "spec": spec}))
    .expect("service")
}

#[test]
fn resolution_failures_name_the_spec_field() {
    let (health, _) = resolve_model(
        &service_spec(json!({"model": {"name": "nope"}})),
        &[model()],
    );
    assert_eq!(health.effective_reason().to_string(), "ModelNotFound");
    assert!(
        health
            .effective_message()
            .starts_with("spec.model.name: no AIMModel \"nope\""),
        "{}",
        health.effective_message()
    );

    let thr = template("thr-fp16", "throughput", "fp16", "Ready", &[DISCOVERED]);
    let named = service_spec(json!({"model": {"name": "m"}, "template": {"name": "gone"}}));
    let (health, name) = chosen(&named, std::slice::from_ref(&thr));
    assert_eq!(name, None);
    assert_eq!(health.effective_reason().to_string(), "TemplateNotFound");
    assert!(
        health
            .effective_message()
            .starts_with("spec.template.name: no AIMServiceTemplate \"gone\""),
        "{}",
        health.effective_message()
    );

    let overridden =
        service_spec(json!({"model": {"name": "m"}, "overrides": {"precision": "fp4"}}));
    let (health, name) = chosen(&overridden, std::slice::from_ref(&thr));
    assert_eq!(name, None);
    assert_eq!(
        health.effective_state(),
        ComponentState::Degraded,
        "{health:?}"
    );
    assert_eq!(health.effective_reason().to_string(), "TemplateNotFound");
    assert!(
        health
            .effective_message()
            .starts_with("spec.overrides: No template matches: thr-fp16 (overrides)"),
        "{}",
        health.effective_message()
    );

    // A 100,000-character image is quoted cut, whether a model name derives from it or not.
    for image in ["x:".repeat(50_000), "/".repeat(100_000)] {
        let (health, _) = resolve_model(&service_spec(json!({"model": {"image": image}})), &[]);
        let message = health.effective_message();
        assert!(message.len() < 300, "{} bytes", message.len());
        assert!(message.contains("… (100000 characters)"));
    }
    let (health, _) = resolve_model(
        &service_spec(json!({"model": {"image": "/".repeat(10)}})),
        &[],
    );
    assert!(health.effective_message().starts_with("spec.model.image: "));
}

#[test]
fn a_route_value_the_route_cannot_carry_names_its_field() {
    let gateway = json!({"name": "gw", "namespace": "infra"});
    let broken = |route: &Route| match route {
        Route::Broken(h) => h.effective_message(),
        other => panic!("not broken: {other:?}"),
    };
    // Go accepts `1.5h`; Gateway API durations do not.
    let svc = service_spec(json!({"model": {"name": "m"},
        "routing": {"enabled": true, "gatewayRef": gateway, "requestTimeout": "1.5h"}}));
    assert_eq!(
        broken(&route(&svc, None, "mgr")),
        "spec.routing.requestTimeout: \"1.5h\" is not a Gateway API duration such as \"300s\" or \"5m\""
    );
    // From the runtime config: its name and field.
    let rc = crate::runtime_config::Resolved {
        spec: serde_json::from_value(json!({"routing": {"requestTimeout": "1.5h"}}))
            .expect("rc spec"),
        reference: ResolvedReference {
            name: Some("team".into()),
            ..ResolvedReference::default()
        },
    };
    let svc = service_spec(json!({"model": {"name": "m"},
        "routing": {"enabled": true, "gatewayRef": gateway, "pathTemplate": "  "}}));
    assert!(
        broken(&route(&svc, Some(&rc), "mgr")).starts_with("spec.routing.pathTemplate: \"  \": "),
        "{}",
        broken(&route(&svc, Some(&rc), "mgr"))
    );
    let svc = service_spec(json!({"model": {"name": "m"},
        "routing": {"enabled": true, "gatewayRef": gateway}}));
    assert!(
        broken(&route(&svc, Some(&rc), "mgr")).starts_with(
            "spec.runtimeConfigName: runtime config \"team\" spec.routing.requestTimeout: \"1.5h\""
        ),
        "{}",
        broken(&route(&svc, Some(&rc), "mgr"))
    );
}
