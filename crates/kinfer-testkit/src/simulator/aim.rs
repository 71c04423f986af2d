//! Simulated logs of AMD AIM container images: what `kinfer render` and the benchmark harness
//! (`kinfer-bench`) need from the pods an AIM operator starts, without running any image.
//!
//! On a real cluster the AIM operator runs a dry-run Job per template (`<image> dry-run
//! --format=json`) and reads the profile from its log, and an artifact's size-check Job
//! (`/check-size.sh <uri>`) logs the size of the weights. The simulator completes those Jobs;
//! this module writes their pods' logs, deterministically, from what the pod was asked and
//! what the AIM models say about their images. It reads pods and model objects as JSON only:
//! like the KServe simulation, it imitates upstream software, not a kinfer kind. One home, so
//! render and the benchmark give the operator the same discovery output.
//!
//! A discovery pod's log:
//!
//! ```json
//! [{"filename": "kinfer-render-simulated",
//!   "profile": {"model": "<canonical name>", "quantized_model": "",
//!               "metadata": {"engine": "vllm", "gpu": "<AIM_GPU_MODEL>",
//!                            "gpu_count": <AIM_GPU_COUNT, else 1 when a GPU is named>,
//!                            "metric": "<AIM_METRIC>", "precision": "<AIM_PRECISION>",
//!                            "type": "optimized"},
//!               "engine_args": {"tensor_parallel_size": <gpu_count>}, "env_vars": {}},
//!   "models": [{"name": "<canonical name>", "source": "<source>"}]}]
//! ```
//!
//! - GPU, count, metric and precision are the Job container's `AIM_GPU_MODEL`,
//!   `AIM_GPU_COUNT`, `AIM_METRIC` and `AIM_PRECISION` (the template's values; absent ones are
//!   `null`, which the operator reads as "not set").
//! - The canonical name and source come from the AIMModel / AIMClusterModel whose
//!   `spec.image` is the Job's image (`spec.imageMetadata.model.canonicalName` and `.source`);
//!   without them the name is `kinfer-render/<image repository's last segment>` and the source
//!   `hf://<name>`.
//! - The profile type is always `optimized`: the plan of a published AIM image.
//!
//! Only pods carrying the `aim.eai.amd.com/template` label with a `discovery` container get a
//! discovery log. An artifact's size-check pod (container `check-size`, command
//! `/check-size.sh <uri>`) gets `{"url": <uri>, "sizeBytes": 17179869184}` (16 GiB, the same
//! every run). Every other pod's log is empty.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::LogHook;
use crate::cluster::TestCluster;

/// What discovery reports about a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFacts {
    /// `org/name`.
    pub canonical_name: String,
    /// `hf://...` or `s3://...`.
    pub source: String,
}

