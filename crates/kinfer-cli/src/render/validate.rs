//! Checks of input documents beyond what the API server's dry run answers.
//!
//! Contract (pure: no client):
//! - [`Strict`]: the document against its CRD's `openAPIV3Schema` with unknown fields as
//!   errors (as `kubectl --validate=strict`; the API server would prune them silently, so a
//!   misspelled field would vanish from the plan). Uses [`kinfer_crdcheck::SchemaValidator`].
//!   Paths are dotted (`spec.canary.weight`, `spec.env[0].name`); an unknown field is reported
//!   at its own path. The core kinds render takes as context (Namespace, Node, Secret,
//!   ConfigMap, ServiceAccount) are decoded into their `k8s-openapi` types instead: a decode
//!   error is reported at its path, and a field the type does not know at its own path
//!   ([`core_errors`]). Other documents pass.
//! - [`check`]: a document of one of kinfer's kinds is decoded into its Rust type (a decode
//!   error is reported at the field path serde names) and its `validate()` rules run. Which
//!   kinds have a typed check is [`typed_check`]; a unit test keeps it complete against
//!   [`kinfer_api::crds::all`].

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinfer_api::aim;
use kinfer_api::modelservice::ModelService;
use kinfer_api::validation::{FieldError, Validate};
use kinfer_api::zerfoo::ZerfooInferenceService;
use kinfer_crdcheck::SchemaValidator;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The group of an `apiVersion` (`""` for the core group).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The version of an `apiVersion`.
pub fn version_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or(api_version, |(_, v)| v)
}

/// Strict schema validation against a set of CRDs; see the module contract.
#[derive(Debug, Default)]
pub struct Strict {
    crds: BTreeMap<(String, String), Value>,
    compiled: BTreeMap<(String, String, String), Result<SchemaValidator, String>>,
}

impl Strict {
    /// A validator for `crds`.
    pub fn new(crds: &[CustomResourceDefinition]) -> Self {
        let crds = crds
            .iter()
            .filter_map(|crd| {
                let key = (crd.spec.group.clone(), crd.spec.names.kind.clone());
                serde_json::to_value(crd).ok().map(|v| (key, v))
            })
            .collect();
        Self {
            crds,
            compiled: BTreeMap::new(),
        }
    }

    /// Every schema violation of `value` (`apiVersion`/`kind`), unknown fields included.
    pub fn errors(&mut self, api_version: &str, kind: &str, value: &Value) -> Vec<FieldError> {
        let group = group_of(api_version).to_owned();
        let version = version_of(api_version).to_owned();
        let Some(crd) = self.crds.get(&(group.clone(), kind.to_owned())) else {
            return Vec::new();
        };
        let validator = self
            .compiled
            .entry((group, kind.to_owned(), version.clone()))
            .or_insert_with(|| {
                SchemaValidator::from_crd(crd, Some(&version)).map_err(|e| e.to_string())
            });
        match validator {
            Ok(v) => v
                .errors(value)
                .iter()
                .flat_map(|e| field_errors(e))
                .collect(),
            Err(e) => vec![FieldError::new("apiVersion", e.clone())],
        }
    }
}

fn core<K: DeserializeOwned + serde::Serialize>(value: &Value) -> Vec<FieldError> {
    let typed: K = match decode(value) {
        Ok(t) => t,
        Err(e) => return vec![e],
    };
    let Ok(back) = serde_json::to_value(&typed) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    dropped(value, &back, "", &mut errors);
    errors
}

/// Every key of `given` that `kept` (its typed round trip) lost, as an unknown-field error.
fn dropped(given: &Value, kept: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let at = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (given, kept) {
        (Value::Object(g), Value::Object(k)) => {
            for (key, value) in g {
                match k.get(key) {
                    Some(kv) => dropped(value, kv, &at(key), errors),
                    // A null or empty value the type leaves out is not a lost field.
                    None if value.is_null() || value == &Value::Object(serde_json::Map::new()) => {}
                    None if matches!(key.as_str(), "apiVersion" | "kind") => {}
                    None => errors.push(FieldError::new(
                        at(key),
                        "unknown field (not in the kind's schema; the API server would drop it)",
                    )),
                }
            }
        }
        (Value::Array(g), Value::Array(k)) => {
            for (i, (gv, kv)) in g.iter().zip(k).enumerate() {
                dropped(gv, kv, &format!("{path}[{i}]"), errors);
            }
        }
        _ => {}
    }
}

