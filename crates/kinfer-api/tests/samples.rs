//! Every upstream sample manifest is accepted unchanged.
//!
//! For each document under `../shared/reference/*/samples/` (including `derived/`):
//! - it validates against the CRD we generate (unknown fields count as errors: the API server
//!   would prune them, losing what the user wrote);
//! - it deserialises into our typed struct, and serialising that struct and parsing it again
//!   gives the same object (no field is dropped, renamed or re-shaped on the way through);
//! - our `validate()` accepts it.
//!
//! kaiwo's `aim.silogen.ai` manifests (the older AIM generation) are read through the legacy
//! types and migrated; the migrated object must validate against the current CRD.

#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};

use kinfer_api::validation::Validate;
use kinfer_crdcheck::{SchemaValidator, load_yaml_documents, shared_dir};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn sample_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("samples dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn validator_for(api_version: &str, kind: &str) -> Option<SchemaValidator> {
    let (group, version) = api_version.split_once('/')?;
    let crd = kinfer_api::crds::all()
        .into_iter()
        .find(|c| c.spec.group == group && c.spec.names.kind == kind)?;
    let crd = serde_json::to_value(crd).expect("CRD serialises");
    Some(SchemaValidator::from_crd(&crd, Some(version)).expect("our CRD schema compiles"))
}

/// Deserialises into `T`, checks the round trip and `validate()`, returns problems.
fn typed<T>(doc: &Value) -> Vec<String>
where
    T: DeserializeOwned + Serialize + Validate,
{
    let object: T = match serde_json::from_value(doc.clone()) {
        Ok(object) => object,
        Err(e) => return vec![format!("does not deserialise: {e}")],
    };
    let mut problems = Vec::new();
    let again = serde_json::to_value(&object).expect("serialises");
    let reparsed: T = serde_json::from_value(again.clone()).expect("re-parses");
    if serde_json::to_value(&reparsed).expect("serialises") != again {
        problems.push("serialise-then-parse is not stable".to_owned());
    }
    if let Err(errors) = object.validate() {
        problems.push(format!("validate() rejects it: {errors}"));
    }
    problems
}

/// Checks one document against the typed API; `None` when the kind is not ours.
fn typed_check(doc: &Value) -> Option<Vec<String>> {
    use kinfer_api::{aim, modelservice, zerfoo};
    let kind = doc["kind"].as_str()?;
    let group = doc["apiVersion"].as_str()?.split('/').next()?;
    Some(match (group, kind) {
        ("aim.eai.amd.com", "AIMModel") => typed::<aim::AIMModel>(doc),
        ("aim.eai.amd.com", "AIMClusterModel") => typed::<aim::AIMClusterModel>(doc),
        ("aim.eai.amd.com", "AIMServiceTemplate") => typed::<aim::AIMServiceTemplate>(doc),
        ("aim.eai.amd.com", "AIMClusterServiceTemplate") => {
            typed::<aim::AIMClusterServiceTemplate>(doc)
        }
        ("aim.eai.amd.com", "AIMService") => typed::<aim::AIMService>(doc),
        ("aim.eai.amd.com", "AIMRuntimeConfig") => typed::<aim::AIMRuntimeConfig>(doc),
        ("aim.eai.amd.com", "AIMClusterRuntimeConfig") => {
            typed::<aim::AIMClusterRuntimeConfig>(doc)
        }
        ("aim.eai.amd.com", "AIMTemplateCache") => typed::<aim::AIMTemplateCache>(doc),
        ("aim.eai.amd.com", "AIMArtifact") => typed::<aim::AIMArtifact>(doc),
        ("aim.eai.amd.com", "AIMClusterModelSource") => typed::<aim::AIMClusterModelSource>(doc),
        ("model.otterscale.io", "ModelService") => typed::<modelservice::ModelService>(doc),
        ("zerfoo.feza.ai", "ZerfooInferenceService") => {
            typed::<zerfoo::ZerfooInferenceService>(doc)
        }
        _ => return None,
    })
}

/// kaiwo manifests: legacy types, migration, then the current schema.
fn legacy_check(doc: &Value) -> Vec<String> {
    let legacy: kinfer_api::aim::legacy::LegacyAimService =
        match serde_json::from_value(doc.clone()) {
            Ok(legacy) => legacy,
            Err(e) => return vec![format!("legacy manifest does not deserialise: {e}")],
        };
    let (current, _warnings) = kinfer_api::aim::legacy::migrate(&legacy);
    let current = serde_json::to_value(&current).expect("serialises");
    let validator = validator_for("aim.eai.amd.com/v1alpha1", "AIMService").expect("served");
    let mut problems = validator.errors(&current);
    problems.extend(typed_check(&current).unwrap_or_default());
    problems
}

#[test]
fn every_upstream_sample_is_accepted_unchanged() {
    let Some(shared) = shared_dir() else { return };
    let mut checked = 0;
    let mut failures = Vec::new();
    for dir in ["reference/aim/samples", "reference/modelservice/samples"] {
        for file in sample_files(&shared.join(dir)) {
            for (index, doc) in load_yaml_documents(&file).iter().enumerate() {
                let at = format!("{}#{index}", file.display());
                let api_version = doc["apiVersion"].as_str().unwrap_or_default();
                let kind = doc["kind"].as_str().unwrap_or_default();
                let problems = if api_version.starts_with("aim.silogen.ai/") {
                    legacy_check(doc)
                } else {
                    let Some(validator) = validator_for(api_version, kind) else {
                        failures.push(format!("{at}: {api_version} {kind} is not served"));
                        continue;
                    };
                    let mut problems = validator.errors(doc);
                    problems.extend(typed_check(doc).unwrap_or_else(|| {
                        vec![format!("{kind} has no typed check in this test")]
                    }));
                    problems
                };
                checked += 1;
                failures.extend(problems.into_iter().map(|p| format!("{at} ({kind}): {p}")));
            }
        }
    }
    assert!(
        checked >= 19,
        "expected the 12 AIM and 7 ModelService samples, checked {checked}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
