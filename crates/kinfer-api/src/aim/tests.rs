//! Tests of the AIM kinds against upstream's reference data: the aim-engine samples parse,
//! validate and round-trip; our CRDs match upstream's field by field. The kaiwo migration is
//! tested in `tests/migration.rs`, the [`Validate`] rules and conversions in `tests/rules.rs`.

mod migration;
mod rules;

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use kube::{CustomResourceExt, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::*;
use crate::validation::Validate;

/// The AIM reference directory, or `None` (test skipped) when `../shared` is absent outside CI.
fn reference() -> Option<PathBuf> {
    kinfer_crdcheck::shared_dir().map(|dir| dir.join("reference/aim"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn yaml_value(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("parsing YAML: {e}"))
}

/// Every key of `original` is in `serialized` with the same value: nothing the manifest said was
/// lost or changed by parsing it into our types (defaults may add keys).
fn assert_preserved(original: &Value, serialized: &Value, path: &str) {
    match (original, serialized) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let Some(other) = b.get(key) else {
                    panic!("{path}.{key} was dropped");
                };
                assert_preserved(value, other, &format!("{path}.{key}"));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: list length changed");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert_preserved(x, y, &format!("{path}[{i}]"));
            }
        }
        (a, b) => assert_eq!(a, b, "{path} changed"),
    }
}

