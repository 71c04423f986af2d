use proptest::prelude::*;

use super::*;

#[test]
fn checks_follow_the_kubernetes_rules() {
    assert!(is_dns1123_label("a-1"));
    assert!(is_dns1123_label("1a"));
    assert!(!is_dns1123_label("-a"));
    assert!(!is_dns1123_label("a-"));
    assert!(!is_dns1123_label("A"));
    assert!(!is_dns1123_label(&"a".repeat(64)));
    assert!(is_dns1123_subdomain("a.b-c.d"));
    assert!(!is_dns1123_subdomain("a..b"));
    assert!(is_dns1035_label("a1"));
    assert!(!is_dns1035_label("1a"));
    assert!(is_label_value(""));
    assert!(is_label_value("Llama-3.1_8B"));
    assert!(!is_label_value("a/b"));
    assert!(!is_label_value("-a"));
}

#[test]
fn sanitises_like_the_reference_operator() {
    assert_eq!(sanitize_dns1035("MyModel_1.0"), "mymodel-1-0");
    assert_eq!(sanitize_dns1035("0.6b"), "m-0-6b");
    assert_eq!(sanitize_dns1035("--a__b--"), "a-b");
    assert_eq!(sanitize_dns1035("___"), "x");
    assert_eq!(
        sanitize_label_value("meta-llama/Llama-3.1"),
        "meta-llama_Llama-3.1"
    );
    assert_eq!(sanitize_label_value("/x/"), "x");
    let long = sanitize_label_value(&"a".repeat(100));
    assert_eq!(long.len(), 63);
    assert!(is_label_value(&long));
    assert_ne!(long, sanitize_label_value(&"a".repeat(101)));
}

#[test]
fn derived_names_trim_the_longest_part_and_append_the_hash() {
    let image = "amdenterpriseai-aim-qwen-qwen3-32b-0-8-5";
    let name = derived_name(&[image, "1x-mi300x-lat-fp8"], &["x"], 63).expect("derives");
    assert_eq!(name.as_str().len(), 63);
    assert!(
        name.as_str()
            .starts_with("amdenterpriseai-aim-qwen-qwen3-32b-0-1x-mi300x-lat-fp8-"),
        "{name}"
    );
    let short =
        derived_name(&["a".repeat(80).as_str(), "ovr", "fp8"], &["y"], 30).expect("derives");
    assert_eq!(
        short.as_str(),
        format!("{}-ovr-fp8-{}", "a".repeat(13), hash_hex(&["y"]))
    );
    assert_eq!(
        derived_name(&["9lives"], &["z"], 63)
            .expect("derives")
            .as_str(),
        format!("m-9lives-{}", hash_hex(&["z"]))
    );
    assert_eq!(
        derived_name(&["", "!!"], &["z"], 63)
            .expect("derives")
            .as_str(),
        format!("x-{}", hash_hex(&["z"]))
    );
    assert!(matches!(
        derived_name(&["a"], &[], 9),
        Err(NameError::TooShort { .. })
    ));
}

#[test]
fn cluster_scoped_names_join_namespace_and_name_with_a_dot() {
    let name = Dns1035Label::new("llama-epp").expect("valid");
    assert_eq!(
        cluster_scoped_name("team-a", &name)
            .expect("valid")
            .as_str(),
        "team-a.llama-epp"
    );
}

#[test]
fn hash_inputs_are_length_prefixed() {
    assert_ne!(hash_hex(&["ab", "c"]), hash_hex(&["a", "bc"]));
    assert_eq!(hash_hex(&["ab", "c"]).len(), HASH_LEN);
}

#[test]
fn child_names_stay_readable_when_they_fit() {
    let n = child_name(&["llama", "decode"], &["llama"], 63).expect("derives");
    assert_eq!(n.as_str(), "llama-decode");
    // A dot is allowed in an object name but not in a label: hashed.
    let n = child_name(&["llama.v2", "decode"], &["llama.v2"], 63).expect("derives");
    assert_eq!(
        n.as_str(),
        format!("llama-v2-decode-{}", hash_hex(&["llama.v2"]))
    );
}

