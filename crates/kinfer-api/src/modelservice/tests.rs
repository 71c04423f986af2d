//! ModelService tests: the upstream and derived samples parse, round-trip, pass our schema and
//! [`Validate`]; the rule table is in `rules`.

use std::path::{Path, PathBuf};

use kinfer_crdcheck::SchemaValidator;
use serde_json::Value;

use super::*;

mod pod_rules;
mod rules;

/// The sample files, or `None` (after saying so) when `../shared` is absent outside CI.
fn sample_files() -> Option<Vec<PathBuf>> {
    let dir = kinfer_crdcheck::shared_dir()?.join("reference/modelservice/samples");
    let mut files = vec![dir.join("model_v1alpha1_modelservice.yaml")];
    let mut derived: Vec<PathBuf> = std::fs::read_dir(dir.join("derived"))
        .expect("samples/derived is readable")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    derived.sort();
    files.extend(derived);
    Some(files)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Every value of `original` is in `ours` at the same place: nothing was dropped or changed.
/// `ours` may hold more (the CRD defaults our types fill in).
fn assert_contained(original: &Value, ours: &Value, path: &str) {
    match (original, ours) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let inner = format!("{path}.{key}");
                let other = b.get(key).unwrap_or_else(|| panic!("{inner} was dropped"));
                assert_contained(value, other, &inner);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path} changed length");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert_contained(x, y, &format!("{path}[{i}]"));
            }
        }
        _ => assert_eq!(original, ours, "{path} changed"),
    }
}

/// The object without `apiVersion`, `kind` and `metadata`, which the API server checks itself
/// and kube-derive leaves out of the generated schema's properties.
fn body(object: &Value) -> Value {
    let mut body = object.clone();
    if let Value::Object(map) = &mut body {
        for key in ["apiVersion", "kind", "metadata"] {
            map.remove(key);
        }
    }
    body
}

#[test]
fn samples_parse_round_trip_and_validate() {
    let Some(files) = sample_files() else { return };
    assert_eq!(files.len(), 7, "the upstream sample and six derived ones");
    let crd = serde_json::to_value(ModelService::crd()).expect("CRD serialises");
    let schema = SchemaValidator::from_crd(&crd, None).expect("our schema compiles");
    for path in &files {
        let name = path.display();
        let text = read(path);
        let parsed: ModelService =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let original: Value = serde_saphyr::from_str(&text).expect("sample is YAML");

        let json = serde_json::to_value(&parsed).expect("serialises");
        assert_contained(&original, &json, "");
        let again: ModelService = serde_json::from_value(json.clone()).expect("parses again");
        assert_eq!(again, parsed, "{name}: JSON round trip");
        let yaml = serde_saphyr::to_string(&parsed).expect("serialises as YAML");
        let again: ModelService = serde_saphyr::from_str(&yaml).expect("YAML parses again");
        assert_eq!(again, parsed, "{name}: YAML round trip");

        assert_eq!(
            schema.errors(&body(&original)),
            Vec::<String>::new(),
            "{name}: schema"
        );
        assert_eq!(
            schema.errors(&body(&json)),
            Vec::<String>::new(),
            "{name}: schema"
        );
        if let Err(errors) = parsed.validate() {
            panic!("{name}: {errors}");
        }
        assert_eq!(parsed.warnings(), Vec::new(), "{name}: warnings");
    }
}

#[test]
fn role_annotations_are_kept() {
    let Some(files) = sample_files() else { return };
    let path = files
        .iter()
        .find(|p| p.to_string_lossy().contains("05-"))
        .expect("sample 05 exists");
    let parsed: ModelService = serde_saphyr::from_str(&read(path)).expect("parses");
    assert_eq!(
        parsed
            .spec
            .decode
            .annotations
            .get("sidecar.istio.io/inject")
            .map(String::as_str),
        Some("false")
    );
}

#[test]
fn defaults_are_upstream_crd_defaults() {
    let ms: ModelService = serde_saphyr::from_str(
        "apiVersion: model.otterscale.io/v1alpha1\nkind: ModelService\nmetadata: {name: m}\nspec:\n  model: {name: m, image: r/m:1}\n  engine: {}\n  accelerator: {type: cpu}\n  decode: {parallelism: {}}\n  routingProxy: {}\n  inferencePool: {endpointPicker: {}}\n  monitoring: {podMonitor: {}}\n",
    )
    .expect("minimal spec parses");
    let spec = &ms.spec;
    assert_eq!(spec.model.mount_path, "/models");
    assert_eq!(spec.engine.port, 8000);
    assert_eq!(spec.decode.replicas, 1);
    assert_eq!(spec.decode.parallelism, Some(ParallelismSpec::default()));
    let proxy = spec.routing_proxy.as_ref().expect("proxy");
    assert_eq!(
        (
            proxy.connector.as_str(),
            proxy.target_port,
            proxy.secure_proxy
        ),
        ("nixlv2", 8200, false)
    );
    let picker = &spec.inference_pool.as_ref().expect("pool").endpoint_picker;
    assert_eq!(
        (picker.replicas, picker.port, picker.failure_mode),
        (1, 9002, FailureMode::FailOpen)
    );
    let pm = spec
        .monitoring
        .as_ref()
        .and_then(|m| m.pod_monitor.as_ref())
        .expect("pod monitor");
    assert_eq!(pm, &PodMonitorSpec::default());
    assert_eq!(
        (
            pm.enabled,
            pm.port_name.as_str(),
            pm.path.as_str(),
            pm.interval.as_str()
        ),
        (false, "http", "/metrics", "30s")
    );
    assert_eq!(AcceleratorType::Cpu.resource_name(), None);
    assert_eq!(spec.decode.effective_parallelism().accelerator_count(), 1);
}

#[test]
fn crd_names_and_columns() {
    let crds = crds();
    assert_eq!(crds.len(), 1);
    let crd = &crds[0];
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("modelservices.model.otterscale.io")
    );
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(
        crd.spec.names.categories,
        Some(vec!["otterscale".to_owned()])
    );
    assert_eq!(crd.spec.names.short_names, None);
    let columns: Vec<_> = crd.spec.versions[0]
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| (c.name.as_str(), c.priority))
        .collect();
    assert_eq!(
        columns,
        [
            ("Phase", None),
            ("Ready", None),
            ("Model", None),
            ("Decode", Some(1)),
            ("Prefill", Some(1)),
            ("Age", None)
        ]
    );
}

#[test]
fn status_round_trips_with_failed_phase() {
    let status: ModelServiceStatus = serde_json::from_value(serde_json::json!({
        "observedGeneration": 3,
        "phase": "Failed",
        "decodeReady": 0,
        "decodeReplicas": 2,
        "eppReady": 1,
        "eppReplicas": 1,
        "conditions": [{
            "type": condition_types::SPEC_VALID,
            "status": "False",
            "reason": condition_reasons::INVALID_SPEC,
            "message": "spec.routingProxy: is required when spec.prefill is set",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }],
    }))
    .expect("status parses");
    assert_eq!(status.phase, Some(ModelServicePhase::Failed));
    let again: ModelServiceStatus =
        serde_json::from_value(serde_json::to_value(&status).expect("serialises")).expect("parses");
    assert_eq!(again, status);
}
