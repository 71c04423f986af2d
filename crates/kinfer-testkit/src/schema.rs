//! CRD schema enforcement on write, in the real server's order: prune unknown fields, apply
//! defaults, validate. Failures become one 422 `Invalid` with a cause per field.
//!
//! Supported: `type` (and `nullable`), `x-kubernetes-int-or-string`, `required`, `enum`,
//! `format` (`date-time`, `int32`; like the real server, not `quantity`, which it does not
//! know), `pattern`, `minimum`/`maximum` (and the exclusive
//! forms), `minLength`/`maxLength`, `minItems`/`maxItems`, `minProperties`/`maxProperties`,
//! `items`, `additionalProperties`, `allOf`/`anyOf`/`oneOf` (value checks only), `default`,
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-embedded-resource`, and CEL rules of the
//! exact form `self == oldSelf` in `x-kubernetes-validations`. Other CEL rules are not evaluated.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use regex::Regex;
use serde_json::{Map, Value};

use crate::error::{ApiError, Cause};

/// Prune, default and validate `new` (the whole object) against `schema`.
pub fn admit(
    schema: &Value,
    new: &mut Value,
    old: Option<&Value>,
    group: &str,
    kind: &str,
    name: &str,
) -> Result<(), ApiError> {
    let Some(obj) = new.as_object_mut() else {
        return Ok(());
    };
    let props = schema.get("properties");
    let mut causes = Found::default();
    let keys: Vec<String> = obj.keys().cloned().collect();
    for k in keys {
        if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let Some(sub) = props.and_then(|p| p.get(&k)) else {
            if !preserves(schema) {
                obj.remove(&k);
            }
            continue;
        };
        if obj.get(&k).is_some_and(|v| null_pruned(v, sub)) {
            obj.remove(&k);
            continue;
        }
        if let Some(v) = obj.get_mut(&k) {
            prune_and_default(v, sub);
            let old_v = old.and_then(|o| o.get(&k));
            validate(v, sub, old_v, &k, &mut causes);
        }
    }
    if let Some(p) = props.and_then(Value::as_object) {
        for (k, sub) in p {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") || obj.contains_key(k) {
                continue;
            }
            if let Some(d) = sub.get("default") {
                let mut d = d.clone();
                prune_and_default(&mut d, sub);
                obj.insert(k.clone(), d);
            }
        }
    }
    for r in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !obj.contains_key(r) {
            causes.push(cause("FieldValueRequired", "Required value", r.to_owned()));
        }
    }
    let causes = causes.into_causes(schema);
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(group, kind, name, &causes))
    }
}

/// What validation found: schema violations, and failed CEL rules, which the real server
/// reports only for an object the schema accepts.
#[derive(Default)]
struct Found {
    schema: Vec<Cause>,
    cel: Vec<Cause>,
}

impl Found {
    /// A schema violation.
    fn push(&mut self, c: Cause) {
        self.schema.push(c);
    }

    /// The causes the real server answers (apiextensions' `hasBlockingErr`): when the schema
    /// found a blocking error (a wrong type, a missing required field, a value outside an
    /// enum, too long, too many), the rules are not evaluated and, when the schema has any, a
    /// last cause without a field says so; otherwise the schema's violations and the failed
    /// rules.
    fn into_causes(mut self, schema: &Value) -> Vec<Cause> {
        let blocking = self.schema.iter().any(|c| {
            matches!(
                c.reason,
                "FieldValueTypeInvalid"
                    | "FieldValueRequired"
                    | "FieldValueNotSupported"
                    | "FieldValueTooLong"
                    | "FieldValueTooMany"
            )
        });
        if !blocking {
            self.schema.append(&mut self.cel);
            return self.schema;
        }
        if has_rules(schema) {
            self.schema.push(cause(
                "FieldValueInvalid",
                "Invalid value: null: some validation rules were not checked because the object \
                 was invalid; correct the existing errors to complete validation",
                "<nil>".to_owned(),
            ));
        }
        self.schema
    }
}

/// Whether a schema holds an `x-kubernetes-validations` rule anywhere.
fn has_rules(s: &Value) -> bool {
    match s {
        Value::Object(m) => m.iter().any(|(k, v)| {
            (k == "x-kubernetes-validations" && v.as_array().is_some_and(|a| !a.is_empty()))
                || has_rules(v)
        }),
        Value::Array(a) => a.iter().any(has_rules),
        _ => false,
    }
}

fn preserves(s: &Value) -> bool {
    s["x-kubernetes-preserve-unknown-fields"].as_bool() == Some(true)
}

fn cause(reason: &'static str, message: impl Into<String>, field: String) -> Cause {
    Cause {
        reason,
        message: message.into(),
        field,
    }
}

/// A `null` for a field that is not nullable is dropped before defaulting (as the real server
/// does since 1.20), so the default, if any, applies.
fn null_pruned(v: &Value, s: &Value) -> bool {
    v.is_null() && s["nullable"].as_bool() != Some(true)
}

fn prune_and_default(v: &mut Value, s: &Value) {
    match v {
        Value::Object(m) => {
            let embedded = s["x-kubernetes-embedded-resource"].as_bool() == Some(true);
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                if !preserves(s) && !s["additionalProperties"].is_object() {
                    m.retain(|k, _| {
                        props.contains_key(k)
                            || (embedded
                                && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
                    });
                }
                for (k, sub) in props {
                    if m.get(k).is_some_and(|v| null_pruned(v, sub)) {
                        m.remove(k);
                    }
                    match m.get_mut(k) {
                        Some(child) => prune_and_default(child, sub),
                        None => {
                            if let Some(d) = sub.get("default") {
                                let mut d = d.clone();
                                prune_and_default(&mut d, sub);
                                m.insert(k.clone(), d);
                            }
                        }
                    }
                }
            } else if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                m.retain(|_, v| !null_pruned(v, ap));
                for child in m.values_mut() {
                    prune_and_default(child, ap);
                }
            } else if !preserves(s) && s["type"] == "object" && !embedded {
                m.clear();
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.get("items") {
                for it in items {
                    prune_and_default(it, is);
                }
            }
        }
        _ => {}
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Object(_) => "\"object\"".to_owned(),
        Value::Array(_) => "\"array\"".to_owned(),
        other => other.to_string(),
    }
}

fn type_ok(v: &Value, s: &Value) -> bool {
    if v.is_null() {
        return s["nullable"].as_bool() == Some(true);
    }
    if s["x-kubernetes-int-or-string"].as_bool() == Some(true) {
        return matches!(type_name(v), "integer" | "string");
    }
    match s["type"].as_str() {
        None => true,
        Some("number") => v.is_number(),
        Some(t) => t == type_name(v),
    }
}

/// Whether `x` fails the schema `pattern` (compiled once per pattern; an invalid pattern
/// matches everything).
fn pattern_fails(pattern: &str, x: &str) -> bool {
    static CACHE: LazyLock<Mutex<HashMap<String, Option<Regex>>>> = LazyLock::new(Mutex::default);
    let mut cache = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    cache
        .entry(pattern.to_owned())
        .or_insert_with(|| Regex::new(pattern).ok())
        .as_ref()
        .is_some_and(|r| !r.is_match(x))
}

fn validate(v: &Value, s: &Value, old: Option<&Value>, path: &str, out: &mut Found) {
    if !type_ok(v, s) {
        let want = if s["x-kubernetes-int-or-string"].as_bool() == Some(true) {
            "integer or string"
        } else {
            s["type"].as_str().unwrap_or("?")
        };
        out.push(cause(
            "FieldValueTypeInvalid",
            format!(
                "Invalid value: {}: {path} in body must be of type {want}: {}",
                short(v),
                short(&Value::String(type_name(v).to_owned()))
            ),
            path.to_owned(),
        ));
        return;
    }
    if let Some(e) = s["enum"].as_array()
        && !e.contains(v)
    {
        let opts: Vec<String> = e.iter().map(short).collect();
        out.push(cause(
            "FieldValueNotSupported",
            format!(
                "Unsupported value: {}: supported values: {}",
                short(v),
                opts.join(", ")
            ),
            path.to_owned(),
        ));
    }
    let invalid = |out: &mut Found, msg: String| {
        out.push(cause(
            "FieldValueInvalid",
            format!("Invalid value: {}: {path} in body {msg}", short(v)),
            path.to_owned(),
        ));
    };
    if let Some(x) = v.as_str() {
        if let Some(p) = s["pattern"].as_str()
            && pattern_fails(p, x)
        {
            invalid(out, format!("should match '{p}'"));
        }
        let len = x.chars().count() as u64;
        if let Some(m) = s["minLength"].as_u64().filter(|m| len < *m) {
            invalid(out, format!("should be at least {m} chars long"));
        }
        if let Some(m) = s["maxLength"].as_u64().filter(|m| len > *m) {
            out.push(cause(
                "FieldValueTooLong",
                format!("Too long: may not be more than {m} bytes"),
                path.to_owned(),
            ));
        }
        match s["format"].as_str() {
            Some("date-time") if x.parse::<k8s_openapi::jiff::Timestamp>().is_err() => {
                invalid(out, "must be of type date-time".to_owned());
            }
            _ => {}
        }
    }
    if let Some(n) = v.as_f64() {
        let excl_min = s["exclusiveMinimum"].as_bool() == Some(true);
        let excl_max = s["exclusiveMaximum"].as_bool() == Some(true);
        if let Some(m) = s["minimum"].as_f64()
            && (n < m || (excl_min && n <= m))
        {
            invalid(
                out,
                format!(
                    "should be greater than {}{}",
                    if excl_min { "" } else { "or equal to " },
                    s["minimum"]
                ),
            );
        }
        if let Some(m) = s["maximum"].as_f64()
            && (n > m || (excl_max && n >= m))
        {
            invalid(
                out,
                format!(
                    "should be less than {}{}",
                    if excl_max { "" } else { "or equal to " },
                    s["maximum"]
                ),
            );
        }
        if s["format"] == "int32" && (n < f64::from(i32::MIN) || n > f64::from(i32::MAX)) {
            invalid(out, "must be of format int32".to_owned());
        }
    }
    if let Some(items) = v.as_array() {
        let len = items.len() as u64;
        if let Some(m) = s["minItems"].as_u64().filter(|m| len < *m) {
            invalid(out, format!("should have at least {m} items"));
        }
        if let Some(m) = s["maxItems"].as_u64().filter(|m| len > *m) {
            out.push(cause(
                "FieldValueTooMany",
                format!("Too many: {len}: must have at most {m} items"),
                path.to_owned(),
            ));
        }
        if let Some(is) = s.get("items") {
            for (i, it) in items.iter().enumerate() {
                validate(it, is, None, &format!("{path}[{i}]"), out);
            }
        }
    }
    if let Some(m) = v.as_object() {
        validate_object(m, s, old, path, out);
    }
    for c in s["allOf"].as_array().into_iter().flatten() {
        validate(v, c, old, path, out);
    }
    for (key, exactly_one) in [("anyOf", false), ("oneOf", true)] {
        if let Some(alts) = s[key].as_array() {
            let passing = alts.iter().filter(|a| {
                let mut tmp = Found::default();
                validate(v, a, old, path, &mut tmp);
                tmp.schema.is_empty() && tmp.cel.is_empty()
            });
            let n = passing.count();
            if n == 0 || (exactly_one && n > 1) {
                invalid(
                    out,
                    format!(
                        "must validate {} schema in {key}",
                        if exactly_one {
                            "exactly one"
                        } else {
                            "at least one"
                        }
                    ),
                );
            }
        }
    }
    for rule in s["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let text: String = rule["rule"]
            .as_str()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        if (text == "self==oldSelf" || text == "oldSelf==self")
            && let Some(o) = old
            && o != v
        {
            let msg = rule["message"]
                .as_str()
                .unwrap_or("failed rule: self == oldSelf");
            out.cel.push(cause(
                "FieldValueInvalid",
                format!("Invalid value: {}: {msg}", short(v)),
                path.to_owned(),
            ));
        }
    }
}

fn validate_object(
    m: &Map<String, Value>,
    s: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Found,
) {
    let n = m.len() as u64;
    if let Some(x) = s["minProperties"].as_u64().filter(|x| n < *x) {
        out.push(cause(
            "FieldValueInvalid",
            format!("Invalid value: {n}: {path} in body should have at least {x} properties"),
            path.to_owned(),
        ));
    }
    if let Some(x) = s["maxProperties"].as_u64().filter(|x| n > *x) {
        out.push(cause(
            "FieldValueTooMany",
            format!("Too many: {n}: must have at most {x} items"),
            path.to_owned(),
        ));
    }
    for r in s["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !m.contains_key(r) {
            out.push(cause(
                "FieldValueRequired",
                "Required value",
                format!("{path}.{r}"),
            ));
        }
    }
    let props = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties").filter(|a| a.is_object());
    for (k, child) in m {
        let sub = props.and_then(|p| p.get(k)).or(additional);
        if let Some(sub) = sub {
            validate(
                child,
                sub,
                old.and_then(|o| o.get(k)),
                &format!("{path}.{k}"),
                out,
            );
        }
    }
}
