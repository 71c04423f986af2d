//! Environment variable merging for AIM specs (`kinfer_api::env::EnvVar`).
//!
//! Contract: later layers win by name; a name keeps the position where it first appeared;
//! `AIM_ENGINE_ARGS` values that are both JSON objects are deep-merged (NOTES row 15/19)
//! instead of replaced. [`k8s_env`] converts them for the pods of every serving controller
//! (InferenceServices, artifact Jobs, cache artifacts). Pure.

use kinfer_api::env::EnvVar;
use serde_json::Value;

/// The variable whose JSON values are deep-merged.
pub const ENGINE_ARGS: &str = "AIM_ENGINE_ARGS";

/// `kinfer_api` env vars as Kubernetes env vars (a var that does not convert is an input error).
pub fn k8s_env(
    env: &[kinfer_api::env::EnvVar],
) -> Result<Vec<k8s_openapi::api::core::v1::EnvVar>, kinfer_builders::Error> {
    env.iter()
        .cloned()
        .map(|e| {
            k8s_openapi::api::core::v1::EnvVar::try_from(e).map_err(|e| {
                kinfer_builders::Error::Input {
                    field: "env",
                    reason: e.to_string(),
                }
            })
        })
        .collect()
}

/// Merge `layers`, lowest precedence first.
pub fn merge(layers: &[&[EnvVar]]) -> Vec<EnvVar> {
    let mut out: Vec<EnvVar> = Vec::new();
    for var in layers.iter().flat_map(|l| l.iter()) {
        match out.iter_mut().find(|v| v.name == var.name) {
            Some(existing) => {
                let merged = (var.name == ENGINE_ARGS)
                    .then(|| merge_json(existing.value.as_deref(), var.value.as_deref()))
                    .flatten();
                *existing = var.clone();
                if let Some(m) = merged {
                    existing.value = Some(m);
                }
            }
            None => out.push(var.clone()),
        }
    }
    out
}

fn merge_json(low: Option<&str>, high: Option<&str>) -> Option<String> {
    let mut low: Value = serde_json::from_str(low?).ok()?;
    let high: Value = serde_json::from_str(high?).ok()?;
    if !low.is_object() || !high.is_object() {
        return None;
    }
    deep_merge(&mut low, high);
    Some(low.to_string())
}

fn deep_merge(low: &mut Value, high: Value) {
    match (low, high) {
        (Value::Object(l), Value::Object(h)) => {
            for (k, v) in h {
                match l.get_mut(&k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        l.insert(k, v);
                    }
                }
            }
        }
        (l, h) => *l = h,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_wins_and_engine_args_deep_merge() {
        let low = [
            EnvVar::new("A", "1"),
            EnvVar::new(ENGINE_ARGS, r#"{"x":1,"n":{"a":1}}"#),
        ];
        let high = [
            EnvVar::new(ENGINE_ARGS, r#"{"y":2,"n":{"b":2}}"#),
            EnvVar::new("A", "2"),
            EnvVar::new("B", "3"),
        ];
        let m = merge(&[&low, &high]);
        assert_eq!(m[0], EnvVar::new("A", "2"));
        let args: Value = serde_json::from_str(m[1].value.as_deref().unwrap()).unwrap();
        assert_eq!(args, serde_json::json!({"x":1,"y":2,"n":{"a":1,"b":2}}));
        assert_eq!(m[2], EnvVar::new("B", "3"));
    }
}
