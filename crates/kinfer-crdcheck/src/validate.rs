//! Validation of objects against a CRD version's `openAPIV3Schema`.
//!
//! The Kubernetes dialect is translated into plain JSON Schema first:
//! - `nullable: true` admits `null`;
//! - `x-kubernetes-int-or-string` admits an integer or a string;
//! - an object schema with `properties` but without `additionalProperties` or
//!   `x-kubernetes-preserve-unknown-fields` rejects unknown fields. The API server would prune
//!   them silently; in tests a pruned field means a manifest lost data, so it is an error here.
//!
//! CEL rules (`x-kubernetes-validations`) and formats are not evaluated; the test cluster's
//! schema enforcement covers those.

use serde_json::{Map, Value, json};

/// A schema that could not be compiled, or an object that failed validation.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("CRD has no version {0:?} with an openAPIV3Schema")]
    NoSchema(String),
    #[error("schema does not compile: {0}")]
    Compile(String),
}

/// A compiled validator for one CRD version.
#[derive(Debug)]
pub struct SchemaValidator {
    validator: jsonschema::Validator,
}

impl SchemaValidator {
    /// Compiles the `openAPIV3Schema` of `version` (the storage version when `None`) of a CRD
    /// given as JSON.
    pub fn from_crd(crd: &Value, version: Option<&str>) -> Result<Self, SchemaError> {
        let versions = crd["spec"]["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let chosen = versions.iter().find(|v| match version {
            Some(name) => v["name"] == name,
            None => v["storage"] == true,
        });
        let schema = chosen
            .map(|v| &v["schema"]["openAPIV3Schema"])
            .filter(|s| s.is_object())
            .ok_or_else(|| SchemaError::NoSchema(version.unwrap_or("<storage>").to_owned()))?;
        Self::from_openapi(schema)
    }

    /// Compiles a Kubernetes structural schema of a whole object.
    ///
    /// `apiVersion`, `kind` and `metadata` are always accepted at the root, as the API server
    /// does whether or not the schema lists them (kube-derive leaves them out).
    pub fn from_openapi(schema: &Value) -> Result<Self, SchemaError> {
        let mut translated = translate(schema);
        if let Some(Value::Object(props)) = translated.get_mut("properties") {
            for field in ["apiVersion", "kind"] {
                props
                    .entry(field)
                    .or_insert_with(|| json!({"type": "string"}));
            }
            props
                .entry("metadata")
                .or_insert_with(|| json!({"type": "object"}));
        }
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft7)
            .build(&translated)
            .map_err(|e| SchemaError::Compile(e.to_string()))?;
        Ok(Self { validator })
    }

    /// Every violation as `<json pointer>: <message>`; empty when the object is valid.
    pub fn errors(&self, object: &Value) -> Vec<String> {
        self.validator
            .iter_errors(object)
            .map(|e| format!("{}: {}", e.instance_path(), e))
            .collect()
    }
}

/// Translates the Kubernetes OpenAPI v3 dialect into JSON Schema draft 7.
fn translate(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let translated = match key.as_str() {
            "properties" | "patternProperties" | "definitions" => match value {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(k, v)| (k.clone(), translate(v)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" | "additionalProperties" | "not" => translate(value),
            "anyOf" | "allOf" | "oneOf" => match value {
                Value::Array(items) => Value::Array(items.iter().map(translate).collect()),
                other => other.clone(),
            },
            // Vendor extensions and annotations have no JSON Schema meaning.
            k if k.starts_with("x-kubernetes-") || k == "nullable" || k == "description" => {
                continue;
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), translated);
    }

    let preserve = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        out.remove("type");
        out.remove("anyOf");
        out.insert(
            "anyOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    if map.contains_key("properties") && !map.contains_key("additionalProperties") && !preserve {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        if let Some(Value::String(ty)) = out.get("type").cloned() {
            out.insert("type".into(), json!([ty, "null"]));
        } else if !out.contains_key("type") {
            let inner = Value::Object(std::mem::take(&mut out));
            out.insert("anyOf".into(), json!([{"type": "null"}, inner]));
        }
        if let Some(Value::Array(values)) = out.get_mut("enum") {
            values.push(Value::Null);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::SchemaValidator;

    fn validator() -> SchemaValidator {
        SchemaValidator::from_openapi(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "pattern": "^[a-z]+$"},
                        "size": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "mode": {"type": "string", "enum": ["A", "B"], "nullable": true},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "count": {"type": "integer", "minimum": 1}
                    }
                }
            }
        }))
        .expect("schema compiles")
    }

    #[test]
    fn accepts_valid_objects_including_int_or_string_and_null() {
        let v = validator();
        for size in [json!(3), json!("3Gi")] {
            let object =
                json!({"spec": {"name": "ok", "size": size, "mode": null, "free": {"x": 1}}});
            assert_eq!(v.errors(&object), Vec::<String>::new());
        }
    }

    #[test]
    fn rejects_unknown_fields_wrong_types_enums_patterns_and_bounds() {
        let v = validator();
        let cases = [
            json!({"spec": {"name": "ok", "unknown": 1}}),
            json!({"spec": {"name": 5}}),
            json!({"spec": {"name": "ok", "mode": "C"}}),
            json!({"spec": {"name": "NotLower"}}),
            json!({"spec": {"name": "ok", "count": 0}}),
            json!({"spec": {}}),
            json!({"spec": {"name": "ok", "size": true}}),
        ];
        for case in cases {
            assert!(!v.errors(&case).is_empty(), "accepted {case}");
        }
    }

    #[test]
    fn error_names_the_field() {
        let errors = validator().errors(&json!({"spec": {"name": "ok", "count": 0}}));
        assert!(errors[0].starts_with("/spec/count"), "{errors:?}");
    }
}
