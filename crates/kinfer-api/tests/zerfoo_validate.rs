//! `Validate` for ZerfooInferenceService: upstream's 13 `CRDSpec_Validation` cases re-expressed,
//! plus the rules upstream skipped, each rejected with its field path.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use kinfer_api::validation::Validate;
use kinfer_api::zerfoo::{
    CanarySpec, GoDuration, HealthCheckSpec, ResourceSpec, ZerfooInferenceServiceSpec,
};

fn valid() -> ZerfooInferenceServiceSpec {
    ZerfooInferenceServiceSpec {
        model_ref: "llama3-8b-q4".into(),
        replicas: 2,
        min_replicas: None,
        max_replicas: None,
        resources: Some(ResourceSpec {
            cpu: Some("4".into()),
            memory: Some("16Gi".into()),
            gpu_memory: Some("24Gi".into()),
        }),
        canary: None,
        health_check: Some(HealthCheckSpec {
            path: "/ready".into(),
            interval: "30s".into(),
            timeout: "10s".into(),
        }),
        gateway_ref: None,
    }
}

fn paths(spec: &ZerfooInferenceServiceSpec) -> Vec<String> {
    match spec.validate() {
        Ok(()) => Vec::new(),
        Err(errors) => errors.iter().map(|e| e.path.clone()).collect(),
    }
}

#[test]
fn valid_specs_are_accepted() {
    assert_eq!(paths(&valid()), Vec::<String>::new());
    let mut with_canary_and_autoscaling = valid();
    with_canary_and_autoscaling.canary = Some(CanarySpec {
        model_ref: "llama3-8b-q8".into(),
        weight: 20,
    });
    with_canary_and_autoscaling.min_replicas = Some(2);
    with_canary_and_autoscaling.max_replicas = Some(10);
    assert_eq!(paths(&with_canary_and_autoscaling), Vec::<String>::new());
    let mut minimal = valid();
    minimal.resources = None;
    minimal.health_check = None;
    assert_eq!(paths(&minimal), Vec::<String>::new());
    let mut zero_bounds = valid();
    zero_bounds.min_replicas = Some(0);
    zero_bounds.max_replicas = Some(0);
    assert_eq!(paths(&zero_bounds), Vec::<String>::new());
}