#[test]
fn inference_service_names_fit_the_predictor_hostname() {
    assert_eq!(
        inference_service_name("qwen-chat", "team-a")
            .expect("fits")
            .as_str(),
        "qwen-chat"
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
fn discovery_job_names_keep_45_template_characters() {
    let template = "t".repeat(80);
    let name = discovery_job_name(&template, &["image", "fp8"]).expect("derives");
    assert_eq!(
        name.as_str(),
        format!(
            "discover-{}-{}",
            "t".repeat(45),
            hash_hex(&[&template, "image", "fp8"])
        )
    );
    assert_ne!(
        name,
        discovery_job_name(&template, &["image", "fp16"]).expect("derives")
    );
}

#[test]
fn newtypes_reject_invalid_text_and_deserialise_through_the_check() {
    assert!(Dns1035Label::new("1a").is_err());
    assert!(Dns1123Label::new("1a").is_ok());
    assert!(LabelValue::new("a b").is_err());
    let ok: Result<Dns1123Subdomain, _> = serde_json::from_str("\"a.b\"");
    assert!(ok.is_ok());
    let bad: Result<Dns1123Subdomain, _> = serde_json::from_str("\"A\"");
    assert!(bad.is_err());
}

/// Child suffixes the builders use, per kind of child.
const SUFFIXES: &[&[&str]] = &[
    &["decode"],
    &["prefill"],
    &["epp"],
    &["epp", "config"],
    &["epp", "sa-metrics-reader-secret"],
    &["canary"],
];

fn subdomain() -> impl Strategy<Value = String> {
    let label = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";
    proptest::string::string_regex(&format!("{label}(\\.{label}){{0,4}}"))
        .expect("valid regex")
        .prop_filter("at most 253", |s| s.len() <= 253)
}

fn namespace() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?").expect("valid regex")
}

fn children(name: &str, ns: &str) -> Vec<String> {
    let mut out: Vec<String> = SUFFIXES
        .iter()
        .map(|suffix| {
            let mut parts = vec![name];
            parts.extend_from_slice(suffix);
            child_name(&parts, &[name], 63)
                .expect("derives")
                .as_str()
                .to_owned()
        })
        .collect();
    let epp = child_name(&[name, "epp"], &[name], 63).expect("derives");
    out.push(
        cluster_scoped_name(ns, &epp)
            .expect("derives")
            .as_str()
            .to_owned(),
    );
    out.push(
        discovery_job_name(name, &[ns])
            .expect("derives")
            .as_str()
            .to_owned(),
    );
    if let Ok(isvc) = inference_service_name(name, ns) {
        out.push(isvc.as_str().to_owned());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn child_names_are_valid_short_and_deterministic(name in subdomain(), ns in namespace()) {
        let first = children(&name, &ns);
        for child in &first {
            if child.contains('.') {
                prop_assert!(is_dns1123_subdomain(child), "{child}");
            } else {
                prop_assert!(is_dns1123_label(child), "{child}");
            }
        }
        prop_assert_eq!(&first, &children(&name, &ns));
        match inference_service_name(&name, &ns) {
            Ok(isvc) => {
                prop_assert!(is_dns1035_label(isvc.as_str()));
                prop_assert!(isvc.as_str().len() + 11 + ns.len() <= 63);
            }
            Err(_) => prop_assert!(ns.len() > 42),
        }
    }

    #[test]
    fn distinct_inputs_give_distinct_child_names(
        a in subdomain(), b in subdomain(), ns_a in namespace(), ns_b in namespace()
    ) {
        prop_assume!(a != b);
        for (x, y) in children(&a, &ns_a).iter().zip(children(&b, &ns_a)) {
            prop_assert_ne!(x, &y);
        }
        if ns_a != ns_b {
            let ja = discovery_job_name(&a, &[&ns_a]).expect("derives");
            let jb = discovery_job_name(&a, &[&ns_b]).expect("derives");
            prop_assert_ne!(ja, jb);
        }
    }

    #[test]
    fn label_values_are_always_valid(s in "\\PC{0,300}") {
        let v = sanitize_label_value(&s);
        prop_assert!(is_label_value(&v), "{v}");
        prop_assert_eq!(v, sanitize_label_value(&s));
    }

    #[test]
    fn dns1035_sanitising_always_gives_a_valid_prefix(s in "\\PC{0,60}") {
        let v = sanitize_dns1035(&s);
        prop_assert!(v.len() > 61 || is_dns1035_label(&v), "{v}");
    }
}
