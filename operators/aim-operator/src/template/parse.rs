//! Parsing the discovery dry-run output (NOTES section c). Pure.
//!
//! Contract: the log is a JSON array, possibly surrounded by log noise. The whole log is tried
//! first; otherwise every `[` is a candidate start and the first that parses as a non-empty
//! array whose first element is an object with a `profile` is taken. Only element 0 is used.
//! Mapping: `profile.metadata` (`gpu_count` -> `gpuCount`; metric, precision and type must be
//! values the CRD accepts), `engine_args` (raw JSON), `env_vars` (values stringified),
//! `models[]` -> model sources (`modelId` and `sourceUri` must match the CRD patterns,
//! `size_gb` GiB as a binary quantity). Anything else is a [`ParseError`]: the template is
//! never Ready without a profile.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kinfer_api::aim::AIMModelSource;
use kinfer_api::aim::template::{
    AIMMetric, AIMPrecision, AIMProfile, AIMProfileMetadata, AIMProfileType,
};
use serde_json::Value;

/// Why a discovery log could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// No JSON array with a profile in the log.
    #[error("no discovery result (a JSON array of profiles) in the job's log")]
    NoResult,
    /// A field has a value the template status cannot hold.
    #[error("discovery result field {field}: {reason}")]
    Field {
        /// The field path in the output.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

/// What discovery found.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovered {
    /// The profile for `status.profile`.
    pub profile: AIMProfile,
    /// The model sources for `status.modelSources`.
    pub model_sources: Vec<AIMModelSource>,
}

fn is_result(v: &Value) -> bool {
    v.as_array()
        .and_then(|a| a.first())
        .is_some_and(|first| first.get("profile").is_some_and(Value::is_object))
}

/// The first result array in `log`.
pub fn find_result(log: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(log.trim())
        && is_result(&v)
    {
        return Some(v);
    }
    for (i, _) in log.match_indices('[') {
        let mut stream = serde_json::Deserializer::from_str(&log[i..]).into_iter::<Value>();
        if let Some(Ok(v)) = stream.next()
            && is_result(&v)
        {
            return Some(v);
        }
    }
    None
}

fn field(field: &str, reason: impl Into<String>) -> ParseError {
    ParseError::Field {
        field: field.to_owned(),
        reason: reason.into(),
    }
}

fn enum_value<T: serde::de::DeserializeOwned>(
    v: &Value,
    path: &str,
) -> Result<Option<T>, ParseError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) if s.is_empty() => Ok(None),
        Value::String(s) => serde_json::from_value(Value::String(s.to_lowercase()))
            .map(Some)
            .map_err(|_| field(path, format!("unsupported value {s:?}"))),
        other => Err(field(path, format!("expected a string, got {other}"))),
    }
}

fn metadata(m: &Value) -> Result<AIMProfileMetadata, ParseError> {
    let text = |k: &str| {
        m.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let gpu_count = match m.get("gpu_count").or_else(|| m.get("gpuCount")) {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .filter(|n| *n >= 0)
                .ok_or_else(|| {
                    field(
                        "profile.metadata.gpu_count",
                        format!("not a GPU count: {v}"),
                    )
                })?,
        ),
    };
    let null = Value::Null;
    Ok(AIMProfileMetadata {
        engine: text("engine"),
        gpu: text("gpu"),
        gpu_count,
        metric: enum_value::<AIMMetric>(
            m.get("metric").unwrap_or(&null),
            "profile.metadata.metric",
        )?,
        precision: enum_value::<AIMPrecision>(
            m.get("precision").unwrap_or(&null),
            "profile.metadata.precision",
        )?,
        r#type: enum_value::<AIMProfileType>(
            m.get("type").unwrap_or(&null),
            "profile.metadata.type",
        )?,
    })
}

/// A byte count as a canonical binary quantity (`16Gi`, `1536Mi`, or plain bytes).
pub fn binary_quantity(bytes: u64) -> Quantity {
    for (suffix, unit) in [
        ("Ti", 1u64 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return Quantity(format!("{}{suffix}", bytes / unit));
        }
    }
    Quantity(bytes.to_string())
}