/// One bound alone is accepted, as upstream accepts it (autoscaling stays off), with a warning
/// on the bound that is set naming the one missing.
#[test]
fn a_lone_autoscaling_bound_is_accepted_with_a_warning_naming_its_partner() {
    let lone = |min: Option<i32>, max: Option<i32>| {
        let mut spec = valid();
        spec.min_replicas = min;
        spec.max_replicas = max;
        assert!(spec.validate().is_ok(), "{min:?}/{max:?}");
        assert_eq!(spec.autoscaling(), None);
        spec.warnings()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    let min_alone =
        "spec.minReplicas: autoscaling is off: it needs spec.maxReplicas too (as upstream)";
    let max_alone =
        "spec.maxReplicas: autoscaling is off: it needs spec.minReplicas too (as upstream)";
    assert_eq!(lone(Some(2), None), [min_alone]);
    assert_eq!(lone(Some(2), Some(0)), [min_alone]);
    assert_eq!(lone(None, Some(4)), [max_alone]);
    assert_eq!(lone(Some(0), Some(4)), [max_alone]);
    assert!(lone(None, None).is_empty());
    assert!(lone(Some(0), Some(0)).is_empty());
    let mut both = valid();
    both.min_replicas = Some(1);
    both.max_replicas = Some(3);
    assert!(both.warnings().is_empty());
}

/// Upstream's Go `time.Duration` fields arrive as integer nanoseconds from manifests Go wrote;
/// strings keep working.
#[test]
fn health_check_durations_are_strings_or_integer_nanoseconds() {
    let spec: ZerfooInferenceServiceSpec = serde_json::from_value(serde_json::json!({
        "modelRef": "m",
        "healthCheck": {"path": "/ready", "interval": 30_000_000_000_i64, "timeout": "10s"}
    }))
    .unwrap();
    let health = spec.health_check.clone().unwrap();
    assert_eq!(health.interval, GoDuration::Nanoseconds(30_000_000_000));
    assert_eq!(health.interval.seconds(), Some(30.0));
    assert_eq!(health.timeout.seconds(), Some(10.0));
    assert!(spec.validate().is_ok());
    // Written back as it came.
    let back = serde_json::to_value(&spec).unwrap();
    assert_eq!(back["healthCheck"]["interval"], 30_000_000_000_i64);
    assert_eq!(back["healthCheck"]["timeout"], "10s");
    let mut zero = spec.clone();
    zero.health_check.as_mut().unwrap().interval = GoDuration::Nanoseconds(0);
    assert_eq!(paths(&zero), ["spec.healthCheck.interval"]);
    let mut negative = spec;
    negative.health_check.as_mut().unwrap().timeout = GoDuration::Nanoseconds(-5);
    assert_eq!(paths(&negative), ["spec.healthCheck.timeout"]);
}

#[test]
fn each_rule_is_rejected_with_its_field_path() {
    type Mutation = fn(&mut ZerfooInferenceServiceSpec);
    let cases: &[(&str, Mutation, &str)] = &[
        (
            "empty modelRef",
            |s| s.model_ref = String::new(),
            "spec.modelRef",
        ),
        (
            "blank modelRef",
            |s| s.model_ref = "  ".into(),
            "spec.modelRef",
        ),
        ("zero replicas", |s| s.replicas = 0, "spec.replicas"),
        ("negative replicas", |s| s.replicas = -1, "spec.replicas"),
        (
            "min above max",
            |s| {
                s.min_replicas = Some(5);
                s.max_replicas = Some(2);
            },
            "spec.minReplicas",
        ),
        (
            "replicas below min while autoscaling",
            |s| {
                s.min_replicas = Some(3);
                s.max_replicas = Some(5);
            },
            "spec.replicas",
        ),
        (
            "replicas above max while autoscaling",
            |s| {
                s.replicas = 9;
                s.min_replicas = Some(1);
                s.max_replicas = Some(5);
            },
            "spec.replicas",
        ),
        (
            "negative minReplicas",
            |s| s.min_replicas = Some(-1),
            "spec.minReplicas",
        ),
        (
            "empty canary modelRef",
            |s| {
                s.canary = Some(CanarySpec {
                    model_ref: String::new(),
                    weight: 10,
                });
            },
            "spec.canary.modelRef",
        ),
        (
            "canary weight above 100",
            |s| {
                s.canary = Some(CanarySpec {
                    model_ref: "m".into(),
                    weight: 101,
                });
            },
            "spec.canary.weight",
        ),
        (
            "negative canary weight",
            |s| {
                s.canary = Some(CanarySpec {
                    model_ref: "m".into(),
                    weight: -1,
                });
            },
            "spec.canary.weight",
        ),
        (
            "empty health path",
            |s| health(s).path = String::new(),
            "spec.healthCheck.path",
        ),
        (
            "relative health path",
            |s| health(s).path = "ready".into(),
            "spec.healthCheck.path",
        ),
        (
            "zero interval",
            |s| health(s).interval = "0s".into(),
            "spec.healthCheck.interval",
        ),
        (
            "zero timeout",
            |s| health(s).timeout = "0".into(),
            "spec.healthCheck.timeout",
        ),
        (
            "malformed interval",
            |s| health(s).interval = "thirty seconds".into(),
            "spec.healthCheck.interval",
        ),
        (
            "malformed cpu",
            |s| resources(s).cpu = Some("four".into()),
            "spec.resources.cpu",
        ),
        (
            "malformed memory",
            |s| resources(s).memory = Some("16GB".into()),
            "spec.resources.memory",
        ),
        (
            "zero gpuMemory",
            |s| resources(s).gpu_memory = Some("0".into()),
            "spec.resources.gpuMemory",
        ),
    ];
    for (name, mutate, path) in cases {
        let mut spec = valid();
        mutate(&mut spec);
        assert_eq!(paths(&spec), vec![(*path).to_owned()], "case {name}");
    }
}

#[test]
fn every_violation_is_reported_at_once() {
    let mut spec = valid();
    spec.model_ref = String::new();
    spec.replicas = 0;
    spec.canary = Some(CanarySpec {
        model_ref: String::new(),
        weight: 200,
    });
    let errors = spec.validate().expect_err("invalid");
    assert_eq!(errors.0.len(), 4);
    assert_eq!(
        errors.to_string(),
        "spec.modelRef: must not be empty; spec.replicas: must be at least 1; \
         spec.canary.modelRef: must not be empty; spec.canary.weight: must be between 0 and 100"
    );
}

fn health(spec: &mut ZerfooInferenceServiceSpec) -> &mut HealthCheckSpec {
    spec.health_check
        .as_mut()
        .expect("fixture has a health check")
}

fn resources(spec: &mut ZerfooInferenceServiceSpec) -> &mut ResourceSpec {
    spec.resources.as_mut().expect("fixture has resources")
}