/// Parses an aim-engine sample as `K` and checks it: kind, no data lost, round-trips through
/// JSON and YAML, passes [`Validate`] and our CRD's schema.
fn check_sample<K>(file: &str) -> Option<K>
where
    K: Resource<DynamicType = ()>
        + CustomResourceExt
        + DeserializeOwned
        + Serialize
        + PartialEq
        + Debug
        + Validate,
{
    let dir = reference()?;
    let text = read(&dir.join("samples").join(file));
    let original = yaml_value(&text);
    assert_eq!(original["kind"], K::kind(&()).as_ref(), "{file}");
    assert_eq!(
        original["apiVersion"],
        K::api_version(&()).as_ref(),
        "{file}"
    );

    let object: K = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let serialized = serde_json::to_value(&object).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_preserved(&original, &serialized, "");

    let from_json: K =
        serde_json::from_value(serialized.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(from_json, object, "{file}: JSON round trip");
    let yaml = serde_saphyr::to_string(&object).unwrap_or_else(|e| panic!("{file}: {e}"));
    let from_yaml: K = serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(from_yaml, object, "{file}: YAML round trip");

    if let Err(errors) = object.validate() {
        panic!("{file}: {errors}");
    }
    schema_check::<K>(&serialized, file);
    Some(object)
}

/// Validates an object (as JSON) against the schema of `K`'s generated CRD.
fn schema_check<K: CustomResourceExt>(object: &Value, what: &str) {
    let crd = serde_json::to_value(K::crd()).unwrap_or_else(|e| panic!("{e}"));
    let validator = kinfer_crdcheck::SchemaValidator::from_crd(&crd, None)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let errors = validator.errors(object);
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

#[test]
fn sample_cluster_model_source() {
    let Some(source) =
        check_sample::<AIMClusterModelSource>("aim-engine_01_aimclustermodelsource.yaml")
    else {
        return;
    };
    assert_eq!(source.spec.registry, "ghcr.io");
    assert_eq!(source.spec.max_models, 10);
    assert_eq!(source.spec.filters[0].image, "silogen/aim-*");
}

#[test]
fn sample_runtime_config_routing() {
    let Some(config) =
        check_sample::<AIMRuntimeConfig>("aim-engine_02_aimruntimeconfig_routing.yaml")
    else {
        return;
    };
    let routing = config.spec.routing.as_ref();
    assert_eq!(
        routing.and_then(|r| r.request_timeout.as_deref()),
        Some("180s")
    );
    let gateway = routing.and_then(|r| r.gateway_ref.as_ref());
    assert_eq!(
        gateway.map(|g| g.kind.as_str()),
        Some("Gateway"),
        "defaulted"
    );
}

#[test]
fn sample_service_from_image() {
    let Some(service) =
        check_sample::<AIMService>("aim-engine_03_aimservice_from_image_shared_cache.yaml")
    else {
        return;
    };
    assert_eq!(
        service.spec.model.image.as_deref(),
        Some("amdenterpriseai/aim-qwen-qwen3-32b:0.8.5")
    );
    let mode = service.spec.caching.map(|c| c.mode.normalized());
    assert_eq!(mode, Some(CachingMode::Shared));
    assert_eq!(service.spec.replicas, 1, "defaulted");
}

#[test]
fn sample_model_with_spec_image_metadata() {
    let Some(model) = check_sample::<AIMModel>("aim-engine_04_aimmodel_spec_imagemetadata.yaml")
    else {
        return;
    };
    let deployments = model
        .spec
        .image_metadata
        .and_then(|m| m.model)
        .map(|m| m.recommended_deployments)
        .unwrap_or_default();
    assert_eq!(deployments.len(), 1);
    assert_eq!(deployments[0].gpu_model.as_deref(), Some("MI300X"));
    assert_eq!(deployments[0].gpu_count, Some(1));
}

#[test]
fn sample_model_with_custom_templates() {
    let Some(model) = check_sample::<AIMModel>("aim-engine_05_aimmodel_custom_templates.yaml")
    else {
        return;
    };
    assert_eq!(model.spec.custom_templates.len(), 6);
    assert_eq!(
        model.spec.custom_templates[0].r#type, "unoptimized",
        "defaulted"
    );
    assert_eq!(model.spec.custom_templates[3].r#type, "optimized");
    let gpu = model.spec.custom_templates[1]
        .hardware
        .as_ref()
        .and_then(|h| h.gpu.as_ref());
    assert_eq!(gpu.and_then(|g| g.requests), Some(2));
    assert_eq!(gpu.map(|g| g.resource_name.as_str()), Some("amd.com/gpu"));
}

#[test]
fn sample_service_with_inline_custom_model() {
    let Some(service) =
        check_sample::<AIMService>("aim-engine_06_aimservice_inline_custom_model.yaml")
    else {
        return;
    };
    let custom = service.spec.model.custom.as_ref();
    assert_eq!(
        custom.map(|c| c.model_sources[0].model_id.as_str()),
        Some("inline/test-model")
    );
    assert_eq!(
        service.spec.template.and_then(|t| t.allow_unoptimized),
        Some(true)
    );
}

#[test]
fn sample_service_with_autoscaling() {
    let Some(service) = check_sample::<AIMService>("aim-engine_07_aimservice_autoscaling.yaml")
    else {
        return;
    };
    assert_eq!(
        (service.spec.min_replicas, service.spec.max_replicas),
        (Some(1), Some(3))
    );
    let metric = &service
        .spec
        .auto_scaling
        .map(|a| a.metrics)
        .unwrap_or_default()[0];
    let target = metric.podmetric.as_ref().map(|p| &p.target);
    assert_eq!(target.and_then(|t| t.value.as_deref()), Some("1"));
}

#[test]
fn sample_cluster_runtime_config_label_propagation() {
    let Some(config) = check_sample::<AIMClusterRuntimeConfig>(
        "aim-engine_08_aimclusterruntimeconfig_labelprop_routing.yaml",
    ) else {
        return;
    };
    let propagation = config.spec.label_propagation.as_ref();
    assert_eq!(propagation.map(|p| p.r#match.len()), Some(2));
}

#[test]
fn sample_template_with_min_vram_and_inline_sources() {
    let Some(template) = check_sample::<AIMServiceTemplate>(
        "aim-engine_09_aimservicetemplate_minvram_inline_sources.yaml",
    ) else {
        return;
    };
    let gpu = template
        .spec
        .parameters
        .hardware
        .as_ref()
        .and_then(|h| h.gpu.as_ref());
    assert_eq!(
        gpu.and_then(|g| g.min_vram.as_ref()).map(|q| q.0.as_str()),
        Some("64Gi")
    );
    assert_eq!(template.spec.model_sources[0].source_uri, "hf://test/model");
}

#[test]
fn sample_template_cache() {
    let Some(cache) = check_sample::<AIMTemplateCache>("aim-engine_10_aimtemplatecache.yaml")
    else {
        return;
    };
    assert_eq!(cache.spec.template_scope, TemplateScope::Namespace);
    assert_eq!(cache.spec.mode, CachingMode::Shared, "defaulted");
}

/// The differences from upstream our CRDs are allowed to have, as `(crd, path, keyword)`.
#[test]
fn service_status_allows_every_state_the_operator_writes() {
    for status in [
        AIMStatus::Pending,
        AIMStatus::Progressing,
        AIMStatus::Ready,
        AIMStatus::Degraded,
        AIMStatus::Failed,
        AIMStatus::NotAvailable,
    ] {
        let state = AIMServiceState::from(status);
        let object = json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMService",
            "metadata": {"name": "s"},
            "spec": {"model": {"name": "m"}},
            "status": {"status": state},
        });
        schema_check::<AIMService>(&object, &format!("{status:?}"));
    }
    assert_eq!(
        AIMServiceState::from(AIMStatus::Ready),
        AIMServiceState::Running
    );
    assert_eq!(
        AIMServiceState::from(AIMStatus::Progressing),
        AIMServiceState::Starting
    );
}

/// The `status.status` enum of a CRD, sorted.
fn status_values<K: CustomResourceExt>() -> Vec<String> {
    let crd = serde_json::to_value(K::crd()).unwrap_or_else(|e| panic!("{e}"));
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let listed = &schema["properties"]["status"]["properties"]["status"]["enum"];
    let mut values: Vec<String> = serde_json::from_value(listed.clone()).unwrap_or_default();
    values.sort();
    values
}

#[test]
fn template_cache_status_schema_lists_every_aim_status() {
    // The template cache writes the variants of AIMStatus in upstream's order by hand
    // (schema_ext::template_cache_status); the model's schema is derived from the enum.
    let derived = status_values::<AIMModel>();
    assert_eq!(derived.len(), 6);
    assert_eq!(status_values::<AIMTemplateCache>(), derived);
}

/// An AIMService from its JSON form.
fn service(value: Value) -> AIMService {
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"))
}
