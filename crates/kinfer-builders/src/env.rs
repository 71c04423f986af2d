//! Environment variables merged by name across layers.
//!
//! Contract: layers are applied lowest precedence first; a later variable replaces an earlier
//! one of the same name, keeping the earlier position, except `AIM_ENGINE_ARGS`, whose JSON
//! objects are deep-merged (later keys win, nested objects merged) so every layer's engine
//! arguments survive (aim-engine PR #403). A value that is not a JSON object replaces the
//! earlier one, as upstream does. The result order is first appearance, or sorted by name on
//! request (the AIM InferenceService sorts).

use k8s_openapi::api::core::v1::EnvVar;
use serde_json::{Map, Value};

/// The variable whose JSON value is deep-merged instead of replaced.
pub const AIM_ENGINE_ARGS: &str = "AIM_ENGINE_ARGS";

/// A literal variable.
pub fn var(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.into()),
        value_from: None,
    }
}

/// Merges `layers` (lowest precedence first) by name; see the module contract.
pub fn merge(layers: &[&[EnvVar]]) -> Vec<EnvVar> {
    let mut out: Vec<EnvVar> = Vec::new();
    for layer in layers {
        for var in *layer {
            match out.iter_mut().find(|existing| existing.name == var.name) {
                Some(existing) if var.name == AIM_ENGINE_ARGS => {
                    *existing = merge_engine_args(existing, var);
                }
                Some(existing) => *existing = var.clone(),
                None => out.push(var.clone()),
            }
        }
    }
    out
}

/// [`merge`], then sorted by name.
pub fn merge_sorted(layers: &[&[EnvVar]]) -> Vec<EnvVar> {
    let mut out = merge(layers);
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn merge_engine_args(base: &EnvVar, over: &EnvVar) -> EnvVar {
    let parse = |v: &EnvVar| match (&v.value, &v.value_from) {
        (Some(text), None) => serde_json::from_str::<Value>(text)
            .ok()
            .filter(Value::is_object),
        _ => None,
    };
    match (parse(base), parse(over)) {
        (Some(mut merged), Some(over_json)) => {
            deep_merge(&mut merged, over_json);
            var(&over.name, merged.to_string())
        }
        _ => over.clone(),
    }
}

/// Merges `over` into `base`: objects recursively, anything else replaced.
pub fn deep_merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => merge_maps(base, over),
        (base, over) => *base = over,
    }
}

fn merge_maps(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (k, v) in over {
        match base.get_mut(&k) {
            Some(existing) => deep_merge(existing, v),
            None => {
                base.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_layers_win_by_name_in_first_position() {
        let merged = merge(&[
            &[var("A", "1"), var("B", "1")],
            &[var("C", "2"), var("A", "2")],
        ]);
        let got: Vec<_> = merged
            .iter()
            .map(|v| (v.name.as_str(), v.value.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(got, [("A", "2"), ("B", "1"), ("C", "2")]);
    }

    #[test]
    fn engine_args_are_deep_merged() {
        let merged = merge(&[
            &[var(
                AIM_ENGINE_ARGS,
                r#"{"max-model-len": 4096, "kv": {"a": 1, "b": 1}}"#,
            )],
            &[var(AIM_ENGINE_ARGS, r#"{"kv": {"b": 2}, "tp": 2}"#)],
        ]);
        let value: Value =
            serde_json::from_str(merged[0].value.as_deref().unwrap_or("")).expect("json");
        assert_eq!(
            value,
            serde_json::json!({"max-model-len": 4096, "kv": {"a": 1, "b": 2}, "tp": 2})
        );
    }

    #[test]
    fn engine_args_that_are_not_objects_replace() {
        let merged = merge(&[
            &[var(AIM_ENGINE_ARGS, r#"{"a": 1}"#)],
            &[var(AIM_ENGINE_ARGS, "--flag")],
        ]);
        assert_eq!(merged[0].value.as_deref(), Some("--flag"));
    }
}