/// Model facts by image, from the AIMModels and AIMClusterModels among `objects` (anything
/// else is skipped).
pub fn models_by_image<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
) -> BTreeMap<String, ModelFacts> {
    let mut out = BTreeMap::new();
    for object in objects {
        let aim = object["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("aim.eai.amd.com/"));
        let kind = object["kind"].as_str().unwrap_or_default();
        if !aim || !matches!(kind, "AIMModel" | "AIMClusterModel") {
            continue;
        }
        let spec = &object["spec"];
        let Some(image) = spec["image"].as_str() else {
            continue;
        };
        let model = &spec["imageMetadata"]["model"];
        let canonical = model["canonicalName"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map_or_else(|| fallback_name(image), str::to_owned);
        let source = model["source"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map_or_else(|| format!("hf://{canonical}"), str::to_owned);
        out.insert(
            image.to_owned(),
            ModelFacts {
                canonical_name: canonical,
                source,
            },
        );
    }
    out
}

/// `kinfer-render/<last path segment of the repository>`.
pub fn fallback_name(image: &str) -> String {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    let repo = last.split(':').next().unwrap_or(last);
    let clean: String = repo
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!(
        "kinfer-render/{}",
        if clean.is_empty() { "model" } else { &clean }
    )
}

fn env_value<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)?["value"]
        .as_str()
}

/// The size every simulated size check reports: 16 GiB.
pub const SIMULATED_SIZE_BYTES: u64 = 16 << 30;

/// The simulated log of an artifact's size-check pod, or `None` when it is not one.
fn check_size_log(pod: &Value) -> Option<String> {
    let container = pod["spec"]["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == "check-size")?;
    let uri = container["command"].get(1)?.as_str()?;
    Some(json!({ "url": uri, "sizeBytes": SIMULATED_SIZE_BYTES }).to_string())
}

/// The simulated log of `pod`, or `None` when it is neither a discovery nor a size-check pod.
pub fn log_for(pod: &Value, models: &BTreeMap<String, ModelFacts>) -> Option<String> {
    if let Some(log) = check_size_log(pod) {
        return Some(log);
    }
    pod["metadata"]["labels"].get("aim.eai.amd.com/template")?;
    let container = pod["spec"]["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == "discovery")?;
    let image = container["image"].as_str().unwrap_or_default();
    let facts = models.get(image).cloned().unwrap_or_else(|| {
        let canonical_name = fallback_name(image);
        ModelFacts {
            source: format!("hf://{canonical_name}"),
            canonical_name,
        }
    });
    let gpu = env_value(container, "AIM_GPU_MODEL");
    let count: Option<i64> = env_value(container, "AIM_GPU_COUNT")
        .and_then(|c| c.parse().ok())
        .or_else(|| gpu.map(|_| 1));
    let result = json!([{
        "filename": "kinfer-render-simulated",
        "profile": {
            "model": facts.canonical_name,
            "quantized_model": "",
            "metadata": {
                "engine": "vllm",
                "gpu": gpu,
                "gpu_count": count,
                "metric": env_value(container, "AIM_METRIC"),
                "precision": env_value(container, "AIM_PRECISION"),
                "type": "optimized",
            },
            "engine_args": { "tensor_parallel_size": count.unwrap_or(1) },
            "env_vars": {},
        },
        "models": [{ "name": facts.canonical_name, "source": facts.source }],
    }]);
    Some(result.to_string())
}

/// The log hook answering from `models` ([`log_for`]).
pub fn hook(models: BTreeMap<String, ModelFacts>) -> LogHook {
    let models = Arc::new(models);
    Arc::new(move |_ns, _name, pod| log_for(pod, &models))
}

/// Installs [`hook`] on the cluster's simulator.
pub fn install(cluster: &TestCluster, models: BTreeMap<String, ModelFacts>) {
    cluster.simulator().set_log_hook(hook(models));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_log_carries_the_template_and_model() {
        let pod = json!({
            "metadata": { "labels": { "aim.eai.amd.com/template": "t" } },
            "spec": { "containers": [{ "name": "discovery", "image": "r/aim-qwen:1",
                "env": [{ "name": "AIM_GPU_MODEL", "value": "MI300X" },
                        { "name": "AIM_GPU_COUNT", "value": "2" },
                        { "name": "AIM_METRIC", "value": "latency" }] }] }
        });
        let models = BTreeMap::from([(
            "r/aim-qwen:1".to_owned(),
            ModelFacts {
                canonical_name: "Qwen/Qwen3-32B".into(),
                source: "hf://Qwen/Qwen3-32B".into(),
            },
        )]);
        let log: Value =
            serde_json::from_str(&log_for(&pod, &models).unwrap_or_default()).unwrap_or_default();
        let m = &log[0]["profile"]["metadata"];
        assert_eq!(m["gpu"], "MI300X");
        assert_eq!(m["gpu_count"], 2);
        assert_eq!(m["metric"], "latency");
        assert_eq!(m["precision"], Value::Null);
        assert_eq!(m["type"], "optimized");
        assert_eq!(log[0]["models"][0]["name"], "Qwen/Qwen3-32B");
        assert_eq!(
            fallback_name("docker.io/amd/aim-x:0.1"),
            "kinfer-render/aim-x"
        );
        assert!(log_for(&json!({ "metadata": {} }), &models).is_none());
    }

    #[test]
    fn size_checks_report_16_gib_and_other_pods_nothing() {
        let pod = json!({ "spec": { "containers": [{ "name": "check-size",
            "command": ["/check-size.sh", "hf://org/m"] }] } });
        let log: Value = serde_json::from_str(&log_for(&pod, &BTreeMap::new()).unwrap_or_default())
            .unwrap_or_default();
        assert_eq!(log["url"], "hf://org/m");
        assert_eq!(log["sizeBytes"], SIMULATED_SIZE_BYTES);
        let download = json!({ "spec": { "containers": [{ "name": "download" }] } });
        assert!(log_for(&download, &BTreeMap::new()).is_none());
    }

    #[test]
    fn model_facts_come_from_aim_models_only() {
        let objects = [
            json!({ "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMClusterModel",
                    "spec": { "image": "r/a:1", "imageMetadata": { "model": {
                        "canonicalName": "org/a", "source": "s3://b/a" } } } }),
            json!({ "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
                    "spec": { "image": "r/aim-b:2" } }),
            json!({ "apiVersion": "v1", "kind": "ConfigMap", "spec": { "image": "r/c:3" } }),
        ];
        let facts = models_by_image(&objects);
        assert_eq!(facts.len(), 2, "{facts:?}");
        assert_eq!(facts["r/a:1"].canonical_name, "org/a");
        assert_eq!(facts["r/a:1"].source, "s3://b/a");
        assert_eq!(facts["r/aim-b:2"].canonical_name, "kinfer-render/aim-b");
        assert_eq!(facts["r/aim-b:2"].source, "hf://kinfer-render/aim-b");
    }
}