fn model_sources(models: Option<&Value>) -> Result<Vec<AIMModelSource>, ParseError> {
    let id_ok = |s: &str| {
        let mut parts = s.splitn(2, '/');
        let (Some(org), Some(name)) = (parts.next(), parts.next()) else {
            return false;
        };
        !org.is_empty()
            && org
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    let uri_ok = |s: &str| {
        (s.starts_with("hf://") || s.starts_with("s3://"))
            && s.len() > 5
            && !s.contains(|c: char| c.is_whitespace())
    };
    let Some(list) = models.and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .enumerate()
        .map(|(i, m)| {
            let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
            let source = m.get("source").and_then(Value::as_str).unwrap_or_default();
            if !id_ok(name) {
                return Err(field(
                    &format!("models[{i}].name"),
                    format!("{name:?} is not an org/name model id"),
                ));
            }
            if !uri_ok(source) {
                return Err(field(
                    &format!("models[{i}].source"),
                    format!("{source:?} is not an hf:// or s3:// URI"),
                ));
            }
            let size = match m.get("size_gb").and_then(Value::as_f64) {
                Some(gb) if gb.is_finite() && gb > 0.0 => {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let bytes = (gb * f64::from(1u32 << 30)).round() as u64;
                    Some(binary_quantity(bytes))
                }
                _ => None,
            };
            Ok(AIMModelSource {
                env: Vec::new(),
                model_id: name.to_owned(),
                size,
                source_uri: source.to_owned(),
            })
        })
        .collect()
}

/// Parses a discovery log; see the module contract.
pub fn parse(log: &str) -> Result<Discovered, ParseError> {
    let result = find_result(log).ok_or(ParseError::NoResult)?;
    let first = &result[0];
    let profile = &first["profile"];
    let metadata = match profile.get("metadata") {
        Some(m) if m.is_object() => Some(metadata(m)?),
        _ => None,
    };
    let env_vars: BTreeMap<String, String> = profile
        .get("env_vars")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let engine_args = profile.get("engine_args").filter(|v| !v.is_null()).cloned();
    Ok(Discovered {
        profile: AIMProfile {
            engine_args,
            env_vars,
            metadata,
            original_discovery_output: None,
        },
        model_sources: model_sources(first.get("models"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = r#"[{"filename":"profile.yaml",
  "profile":{"model":"meta-llama/Llama-3.1-8B-Instruct","quantized_model":"",
     "metadata":{"engine":"vllm","gpu":"MI300X","gpu_count":1,"metric":"throughput","precision":"fp16","type":"optimized"},
     "engine_args":{"tensor_parallel_size":1,"gpu-memory-utilization":0.95},
     "env_vars":{"VLLM_USE_V1":"0","HIP_FORCE_DEV_KERNARG":"1"}},
  "models":[{"name":"meta-llama/Llama-3.1-8B-Instruct","source":"hf://meta-llama/Llama-3.1-8B-Instruct","size_gb":16}]}]"#;

    #[test]
    fn clean_and_noisy_logs() {
        let d = parse(OUTPUT).unwrap();
        let m = d.profile.metadata.as_ref().unwrap();
        assert_eq!(m.gpu_count, Some(1));
        assert_eq!(m.metric, Some(AIMMetric::Throughput));
        assert_eq!(d.model_sources[0].size, Some(Quantity("16Gi".into())));
        let noisy = format!("[INFO] starting dry run\nWARNING [x]\n{OUTPUT}\n[done] bye [1,2]\n");
        assert_eq!(parse(&noisy).unwrap(), d);
    }

    #[test]
    fn malformed_outputs_are_errors() {
        assert_eq!(parse("no json here"), Err(ParseError::NoResult));
        assert_eq!(parse("[]"), Err(ParseError::NoResult));
        assert_eq!(parse(r#"[{"profile": "x"}]"#), Err(ParseError::NoResult));
        let bad = OUTPUT.replace("throughput", "fastest");
        assert!(matches!(parse(&bad), Err(ParseError::Field { .. })));
        let bad = OUTPUT.replace("hf://meta", "http://meta");
        assert!(matches!(parse(&bad), Err(ParseError::Field { .. })));
    }
}
