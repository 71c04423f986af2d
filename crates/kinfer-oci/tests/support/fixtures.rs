//! Shared test fixtures: an inspector on a manual clock, references, AIM labels, pull secrets.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use kinfer_oci::{ImageReference, Inspector, InspectorConfig, ManualClock, PullSecret};
use serde_json::json;

use super::images::labels;

pub const TTL: Duration = Duration::from_mins(5);

pub fn inspector(hosts: &[&str], clock: Arc<ManualClock>) -> Inspector {
    let config = InspectorConfig {
        insecure_registries: hosts.iter().map(|h| (*h).to_owned()).collect(),
        tag_ttl: TTL,
        timeout: Duration::from_secs(30),
        ..InspectorConfig::default()
    };
    Inspector::with_clock(config, clock).expect("inspector")
}

pub fn image(host: &str, path: &str) -> ImageReference {
    ImageReference::parse(&format!("{host}/{path}")).expect("reference")
}

pub fn aim_labels() -> BTreeMap<String, String> {
    labels(&[
        ("com.amd.aim.title", "aim-llama-test"),
        (
            "com.amd.aim.model.canonicalName",
            "meta-llama/Llama-3.1-8B-Instruct",
        ),
        (
            "com.amd.aim.model.source",
            "hf://meta-llama/Llama-3.1-8B-Instruct",
        ),
        (
            "com.amd.aim.model.tags",
            " text-generation ,chat,  instruction ",
        ),
        ("com.amd.aim.hfToken.required", "True"),
        ("org.amd.silogen.model.versions", "1.0, 1.1"),
        (
            "com.amd.aim.model.recommendedDeployments",
            r#"{'gpuModel': 'MI300X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'latency', 'description': "Meta's Llama on MI300X, tuned for latency"}, {'gpuModel': 'MI325X', 'gpuCount': 2, 'precision': 'fp16', 'metric': 'throughput', 'description': 'It\'s the "fast" one', 'profileId': 'mi325x-fp16-throughput'}"#,
        ),
        ("org.opencontainers.image.version", "0.8.5"),
        ("org.opencontainers.image.vendor", "AMD"),
        ("maintainer", "kinfer tests"),
    ])
}

pub fn docker_config(host: &str, user: &str, password: &str) -> PullSecret {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let config = json!({ "auths": { format!("http://{host}"): { "auth": auth } } });
    PullSecret::docker_config_json("regcred", config.to_string())
}
