//! What the real server's built-in admission and registry strategies do on write for the
//! kinds that need it: CRDs become Established with accepted names, namespaces carry their
//! phase and the `kubernetes` finalizer, pods start Pending.

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resources::ResourceDef;
use crate::state::now;

/// The JSON type of a value, as Go's decoder names it in its errors.
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// What the real server's decoder refuses with 400 before any strategy runs: an object that is
/// not a JSON object, or metadata, labels, annotations, finalizers, owner references (and, for
/// built-in kinds, `spec` and `status`) of the wrong JSON type.
pub fn check_decodable(def: &ResourceDef, new: &Value) -> Result<(), ApiError> {
    let bad = |field: &str, v: &Value, want: &str| {
        Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: json: cannot unmarshal {got} into Go struct field {field} of type {want}",
            kind = def.kind,
            version = def.version,
            got = json_type(v),
        )))
    };
    if !new.is_object() {
        return bad(&def.kind, new, "object");
    }
    let meta = &new["metadata"];
    if !(meta.is_object() || meta.is_null()) {
        return bad("metadata", meta, "v1.ObjectMeta");
    }
    for k in ["labels", "annotations"] {
        match &meta[k] {
            Value::Null => {}
            Value::Object(m) => {
                if let Some(v) = m.values().find(|v| !v.is_string()) {
                    return bad(&format!("metadata.{k}"), v, "string");
                }
            }
            other => return bad(&format!("metadata.{k}"), other, "map[string]string"),
        }
    }
    match &meta["finalizers"] {
        Value::Null => {}
        Value::Array(a) => {
            if let Some(v) = a.iter().find(|v| !v.is_string()) {
                return bad("metadata.finalizers", v, "string");
            }
        }
        other => return bad("metadata.finalizers", other, "[]string"),
    }
    match &meta["ownerReferences"] {
        Value::Null => {}
        Value::Array(a) => {
            if let Some(v) = a.iter().find(|v| !v.is_object()) {
                return bad("metadata.ownerReferences", v, "v1.OwnerReference");
            }
        }
        other => return bad("metadata.ownerReferences", other, "[]v1.OwnerReference"),
    }
    if def.group.is_empty() && def.plural == "secrets" {
        for k in ["data", "stringData"] {
            match &new[k] {
                Value::Null => {}
                Value::Object(m) => {
                    if let Some(v) = m.values().find(|v| !v.is_string()) {
                        return bad(&format!("Secret.{k}"), v, "string");
                    }
                }
                other => return bad(&format!("Secret.{k}"), other, "map[string]string"),
            }
        }
    }
    if !def.custom {
        for k in ["spec", "status"] {
            if !(new[k].is_object() || new[k].is_null()) {
                return bad(k, &new[k], "object");
            }
        }
    }
    Ok(())
}

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
        ("", "secrets") => merge_string_data(new),
        ("", "pods") if old.is_none() && new["status"]["phase"].is_null() => {
            new["status"]["phase"] = json!("Pending");
        }
        _ => {}
    }
    Ok(())
}

/// `stringData` is write-only: each entry overwrites the key of the same name in `data`,
/// base64-encoded, and `stringData` itself is neither stored nor returned.
fn merge_string_data(new: &mut Value) {
    let Some(string_data) = new.as_object_mut().and_then(|m| m.remove("stringData")) else {
        return;
    };
    let Value::Object(entries) = string_data else {
        return;
    };
    if entries.is_empty() {
        return;
    }
    if !new["data"].is_object() {
        new["data"] = json!({});
    }
    for (k, v) in entries {
        new["data"][k] = json!(base64(v.as_str().unwrap_or_default().as_bytes()));
    }
}

/// Standard base64 with padding, as `[]byte` fields are encoded in JSON.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_encoding() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), enc);
        }
        assert_eq!(base64(&[0xfb, 0xff, 0xfe]), "+//+");
    }
}
