use super::*;
use crate::env::var;

#[test]
fn golden_image_model_name_row_13() {
    assert_eq!(
        image_model_name("amdenterpriseai/aim-qwen-qwen3-32b:0.8.5")
            .expect("derives")
            .as_str(),
        "aim-qwen-qwen3-32b-0-8-5-cdc1fb22"
    );
}

#[test]
fn golden_inference_service_name_row_14_always_hashed() {
    assert_eq!(
        inference_service_name("qwen-chat", "ml-team")
            .expect("derives")
            .as_str(),
        "qwen-chat-a04542d9"
    );
    // The route (row 17) equals it while the ISVC name was not cut further.
    assert_eq!(
        route_name("qwen-chat", "ml-team")
            .expect("derives")
            .as_str(),
        "qwen-chat-a04542d9"
    );
    let long = "q".repeat(60);
    let ns = "n".repeat(30);
    let name = inference_service_name(&long, &ns).expect("fits");
    assert_eq!(name.as_str().len() + "-predictor-".len() + ns.len(), 63);
    assert!(inference_service_name("a", &"n".repeat(42)).is_ok());
    assert!(matches!(
        inference_service_name("a", &"n".repeat(43)),
        Err(NameError::NamespaceTooLong { max: 42, .. })
    ));
}

#[test]
fn template_name_row_4_shape() {
    let name = template_name(
        "aim-qwen-qwen3-32b-0-8-5-cdc1fb22",
        "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5",
        Deployment {
            gpu_model: "MI300X",
            gpu_count: 1,
            metric: "latency",
            precision: "fp8",
        },
    )
    .expect("derives");
    let name = name.as_str();
    assert_eq!(name.len(), 63, "{name}");
    assert!(
        name.starts_with("amdenterpriseai-aim-qwen-qwen3-32b-0-8-5-1x-mi300x-lat-fp8-"),
        "{name}"
    );
    let hash = aim_hash(&[HashInput::Str(
        "aim-qwen-qwen3-32b-0-8-5-cdc1fb22-amdenterpriseai/aim-qwen-qwen3-32b:0.8.5-MI300X-x1-latency-fp8"
            .to_owned(),
    )]);
    assert_eq!(&name[59..], &hash[..4]);
}

#[test]
fn derived_template_name_row_12() {
    let name = derived_template_name(
        "base-tpl",
        Overrides {
            precision: Some("fp8"),
            metric: Some("throughput"),
            ..Overrides::default()
        },
    )
    .expect("derives");
    let hash = aim_hash(&[
        "precision".into(),
        "fp8".into(),
        "metric".into(),
        "throughput".into(),
    ]);
    assert_eq!(
        name.as_str(),
        format!("base-tpl-ovr-fp8-throughput-{}", &hash[..4])
    );
    let gpu = derived_template_name(
        "base-tpl",
        Overrides {
            gpu_model: Some("MI325X"),
            gpu_count: 4,
            ..Overrides::default()
        },
    )
    .expect("derives");
    assert!(
        gpu.as_str().starts_with("base-tpl-ovr-mi325x-4gpu-"),
        "{gpu}"
    );
    assert_eq!(
        derived_template_name("base-tpl", Overrides::default())
            .expect("base")
            .as_str(),
        "base-tpl"
    );
}

