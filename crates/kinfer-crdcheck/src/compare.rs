//! Field-by-field comparison of two CRDs (upstream and ours).
//!
//! Every schema node is flattened to a path (`.spec.model.name`, `[]` for list items, `{}` for
//! map values) with the facts that decide what the API server accepts: type, format, enum,
//! default, pattern, numeric and size bounds, int-or-string, preserve-unknown-fields, CEL rules
//! and required properties. Descriptions and `nullable` are ignored: they do not change which
//! manifests are accepted (a nullable field only admits an explicit `null` in addition).

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

/// The schema keywords compared at every path.
const COMPARED: &[&str] = &[
    "type",
    "format",
    "enum",
    "default",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
];

/// The compared facts of one schema node, keyed by keyword (`cel` and `required` included).
pub type FieldFacts = BTreeMap<String, Value>;

/// What to compare.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompareOptions {
    /// Compare `.status` paths too (by default only the root, `.spec` and CRD-level facts).
    pub include_status: bool,
}

/// One way in which our CRD differs from upstream's.
#[derive(Debug, Clone, PartialEq)]
pub enum Difference {
    /// A CRD-level fact (scope, names, printer columns, subresources, versions).
    Crd {
        what: String,
        upstream: Value,
        ours: Value,
    },
    /// A field upstream has and we lack: an upstream manifest using it would lose data.
    Missing { path: String },
    /// A field we have and upstream lacks.
    Extra { path: String },
    /// A field both have with a different fact.
    Changed {
        path: String,
        keyword: String,
        upstream: Value,
        ours: Value,
    },
}

impl Difference {
    /// The field path or CRD-level item this difference is about.
    pub fn path(&self) -> &str {
        match self {
            Self::Crd { what, .. } => what,
            Self::Missing { path } | Self::Extra { path } | Self::Changed { path, .. } => path,
        }
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Crd {
                what,
                upstream,
                ours,
            } => write!(f, "{what}: upstream {upstream}, ours {ours}"),
            Self::Missing { path } => write!(f, "{path}: missing in ours"),
            Self::Extra { path } => write!(f, "{path}: not in upstream"),
            Self::Changed {
                path,
                keyword,
                upstream,
                ours,
            } => write!(f, "{path}: {keyword} upstream {upstream}, ours {ours}"),
        }
    }
}

/// Flattens a structural schema into `path -> facts`.
pub fn field_paths(schema: &Value) -> BTreeMap<String, FieldFacts> {
    let mut out = BTreeMap::new();
    walk(schema, String::new(), &mut out);
    out
}

fn walk(schema: &Value, path: String, out: &mut BTreeMap<String, FieldFacts>) {
    let mut facts = FieldFacts::new();
    for &keyword in COMPARED {
        if let Some(value) = schema.get(keyword) {
            facts.insert(keyword.to_owned(), normalise(value));
        }
    }
    if let Some(Value::Array(rules)) = schema.get("x-kubernetes-validations") {
        let mut rules: Vec<Value> = rules
            .iter()
            .filter_map(|r| r.get("rule").cloned())
            .collect();
        rules.sort_by_key(ToString::to_string);
        facts.insert("cel".into(), Value::Array(rules));
    }
    if let Some(Value::Array(required)) = schema.get("required") {
        let mut required = required.clone();
        required.sort_by_key(ToString::to_string);
        facts.insert("required".into(), Value::Array(required));
    }
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, child) in props {
            walk(child, format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = schema.get("items") {
        walk(items, format!("{path}[]"), out);
    }
    if let Some(additional @ Value::Object(_)) = schema.get("additionalProperties") {
        walk(additional, format!("{path}{{}}"), out);
    }
    out.insert(path, facts);
}

/// `100.0` and `100` are the same bound.
fn normalise(value: &Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            #[allow(clippy::cast_possible_truncation)]
            Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), normalise(v))).collect())
        }
        _ => value.clone(),
    }
}

