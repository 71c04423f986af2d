//! `Validate` for ZerfooInferenceService: upstream's 13 `CRDSpec_Validation` cases re-expressed,
//! plus the rules upstream skipped, each rejected with its field path.

#![allow(clippy::expect_used)]

use kinfer_api::validation::Validate;
use kinfer_api::zerfoo::{CanarySpec, HealthCheckSpec, ResourceSpec, ZerfooInferenceServiceSpec};

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

#[test]
fn a_lone_autoscaling_bound_names_its_partner() {
    let mut spec = valid();
    spec.min_replicas = Some(2);
    assert_eq!(
        spec.validate().expect_err("lone min").to_string(),
        "spec.minReplicas: must be set together with spec.maxReplicas"
    );
    let mut spec = valid();
    spec.max_replicas = Some(4);
    assert_eq!(
        spec.validate().expect_err("lone max").to_string(),
        "spec.maxReplicas: must be set together with spec.minReplicas"
    );
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
            "minReplicas without maxReplicas",
            |s| s.min_replicas = Some(2),
            "spec.minReplicas",
        ),
        (
            "minReplicas with a zero maxReplicas",
            |s| {
                s.min_replicas = Some(2);
                s.max_replicas = Some(0);
            },
            "spec.minReplicas",
        ),
        (
            "maxReplicas without minReplicas",
            |s| s.max_replicas = Some(5),
            "spec.maxReplicas",
        ),
        (
            "maxReplicas with a zero minReplicas",
            |s| {
                s.min_replicas = Some(0);
                s.max_replicas = Some(5);
            },
            "spec.maxReplicas",
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