#[test]
fn artifact_name_row_21_hashes_ten_hex_over_go_json() {
    let env = [var("AWS_ENDPOINT_URL", "http://minio:9000")];
    let name = artifact_name("hf://Qwen/Qwen3-32B", &env, "nfs", None).expect("derives");
    let hash = sha_hex(
        r#""hf://Qwen/Qwen3-32B"|[{"name":"AWS_ENDPOINT_URL","value":"http://minio:9000"}]|"nfs""#,
    );
    assert_eq!(
        name.as_str(),
        format!("hf---qwen-qwen3-32b-{}", &hash[..10])
    );
    let none = artifact_name("hf://Qwen/Qwen3-32B", &[], "", Some("tc")).expect("derives");
    let hash = sha_hex(r#""hf://Qwen/Qwen3-32B"|null|""|"dedicated"|"tc""#);
    assert!(none.as_str().ends_with(&hash[..10]));
}

fn sha_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

#[test]
fn cluster_model_name_row_24_six_hex() {
    let name = cluster_model_name("docker.io", "amdenterpriseai/aim-qwen-qwen3-32b", "0.8.5")
        .expect("derives");
    let hash = sha_hex(r#""docker.io"|"amdenterpriseai/aim-qwen-qwen3-32b"|"0.8.5""#);
    assert_eq!(
        name.as_str(),
        format!("amdenterpriseai-aim-qwen-qwen3-32b-0-8-5-{}", &hash[..6])
    );
}

#[test]
fn discovery_job_name_uses_upstreams_formula() {
    let env = [var("HF_HUB_OFFLINE", "0")];
    let secrets = ["registry-creds".to_owned()];
    let name = discovery_job_name(
        &"t".repeat(80),
        DiscoveryHash {
            model: "qwen3-32b",
            image: "img:1",
            service_account: "sa",
            env: &env,
            image_pull_secrets: &secrets,
            metric: "latency",
            precision: "fp8",
            gpu: Some(("MI300X", 1)),
            profile_id: "p",
            kinfer: "",
        },
    )
    .expect("derives");
    let digest = Sha256::digest(b"qwen3-32bimg:1saHF_HUB_OFFLINE0registry-credslatencyfp8MI300X1p");
    assert_eq!(
        name.as_str(),
        format!("discover-{}-{}", "t".repeat(45), hex::encode(&digest[..4]))
    );
    assert_eq!(name.as_str().len(), 63);
}

#[test]
fn parts_keep_double_dashes_and_empty_parts_become_part() {
    let name = generate_derived_name(&["a..b", "", "--"], &[], 8, 63).expect("derives");
    assert_eq!(name.as_str(), "a--b-part-part");
    let hashed = generate_derived_name(&["x"], &["y".into()], 8, 63).expect("derives");
    assert_eq!(hashed.as_str(), format!("x-{}", &sha_hex("\"y\"")[..8]));
    // The longest part is trimmed one character at a time, never leaving a trailing dash.
    let cut = generate_derived_name(&["abc-defgh", "xy"], &[], 8, 8).expect("derives");
    assert_eq!(cut.as_str(), "abc-d-xy");
    assert!(generate_derived_name(&["a", "b"], &["h".into()], 8, 9).is_err());
    // A name that starts with a digit is a valid DNS-1123 label, as upstream emits it.
    let digit = generate_derived_name(&["0-8-5"], &[], 8, 63).expect("derives");
    assert_eq!(digit.as_str(), "0-8-5");
}

#[test]
fn go_json_matches_encoding_json() {
    assert_eq!(
        HashInput::from("a<b>&\"\\\n\u{1}\u{2028}é").go_json(),
        r#""a\u003cb\u003e\u0026\"\\\n\u0001\u2028é""#
    );
    assert_eq!(
        HashInput::Strings(vec!["MI300X".into()]).go_json(),
        r#"["MI300X"]"#
    );
    assert_eq!(HashInput::Int(-4).go_json(), "-4");
    let secret: k8s_openapi::api::core::v1::EnvVar = serde_json::from_value(serde_json::json!(
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"key": "token", "name": "hf"}}}
    ))
    .expect("env");
    assert_eq!(
        HashInput::Env(vec![secret]).go_json(),
        r#"[{"name":"HF_TOKEN","valueFrom":{"secretKeyRef":{"name":"hf","key":"token"}}}]"#
    );
}

#[test]
fn label_values_follow_sanitize_label_value() {
    assert_eq!(
        aim_label_value("Qwen/Qwen3-32B").as_deref(),
        Some("qwen_qwen3-32b")
    );
    assert_eq!(aim_label_value("a//b").as_deref(), Some("a_b"));
    assert_eq!(aim_label_value("_x_").as_deref(), Some("x"));
    assert_eq!(aim_label_value("///"), None);
    let long = aim_label_value(&format!("{}-{}", "a".repeat(62), "b".repeat(10))).expect("v");
    assert_eq!(long, "a".repeat(62));
}

#[test]
fn image_parts_follow_extract_image_parts() {
    let parts = |s: &str| image_name_and_tag(s).expect("parses");
    assert_eq!(parts("nginx"), ("nginx".into(), "latest".into()));
    assert_eq!(
        parts("localhost:5000/my_image:Dev.1"),
        ("my-image".into(), "dev-1".into())
    );
    assert_eq!(
        parts("ghcr.io/a/b@sha256:abcdef0123"),
        ("b".into(), "abcdef".into())
    );
    assert!(image_name_and_tag("a:").is_none());
}

