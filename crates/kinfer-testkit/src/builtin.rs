//! What the real server's built-in admission and registry strategies do on write for the
//! kinds that need it: CRDs become Established with accepted names, namespaces carry their
//! phase and the `kubernetes` finalizer, pods start Pending.

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resources::ResourceDef;
use crate::state::now;

/// Adjust `new` as the real registry strategy would.
pub fn admit(def: &ResourceDef, new: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
    match (def.group.as_str(), def.plural.as_str()) {
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            let spec = &new["spec"];
            let expected = format!(
                "{}.{}",
                spec["names"]["plural"].as_str().unwrap_or_default(),
                spec["group"].as_str().unwrap_or_default()
            );
            if new["metadata"]["name"].as_str() != Some(expected.as_str()) {
                return Err(ApiError::invalid(
                    &def.group,
                    &def.kind,
                    new["metadata"]["name"].as_str().unwrap_or_default(),
                    &[crate::error::Cause {
                        reason: "FieldValueInvalid",
                        message: format!(
                            "Invalid value: must be spec.names.plural+\".\"+spec.group ({expected})"
                        ),
                        field: "metadata.name".to_owned(),
                    }],
                ));
            }
            let storage: Vec<Value> = spec["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|v| v["storage"].as_bool() == Some(true))
                .map(|v| v["name"].clone())
                .collect();
            let t = old
                .and_then(|o| {
                    o["status"]["conditions"][0]["lastTransitionTime"]
                        .as_str()
                        .map(str::to_owned)
                })
                .unwrap_or_else(now);
            let mut names = spec["names"].clone();
            if names["singular"].is_null() {
                names["singular"] =
                    json!(names["kind"].as_str().unwrap_or_default().to_lowercase());
            }
            if names["listKind"].is_null() {
                names["listKind"] = json!(format!(
                    "{}List",
                    names["kind"].as_str().unwrap_or_default()
                ));
            }
            new["status"] = json!({
                "acceptedNames": names,
                "conditions": [
                    { "type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                      "message": "no conflicts found", "lastTransitionTime": t },
                    { "type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                      "message": "the initial names have been accepted", "lastTransitionTime": t },
                ],
                "storedVersions": storage,
            });
        }
        ("", "namespaces") => {
            new["spec"]["finalizers"] = json!(["kubernetes"]);
            let phase = if new["metadata"].get("deletionTimestamp").is_some() {
                "Terminating"
            } else {
                "Active"
            };
            new["status"]["phase"] = json!(phase);
            if new["metadata"]["labels"]["kubernetes.io/metadata.name"].is_null() {
                let n = new["metadata"]["name"].clone();
                new["metadata"]["labels"]["kubernetes.io/metadata.name"] = n;
            }
        }
        ("", "pods") if old.is_none() && new["status"]["phase"].is_null() => {
            new["status"]["phase"] = json!("Pending");
        }
        _ => {}
    }
    Ok(())
}