/// Decode errors and unknown fields of the core kinds render takes as context; see the
/// module contract.
pub fn core_errors(api_version: &str, kind: &str, value: &Value) -> Vec<FieldError> {
    use k8s_openapi::api::core::v1 as core;
    if !group_of(api_version).is_empty() {
        return Vec::new();
    }
    match kind {
        "Namespace" => core::<core::Namespace>(value),
        "Node" => core::<core::Node>(value),
        "Secret" => core::<core::Secret>(value),
        "ConfigMap" => core::<core::ConfigMap>(value),
        "ServiceAccount" => core::<core::ServiceAccount>(value),
        _ => Vec::new(),
    }
}

/// `/spec/env/0/name` → `spec.env[0].name`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').filter(|s| !s.is_empty()) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(&segment);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    out
}

/// One `<json pointer>: <message>` of [`SchemaValidator::errors`] as field errors; an
/// "additional properties" error becomes one `unknown field` error per field, at its path.
fn field_errors(error: &str) -> Vec<FieldError> {
    let (pointer, message) = error.split_once(": ").unwrap_or(("", error));
    let path = dotted(pointer);
    let Some(names) = message
        .strip_prefix("Additional properties are not allowed (")
        .and_then(|rest| rest.rsplit_once(')'))
        .map(|(names, _)| names)
    else {
        return vec![FieldError::new(path, message)];
    };
    let unknown: Vec<&str> = names.split('\'').skip(1).step_by(2).collect();
    if unknown.is_empty() {
        return vec![FieldError::new(path, message)];
    }
    unknown
        .into_iter()
        .map(|name| {
            let at = if path.is_empty() {
                name.to_owned()
            } else {
                format!("{path}.{name}")
            };
            FieldError::new(
                at,
                "unknown field (not in the kind's schema; the API server would drop it)",
            )
        })
        .collect()
}

/// Decodes `value` into `K`; an error names the field serde failed at.
fn decode<K: DeserializeOwned>(value: &Value) -> Result<K, FieldError> {
    serde_path_to_error::deserialize(value.clone()).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        FieldError::new(path, e.into_inner().to_string())
    })
}

fn typed<K: DeserializeOwned + Validate>(value: &Value) -> Vec<FieldError> {
    match decode::<K>(value) {
        Ok(object) => object.validate().err().map(|e| e.0).unwrap_or_default(),
        Err(e) => vec![e],
    }
}

/// The typed check of `group`/`kind`, when it is one of kinfer's kinds.
pub fn typed_check(group: &str, kind: &str) -> Option<fn(&Value) -> Vec<FieldError>> {
    let check: fn(&Value) -> Vec<FieldError> = match (group, kind) {
        ("zerfoo.feza.ai", "ZerfooInferenceService") => typed::<ZerfooInferenceService>,
        ("model.otterscale.io", "ModelService") => typed::<ModelService>,
        ("aim.eai.amd.com", "AIMService") => typed::<aim::AIMService>,
        ("aim.eai.amd.com", "AIMModel") => typed::<aim::AIMModel>,
        ("aim.eai.amd.com", "AIMClusterModel") => typed::<aim::AIMClusterModel>,
        ("aim.eai.amd.com", "AIMServiceTemplate") => typed::<aim::AIMServiceTemplate>,
        ("aim.eai.amd.com", "AIMClusterServiceTemplate") => typed::<aim::AIMClusterServiceTemplate>,
        ("aim.eai.amd.com", "AIMRuntimeConfig") => typed::<aim::AIMRuntimeConfig>,
        ("aim.eai.amd.com", "AIMClusterRuntimeConfig") => typed::<aim::AIMClusterRuntimeConfig>,
        ("aim.eai.amd.com", "AIMTemplateCache") => typed::<aim::AIMTemplateCache>,
        ("aim.eai.amd.com", "AIMArtifact") => typed::<aim::AIMArtifact>,
        ("aim.eai.amd.com", "AIMClusterModelSource") => typed::<aim::AIMClusterModelSource>,
        _ => return None,
    };
    Some(check)
}

