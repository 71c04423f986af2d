//! The kinds' own rules ([`kinfer_api::validation::Validate`]) on input documents.
//!
//! Contract: [`check`] deserialises a document of one of kinfer's kinds into its Rust type and
//! runs `validate()`, returning every violation with its field path. Documents of other kinds
//! pass untouched (the API server's schema check, run before this as a dry-run create, covers
//! them). A document that does not deserialise is reported at the path serde names, or the
//! document root. Pure: no client.

use kinfer_api::aim;
use kinfer_api::modelservice::ModelService;
use kinfer_api::validation::{FieldError, Validate};
use kinfer_api::zerfoo::ZerfooInferenceService;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn typed<K: DeserializeOwned + Validate>(value: &Value) -> Vec<FieldError> {
    match serde_json::from_value::<K>(value.clone()) {
        Ok(object) => object.validate().err().map(|e| e.0).unwrap_or_default(),
        Err(e) => vec![FieldError::new(
            "",
            format!("does not match the kind's type: {e}"),
        )],
    }
}

/// The group of an `apiVersion` (`""` for the core group).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Violations of the kind's rules; empty when valid or not one of kinfer's kinds.
pub fn check(api_version: &str, kind: &str, value: &Value) -> Vec<FieldError> {
    match (group_of(api_version), kind) {
        ("zerfoo.feza.ai", "ZerfooInferenceService") => typed::<ZerfooInferenceService>(value),
        ("model.otterscale.io", "ModelService") => typed::<ModelService>(value),
        ("aim.eai.amd.com", "AIMService") => typed::<aim::AIMService>(value),
        ("aim.eai.amd.com", "AIMModel") => typed::<aim::AIMModel>(value),
        ("aim.eai.amd.com", "AIMClusterModel") => typed::<aim::AIMClusterModel>(value),
        ("aim.eai.amd.com", "AIMServiceTemplate") => typed::<aim::AIMServiceTemplate>(value),
        ("aim.eai.amd.com", "AIMClusterServiceTemplate") => {
            typed::<aim::AIMClusterServiceTemplate>(value)
        }
        ("aim.eai.amd.com", "AIMRuntimeConfig") => typed::<aim::AIMRuntimeConfig>(value),
        ("aim.eai.amd.com", "AIMClusterRuntimeConfig") => {
            typed::<aim::AIMClusterRuntimeConfig>(value)
        }
        ("aim.eai.amd.com", "AIMTemplateCache") => typed::<aim::AIMTemplateCache>(value),
        ("aim.eai.amd.com", "AIMArtifact") => typed::<aim::AIMArtifact>(value),
        ("aim.eai.amd.com", "AIMClusterModelSource") => typed::<aim::AIMClusterModelSource>(value),
        _ => Vec::new(),
    }
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
    fn other_kinds_pass() {
        assert!(check("v1", "Secret", &json!({})).is_empty());
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("apps/v1"), "apps");
    }
}