#[test]
fn shared_cache_names_are_upstreams_unless_two_templates_could_share_one() {
    let name = |t: &str| {
        shared_template_cache_name(t, "team")
            .expect("derives")
            .as_str()
            .to_owned()
    };
    // A name that survives verbatim keeps upstream's `[template]`-hashed-over-namespace form,
    // so caches the upstream operator created are found.
    let short = "aim-qwen3-32b-mi300x-lat-fp8";
    let upstream =
        generate_derived_name(&[short], &["team".into()], AIM_HASH_LEN, 63).expect("derives");
    assert_eq!(name(short), upstream.as_str());

    // Two long templates that agree in their first 54 characters: upstream gives both one
    // cache; ours differ, and each stays a valid, stable label.
    let stem = format!("aim-qwen-qwen3-32b-0-8-5-{}", "x".repeat(40));
    let (fp8, fp16) = (format!("{stem}-mi300x-fp8"), format!("{stem}-mi300x-fp16"));
    let upstream_of = |t: &str| {
        generate_derived_name(&[t], &["team".into()], AIM_HASH_LEN, 63)
            .expect("derives")
            .as_str()
            .to_owned()
    };
    assert_eq!(
        upstream_of(&fp8),
        upstream_of(&fp16),
        "the upstream collision"
    );
    assert_ne!(name(&fp8), name(&fp16));
    assert!(name(&fp8).len() <= 63);
    assert_eq!(name(&fp8), name(&fp8));

    // Names that differ only in characters a label cannot hold.
    assert_ne!(name("a.b"), name("a-b"));
    assert_eq!(name("a-b"), upstream_of("a-b"));
}

#[test]
fn dedicated_cache_names_differ_per_template_of_one_service() {
    let uid = "6b1f0c1e-2f6a-4c1e-9d55-3f2d1c0b9a87";
    let name = |t: &str, svc: &str| {
        dedicated_template_cache_name_of_template(t, svc, uid)
            .expect("derives")
            .as_str()
            .to_owned()
    };
    let upstream_of = |t: &str, svc: &str| {
        generate_derived_name(&[t, svc], &[uid.into()], AIM_HASH_LEN, 63)
            .expect("derives")
            .as_str()
            .to_owned()
    };
    // Short names survive verbatim: upstream's name, so its dedicated caches are adopted.
    assert_eq!(
        name("qwen-lat-fp8", "chat"),
        upstream_of("qwen-lat-fp8", "chat")
    );
    assert_eq!(
        name("qwen-lat-fp8", "chat"),
        format!("qwen-lat-fp8-chat-{}", &aim_hash(&[uid.into()])[..8])
    );

    // Two templates of one model (auto-generated names are long and differ at the end): the
    // upstream rule cuts both to one name, so the service's cache of the first template would
    // hold the second one's name.
    let template = |metric, precision| {
        let d = Deployment {
            gpu_model: "MI300X",
            gpu_count: 1,
            metric,
            precision,
        };
        template_name("m", "amdenterpriseai/aim-matrix-model:0.8.5", d)
            .expect("derives")
            .as_str()
            .to_owned()
    };
    let (lat, thr) = (template("latency", "fp8"), template("throughput", "fp16"));
    let svc = "svc-2";
    assert_eq!(
        upstream_of(&lat, svc),
        upstream_of(&thr, svc),
        "the upstream collision"
    );
    // The first choice keeps upstream's name (existing caches are found).
    for t in [&lat, &thr] {
        assert_eq!(
            dedicated_template_cache_name(t, svc, uid)
                .expect("derives")
                .as_str(),
            upstream_of(t, svc)
        );
    }
    assert_ne!(name(&lat, svc), name(&thr, svc));
    for t in [&lat, &thr] {
        let n = name(t, svc);
        assert!(n.len() <= 63, "{n}");
        assert_eq!(n, name(t, svc), "stable");
    }

    // A long service name cut instead of the template: still one name per template.
    let long_svc = "s".repeat(60);
    assert_ne!(name("a", &long_svc), name("b", &long_svc));
    // Characters a name cannot hold.
    assert_ne!(name("a.b", svc), name("a-b", svc));
    assert_eq!(name("a-b", svc), upstream_of("a-b", svc));
}