/// Compares two CRDs given as JSON and lists every difference.
pub fn compare_crds(upstream: &Value, ours: &Value, options: CompareOptions) -> Vec<Difference> {
    let mut diffs = Vec::new();
    let mut crd_fact = |what: &str, a: &Value, b: &Value| {
        if a != b {
            diffs.push(Difference::Crd {
                what: what.to_owned(),
                upstream: a.clone(),
                ours: b.clone(),
            });
        }
    };
    crd_fact(
        "spec.group",
        &upstream["spec"]["group"],
        &ours["spec"]["group"],
    );
    crd_fact(
        "spec.scope",
        &upstream["spec"]["scope"],
        &ours["spec"]["scope"],
    );
    for key in ["kind", "plural", "singular", "shortNames", "categories"] {
        crd_fact(
            &format!("spec.names.{key}"),
            &upstream["spec"]["names"][key],
            &ours["spec"]["names"][key],
        );
    }
    let empty = Vec::new();
    let our_versions = ours["spec"]["versions"].as_array().unwrap_or(&empty);
    for version in upstream["spec"]["versions"].as_array().unwrap_or(&empty) {
        let name = &version["name"];
        let Some(our_version) = our_versions.iter().find(|v| &v["name"] == name) else {
            diffs.push(Difference::Crd {
                what: format!("version {name}"),
                upstream: name.clone(),
                ours: Value::Null,
            });
            continue;
        };
        let columns = |v: &Value| -> Value {
            v["additionalPrinterColumns"]
                .as_array()
                .map(|cols| {
                    cols.iter()
                        .map(|c| {
                            serde_json::json!({
                                "name": c["name"], "type": c["type"], "jsonPath": c["jsonPath"],
                                "priority": c.get("priority").cloned().unwrap_or(Value::from(0)),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut crd_fact = |what: &str, a: Value, b: Value| {
            if a != b {
                diffs.push(Difference::Crd {
                    what: what.to_owned(),
                    upstream: a,
                    ours: b,
                });
            }
        };
        crd_fact(
            &format!("version {name} printer columns"),
            columns(version),
            columns(our_version),
        );
        crd_fact(
            &format!("version {name} subresources"),
            version["subresources"].clone(),
            our_version["subresources"].clone(),
        );
        let theirs = field_paths(&version["schema"]["openAPIV3Schema"]);
        let mine = field_paths(&our_version["schema"]["openAPIV3Schema"]);
        let compared = |path: &str| {
            path.is_empty()
                || path == ".spec"
                || path.starts_with(".spec.")
                || path.starts_with(".spec[")
                || (options.include_status && (path == ".status" || path.starts_with(".status")))
        };
        for (path, facts) in &theirs {
            if !compared(path) {
                continue;
            }
            let Some(our_facts) = mine.get(path) else {
                diffs.push(Difference::Missing { path: path.clone() });
                continue;
            };
            let keywords: std::collections::BTreeSet<&String> =
                facts.keys().chain(our_facts.keys()).collect();
            for keyword in keywords {
                let a = facts.get(keyword).cloned().unwrap_or(Value::Null);
                let b = our_facts.get(keyword).cloned().unwrap_or(Value::Null);
                if a != b {
                    diffs.push(Difference::Changed {
                        path: path.clone(),
                        keyword: keyword.clone(),
                        upstream: a,
                        ours: b,
                    });
                }
            }
        }
        for path in mine.keys() {
            if compared(path) && !theirs.contains_key(path) {
                diffs.push(Difference::Extra { path: path.clone() });
            }
        }
    }
    diffs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{CompareOptions, Difference, compare_crds};

    fn crd(spec_props: &serde_json::Value) -> serde_json::Value {
        json!({"spec": {"group": "g", "scope": "Namespaced", "names": {"kind": "K", "plural": "ks"},
            "versions": [{"name": "v1", "subresources": {"status": {}}, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": spec_props}}}}}]}})
    }

    #[test]
    fn identical_crds_have_no_differences() {
        let a = crd(&json!({"x": {"type": "integer", "maximum": 100}}));
        let b = crd(
            &json!({"x": {"type": "integer", "maximum": 100.0, "description": "d", "nullable": true}}),
        );
        assert_eq!(compare_crds(&a, &b, CompareOptions::default()), vec![]);
    }

    #[test]
    fn reports_missing_extra_and_changed_fields() {
        let a = crd(&json!({"x": {"type": "integer"}, "y": {"type": "string", "enum": ["A"]}}));
        let b = crd(&json!({"y": {"type": "string", "enum": ["A", "B"]}, "z": {"type": "string"}}));
        let diffs = compare_crds(&a, &b, CompareOptions::default());
        assert!(diffs.contains(&Difference::Missing {
            path: ".spec.x".into()
        }));
        assert!(diffs.contains(&Difference::Extra {
            path: ".spec.z".into()
        }));
        assert!(diffs.iter().any(|d| matches!(d, Difference::Changed { path, keyword, .. } if path == ".spec.y" && keyword == "enum")));
    }
}