/// Violations of the kind's type and rules; empty when valid or not one of kinfer's kinds.
pub fn check(api_version: &str, kind: &str, value: &Value) -> Vec<FieldError> {
    typed_check(group_of(api_version), kind).map_or_else(Vec::new, |check| check(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zerfoo_rules_report_field_paths() {
        let bad = json!({
            "apiVersion": "zerfoo.feza.ai/v1", "kind": "ZerfooInferenceService",
            "metadata": { "name": "x", "namespace": "default" },
            "spec": { "modelRef": "m", "replicas": 1,
                      "canary": { "modelRef": "c", "weight": 150 } }
        });
        let errors = check("zerfoo.feza.ai/v1", "ZerfooInferenceService", &bad);
        assert!(
            errors.iter().any(|e| e.path.starts_with("spec.canary")),
            "{errors:?}"
        );
    }

    #[test]
    fn decode_errors_name_the_field() {
        let bad = json!({
            "apiVersion": "zerfoo.feza.ai/v1", "kind": "ZerfooInferenceService",
            "metadata": { "name": "x", "namespace": "default" },
            "spec": { "modelRef": "m", "replicas": "two" }
        });
        let errors = check("zerfoo.feza.ai/v1", "ZerfooInferenceService", &bad);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].path, "spec.replicas");
    }

    #[test]
    fn every_kinfer_kind_has_a_typed_check() {
        for crd in kinfer_api::crds::all() {
            assert!(
                typed_check(&crd.spec.group, &crd.spec.names.kind).is_some(),
                "{}/{} has no typed check",
                crd.spec.group,
                crd.spec.names.kind
            );
        }
    }

    #[test]
    fn other_kinds_pass() {
        assert!(check("v1", "Secret", &json!({})).is_empty());
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("apps/v1"), "apps");
    }

    #[test]
    fn strict_reports_unknown_fields_at_their_path() {
        let mut strict = Strict::new(&kinfer_api::crds::all());
        let doc = json!({
            "apiVersion": "zerfoo.feza.ai/v1", "kind": "ZerfooInferenceService",
            "metadata": { "name": "x", "namespace": "default" },
            "spec": { "modelRef": "m", "replica": 2,
                      "resources": { "cpu": "1", "gpuMemroy": "1Gi" } }
        });
        let errors = strict.errors("zerfoo.feza.ai/v1", "ZerfooInferenceService", &doc);
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert!(paths.contains(&"spec.replica"), "{errors:?}");
        assert!(paths.contains(&"spec.resources.gpuMemroy"), "{errors:?}");
        assert!(errors.iter().all(|e| e.message.contains("unknown field")));
        let good = json!({
            "apiVersion": "zerfoo.feza.ai/v1", "kind": "ZerfooInferenceService",
            "metadata": { "name": "x", "namespace": "default", "labels": { "a": "b" } },
            "spec": { "modelRef": "m", "replicas": 2 }
        });
        let errors = strict.errors("zerfoo.feza.ai/v1", "ZerfooInferenceService", &good);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(strict.errors("v1", "Secret", &json!({ "x": 1 })).is_empty());
    }

    #[test]
    fn core_kinds_report_unknown_fields_and_decode_errors() {
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": { "name": "n", "lables": { "a": "b" }, "annotations": {} },
            "status": { "capacity": { "amd.com/gpu": "8" },
                        "conditions": [{ "type": "Ready", "status": "True", "reason": "x", "extra": 1 }] }
        });
        let errors = core_errors("v1", "Node", &node);
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            ["metadata.lables", "status.conditions[0].extra"],
            "{errors:?}"
        );
        let secret = json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "s" },
                             "stringData": { "a": "b" }, "type": "Opaque" });
        assert!(core_errors("v1", "Secret", &secret).is_empty());
        let bad = json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": 3 } });
        let errors = core_errors("v1", "ConfigMap", &bad);
        assert_eq!(errors[0].path, "metadata.name", "{errors:?}");
        assert!(core_errors("apps/v1", "Node", &bad).is_empty());
    }

    #[test]
    fn pointers_become_dotted_paths() {
        assert_eq!(dotted("/spec/env/0/name"), "spec.env[0].name");
        assert_eq!(dotted(""), "");
        assert_eq!(dotted("/metadata/labels/a~1b"), "metadata.labels.a/b");
    }
}
