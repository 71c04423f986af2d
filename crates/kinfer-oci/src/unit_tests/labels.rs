//! Unit tests of `labels.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use pretty_assertions::assert_eq;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn dep(gpu: &str, count: i32, precision: &str, metric: &str) -> RecommendedDeployment {
    RecommendedDeployment {
        gpu_model: Some(gpu.into()),
        gpu_count: Some(count),
        precision: Some(precision.into()),
        metric: Some(metric.into()),
        ..Default::default()
    }
}

/// The labels of `ghcr.io/silogen/aim-dummy` (NOTES.md §b).
#[test]
fn aim_dummy_labels() {
    let l = labels(&[
        ("com.amd.aim.hfToken.required", "False"),
        (
            "com.amd.aim.model.canonicalName",
            "HuggingFaceTB/SmolLM2-135M",
        ),
        (
            "com.amd.aim.model.source",
            "hf://HuggingFaceTB/SmolLM2-135M",
        ),
        (
            "com.amd.aim.model.tags",
            "text-generation, chat, instruction",
        ),
        ("com.amd.aim.model.variants", "HuggingFaceTB/SmolLM2-135M"),
        ("com.amd.aim.title", "aimdummy-smollm2-135"),
        ("com.amd.aim.release.notes", ""),
        (
            "com.amd.aim.model.recommendedDeployments",
            "{'gpuModel': 'MI300X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'latency', 'description': 'Optimized for latency on MI300X using fp8 precision'}, {'gpuModel': 'MI300X', 'gpuCount': 1, 'precision': 'fp16', 'metric': 'latency', 'description': '…', 'profileId': 'mi300x-fp16-latency-unopt'}, {'gpuModel': 'MI325X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'throughput', 'description': '…', 'profileId': 'mi325x-fp8-throughput'}",
        ),
        ("org.opencontainers.image.version", "0.1"),
        ("maintainer", "someone"),
    ]);
    let m = parse_image_metadata(&l).unwrap();
    let model = m.model.unwrap();
    assert_eq!(model.hf_token_required, Some(false));
    assert_eq!(
        model.canonical_name.as_deref(),
        Some("HuggingFaceTB/SmolLM2-135M")
    );
    assert_eq!(model.tags, ["text-generation", "chat", "instruction"]);
    assert_eq!(model.release_notes, None);
    let d = &model.recommended_deployments;
    assert_eq!(d.len(), 3);
    assert_eq!(
        d[0],
        RecommendedDeployment {
            description: Some("Optimized for latency on MI300X using fp8 precision".into()),
            ..dep("MI300X", 1, "fp8", "latency")
        }
    );
    assert_eq!(d[2].profile_id.as_deref(), Some("mi325x-fp8-throughput"));
    assert_eq!(m.oci.unwrap().version.as_deref(), Some("0.1"));
    assert_eq!(m.original_labels, l);
}

#[test]
fn legacy_prefix_is_a_fallback() {
    let l = labels(&[
        ("com.amd.aim.title", ""),
        ("org.amd.silogen.title", "legacy"),
        ("org.amd.silogen.model.versions", "a, ,b"),
        ("com.amd.aim.model.source", "hf://new"),
        ("org.amd.silogen.model.source", "hf://old"),
    ]);
    let model = parse_image_metadata(&l).unwrap().model.unwrap();
    assert_eq!(model.title.as_deref(), Some("legacy"));
    assert_eq!(model.versions, ["a", "b"]);
    assert_eq!(model.source.as_deref(), Some("hf://new"));
}

#[test]
fn unlabelled_image_is_valid() {
    let m = parse_image_metadata(&BTreeMap::new()).unwrap();
    assert_eq!(m, ImageMetadata::default());
}

#[test]
fn apostrophes_survive_unlike_upstream() {
    let v = r#"[{'gpuModel': 'MI300X', 'description': "Meta's Llama, tuned"}, {'description': 'it\'s "fast"', 'gpuCount': 2}]"#;
    let d = parse_recommended_deployments(v).unwrap();
    assert_eq!(d[0].description.as_deref(), Some("Meta's Llama, tuned"));
    assert_eq!(d[1].description.as_deref(), Some("it's \"fast\""));
    assert_eq!(d[1].gpu_count, Some(2));
}

#[test]
fn json_and_comma_separated_objects() {
    let json =
        r#"[{"gpuModel":"MI300X","gpuCount":1,"precision":"fp8","metric":"latency","unknown":1}]"#;
    assert_eq!(
        parse_recommended_deployments(json).unwrap(),
        [dep("MI300X", 1, "fp8", "latency")]
    );
    let objects = r#"{"gpuModel":"MI300X","gpuCount":1,"precision":"fp8","metric":"latency"}, {"gpuModel":"MI300X","gpuCount":1,"precision":"fp8","metric":"latency"}"#;
    assert_eq!(parse_recommended_deployments(objects).unwrap().len(), 2);
    assert_eq!(parse_recommended_deployments("  ").unwrap(), []);
}

#[test]
fn malformed_deployments_name_the_label() {
    let l = labels(&[(
        "org.amd.silogen.model.recommendedDeployments",
        "{'gpuCount': 'many'",
    )]);
    let e = parse_image_metadata(&l).unwrap_err();
    assert_eq!(e.category(), crate::OciErrorCategory::InvalidSpec);
    assert!(
        matches!(&e, OciError::InvalidLabel { label, .. } if label == "org.amd.silogen.model.recommendedDeployments"),
        "{e}"
    );
    for bad in ["{'gpuCount': 'many'}", "[1, 2]", "{'a': NaN}", "not a dict"] {
        assert!(parse_recommended_deployments(bad).is_err(), "{bad}");
    }
}

#[test]
fn go_parse_bool() {
    for t in ["1", "t", "T", "TRUE", "true", "True"] {
        assert_eq!(parse_go_bool(t), Some(true));
    }
    for f in ["0", "f", "F", "FALSE", "false", "False"] {
        assert_eq!(parse_go_bool(f), Some(false));
    }
    for x in ["yes", "tRUE", " true", ""] {
        assert_eq!(parse_go_bool(x), None);
    }
    let l = labels(&[("com.amd.aim.hfToken.required", "yes")]);
    assert_eq!(parse_image_metadata(&l).unwrap().model, None);
}
