//! The [`Validate`] rules report every violation with its path; the cluster kinds' schemas
//! equal the namespaced ones. (Env var conversions and rules are tested in `crate::env`.)

use kube::CustomResourceExt;
use serde_json::json;

use super::super::*;
use super::service;
use crate::validation::Validate;

#[test]
fn validate_reports_every_violation_with_its_path() {
    let service = service(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "s"},
        "spec": {
            "model": {"name": "m", "image": "i"},
            "overrides": {"hardware": {"cpu": {"requests": "0"}, "gpu": {"model": "MI300X", "minVram": "64Gi"}}},
            "routing": {"requestTimeout": "3 minutes"},
            "env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "autoScaling": {"metrics": [{"type": "PodMetric", "podmetric": {
                "metric": {}, "target": {"type": "Value", "value": "lots"}}}]},
        },
    }));
    let errors = service.validate().err().unwrap_or_default();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    pretty_assertions::assert_eq!(
        paths,
        [
            "spec.model",
            "spec.overrides.hardware.gpu",
            "spec.overrides.hardware.cpu.requests",
            "spec.autoScaling.metrics[0].podmetric.target.value",
            "spec.routing.requestTimeout",
            "spec.env[0].valueFrom",
        ]
    );
}

#[test]
fn validate_checks_model_sources_hardware_and_sync_interval() {
    let model: AIMModel = serde_json::from_value(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMModel",
        "metadata": {"name": "m"},
        "spec": {
            "image": "i",
            "modelSources": [{"modelId": "a/b", "sourceUri": "hf://a/b", "size": "big"}],
            "customTemplates": [{"name": "t"}],
        },
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let errors = model.validate().err().unwrap_or_default();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "spec.customTemplates[0].hardware",
            "spec.modelSources[0].size"
        ]
    );

    let source: AIMClusterModelSource = serde_json::from_value(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMClusterModelSource",
        "metadata": {"name": "s"},
        "spec": {"filters": [{"image": "org/*"}], "syncInterval": "hourly"},
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let errors = source.validate().err().unwrap_or_default();
    assert_eq!(
        errors.iter().map(|e| e.path.as_str()).collect::<Vec<_>>(),
        ["spec.syncInterval"]
    );
    assert_eq!(source.spec.max_models, 100, "defaulted");
}

#[test]
fn cluster_kinds_share_the_namespaced_spec_schema() {
    let spec_schema = |crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition| {
        let value = serde_json::to_value(crd).unwrap_or_else(|e| panic!("{e}"));
        let mut spec = value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].clone();
        if let Some(spec) = spec.as_object_mut() {
            spec.remove("description");
        }
        spec
    };
    assert_eq!(
        spec_schema(AIMModel::crd()),
        spec_schema(AIMClusterModel::crd())
    );
    assert_eq!(
        spec_schema(AIMRuntimeConfig::crd()),
        spec_schema(AIMClusterRuntimeConfig::crd())
    );
}

#[test]
fn references_by_name_must_be_object_names_and_values_are_cut_in_messages() {
    let long = "x".repeat(100_000);
    let service = service(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "s"},
        "spec": {
            "model": {"name": "$(rm -rf /)"},
            "template": {"name": long},
            "runtimeConfigName": "../secrets",
        },
    }));
    let errors = service.validate().err().unwrap_or_default();
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "spec.model.name",
            "spec.template.name",
            "spec.runtimeConfigName"
        ]
    );
    assert!(
        errors.0[0]
            .message
            .starts_with(r#""$(rm -rf /)" is not a valid object name"#),
        "{}",
        errors.0[0].message
    );
    let cut = &errors.0[1].message;
    assert!(cut.len() < 300, "the value is cut: {} bytes", cut.len());
    assert!(cut.contains("… (100000 characters)"), "{cut}");

    // Empty means unset for the template and the runtime config, not for the model.
    let service_with = |spec: serde_json::Value| {
        super::service(
            json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
                              "metadata": {"name": "s"}, "spec": spec}),
        )
    };
    let valid = service_with(
        json!({"model": {"name": "qwen3.v1"}, "template": {"name": ""},
                                    "runtimeConfigName": ""}),
    );
    assert_eq!(valid.validate(), Ok(()));
    let empty_model = service_with(json!({"model": {"name": ""}}));
    let errors = empty_model.validate().err().unwrap_or_default();
    assert_eq!(
        errors.iter().map(|e| e.path.as_str()).collect::<Vec<_>>(),
        ["spec.model.name"]
    );

    let template: AIMServiceTemplate = serde_json::from_value(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
        "metadata": {"name": "t", "namespace": "n"},
        "spec": {"modelName": "Qwen/Qwen3", "runtimeConfigName": "a_b"},
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let errors = template.validate().err().unwrap_or_default();
    assert_eq!(
        errors.iter().map(|e| e.path.as_str()).collect::<Vec<_>>(),
        ["spec.modelName", "spec.runtimeConfigName"]
    );
    let model: AIMModel = serde_json::from_value(json!({
        "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
        "metadata": {"name": "m"}, "spec": {"image": "i", "runtimeConfigName": "A"},
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let errors = model.validate().err().unwrap_or_default();
    assert_eq!(
        errors.iter().map(|e| e.path.as_str()).collect::<Vec<_>>(),
        ["spec.runtimeConfigName"]
    );
}

#[test]
fn shown_quotes_escapes_and_cuts() {
    assert_eq!(shown("a\"b"), r#""a\"b""#);
    assert_eq!(shown("\u{202e}x"), r#""\u{202e}x""#);
    let s = shown(&"é".repeat(70));
    assert!(s.ends_with("… (70 characters)"), "{s}");
    assert_eq!(s.matches('é').count(), 64);
}
