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
fn newtypes_reject_invalid_text_and_deserialise_through_the_check() {
    assert!(Dns1035Label::new("1a").is_err());
    assert!(Dns1123Label::new("1a").is_ok());
    assert!(LabelValue::new("a b").is_err());
    let ok: Result<Dns1123Subdomain, _> = serde_json::from_str("\"a.b\"");
    assert!(ok.is_ok());
    let bad: Result<Dns1123Subdomain, _> = serde_json::from_str("\"A\"");
    assert!(bad.is_err());
}

fn subdomain() -> impl Strategy<Value = String> {
    let label = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";
    proptest::string::string_regex(&format!("{label}(\\.{label}){{0,4}}"))
        .expect("valid regex")
        .prop_filter("at most 253", |s| s.len() <= 253)
}

fn namespace() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?").expect("valid regex")
}

/// `(kind, name, label-class)` of every object the real builders create for a parent named
/// `name` in `ns`: the ModelService bundle (decode and prefill Deployments, pool, pool route,
/// EPP bundle, PodMonitor), the AIM InferenceService and route (when the namespace leaves room
/// for KServe's hostname) and a kinfer Service.
/// How strict a child's name must be.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Class {
    /// A Service name: DNS-1035 label.
    Dns1035,
    /// At most 63 characters (KServe's hostname label, AIM's names): DNS-1123 label.
    Label,
    /// An object name: DNS-1123 subdomain.
    Subdomain,
}

fn children(name: &str, ns: &str) -> Vec<(&'static str, String, Class)> {
    use crate::deployment::{self, Role};
    use crate::meta::Parent;
    let parent = Parent {
        name: Dns1123Subdomain::new(name).expect("subdomain"),
        namespace: Dns1123Label::new(ns).expect("label"),
        managed_by: "kinfer".to_owned(),
    };
    let mut out = Vec::new();
    let meta_name = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        m.name.clone().expect("named")
    };
    for role in [Role::Decode, Role::Prefill] {
        let input: deployment::ModelDeploymentInput = serde_json::from_value(serde_json::json!({
            "parent": parent, "role": role, "kitImage": "kit",
            "model": {"name": "m", "image": "r/m:1", "mountPath": "/models"},
            "engine": {"image": "vllm", "port": 8000, "healthPath": "/health"},
            "accelerator": "nvidia", "parallelism": {"tensor": 1, "data": 1, "dataLocal": 1}
        }))
        .expect("input");
        let built = deployment::model_deployment(&input).expect("builds");
        out.push((
            "Deployment",
            meta_name(&built.deployment.metadata),
            Class::Subdomain,
        ));
        let monitor = crate::monitoring::role_pod_monitor(
            &parent,
            role,
            &crate::monitoring::ScrapeTarget::default(),
        )
        .expect("builds");
        out.push(("PodMonitor", meta_name(&monitor.metadata), Class::Subdomain));
    }
    let pool: crate::inference_pool::PoolInput = serde_json::from_value(serde_json::json!({
        "parent": parent, "targetPort": 8000, "endpointPickerPort": 9002
    }))
    .expect("input");
    let pool = crate::inference_pool::inference_pool(&pool).expect("builds");
    out.push(("InferencePool", meta_name(&pool.metadata), Class::Subdomain));
    let route: crate::gateway::PoolRouteInput = serde_json::from_value(serde_json::json!({
        "parent": parent, "modelName": "m", "gateway": {"name": "g"}
    }))
    .expect("input");
    let route = crate::gateway::pool_route(&route).expect("builds");
    out.push((
        "HTTPRoute/pool",
        meta_name(&route.metadata),
        Class::Subdomain,
    ));
    let epp: crate::epp::EppInput = serde_json::from_value(serde_json::json!({
        "parent": parent, "image": "epp", "replicas": 2, "port": 9002,
        "config": {"kind": "default"}, "metricsAuth": true, "serviceMonitor": true, "istio": true
    }))
    .expect("input");
    let b = crate::epp::epp_bundle(&epp).expect("builds");
    out.push((
        "Deployment/epp",
        meta_name(&b.deployment.metadata),
        Class::Subdomain,
    ));
    out.push((
        "Service/epp",
        meta_name(&b.service.metadata),
        Class::Dns1035,
    ));
    out.push((
        "ConfigMap",
        meta_name(&b.config_map.metadata),
        Class::Subdomain,
    ));
    out.push((
        "ServiceAccount",
        meta_name(&b.service_account.metadata),
        Class::Subdomain,
    ));
    out.push(("Role", meta_name(&b.role.metadata), Class::Subdomain));
    if let Some(crb) = &b.cluster_role_binding {
        out.push((
            "ClusterRoleBinding",
            meta_name(&crb.metadata),
            Class::Subdomain,
        ));
    }
    if let Some(rb) = &b.leader_election_binding {
        out.push(("RoleBinding", meta_name(&rb.metadata), Class::Subdomain));
    }
    if let Some(secret) = &b.token_secret {
        out.push(("Secret", meta_name(&secret.metadata), Class::Subdomain));
    }
    if let Ok(isvc) = aim::inference_service_name(name, ns) {
        let input: crate::kserve::InferenceServiceInput =
            serde_json::from_value(serde_json::json!({
                "parent": parent, "runtime": "rt", "model": "m",
                "scaling": {"mode": "fixed", "replicas": 1}
            }))
            .expect("input");
        let built = crate::kserve::inference_service(&input).expect("builds");
        let got = meta_name(&built.inference_service.metadata);
        assert_eq!(got, isvc.as_str());
        out.push(("InferenceService", got, Class::Label));
        let route: crate::gateway::PredictorRouteInput =
            serde_json::from_value(serde_json::json!({
                "parent": parent, "path": "/x", "gateway": {"name": "g"}
            }))
            .expect("input");
        let route = crate::gateway::predictor_route(&route).expect("builds");
        out.push(("HTTPRoute/aim", meta_name(&route.metadata), Class::Label));
    }
    let svc: crate::service::ServiceInput = serde_json::from_value(serde_json::json!({
        "parent": parent, "app": "zerfoo", "component": "serving",
        "selector": {"a": "b"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]
    }))
    .expect("input");
    let svc = crate::service::service(&svc).expect("builds");
    out.push(("Service", meta_name(&svc.metadata), Class::Dns1035));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn child_names_are_valid_short_and_deterministic(name in subdomain(), ns in namespace()) {
        let first = children(&name, &ns);
        for (kind, child, class) in &first {
            let ok = match class {
                Class::Dns1035 => is_dns1035_label(child),
                Class::Label => is_dns1123_label(child),
                Class::Subdomain => is_dns1123_subdomain(child),
            };
            prop_assert!(ok, "{} {}", kind, child);
        }
        prop_assert_eq!(&first, &children(&name, &ns));
        match aim::inference_service_name(&name, &ns) {
            Ok(isvc) => prop_assert!(isvc.as_str().len() + 11 + ns.len() <= 63),
            Err(_) => prop_assert!(ns.len() > 42),
        }
    }

    #[test]
    fn distinct_inputs_give_distinct_child_names(
        a in subdomain(), b in subdomain(), ns_a in namespace(), ns_b in namespace()
    ) {
        prop_assume!(a != b);
        // otterscale's EPP names sanitise `.` to `-`: `a.b` and `a-b` share `a-b-epp`
        // upstream, and kinfer keeps upstream's names for adoption.
        let same_epp = a.replace('.', "-") == b.replace('.', "-");
        // aim-engine's InferenceService and route names hash only the namespace, so two
        // services whose names sanitise alike, or are trimmed to the same prefix to fit
        // `<isvc>-predictor-<ns>` in 63 characters, collide upstream too. kinfer keeps the
        // rule for adoption; the state engine refuses to take over an object it does not own
        // (NameTaken), so a collision is reported, never silent.
        let aim_fits = |n: &str| n.len() + 9 <= 52usize.saturating_sub(ns_a.len());
        let aim_distinct = !same_epp && aim_fits(&a) && aim_fits(&b);
        for ((kind, x, _), (_, y, _)) in children(&a, &ns_a).iter().zip(children(&b, &ns_a)) {
            let epp_family = kind.contains("epp")
                || ["ConfigMap", "ServiceAccount", "Role", "RoleBinding", "ClusterRoleBinding", "Secret"]
                    .contains(kind);
            if same_epp && epp_family {
                continue;
            }
            let aim_family = *kind == "InferenceService" || *kind == "HTTPRoute/aim";
            if aim_family && !aim_distinct {
                continue;
            }
            prop_assert_ne!(x, &y, "{}", kind);
        }
        if ns_a != ns_b {
            let ja = aim::inference_service_name(&a, &ns_a);
            let jb = aim::inference_service_name(&a, &ns_b);
            if let (Ok(ja), Ok(jb)) = (ja, jb) {
                prop_assert_ne!(ja, jb);
            }
        }
    }

    #[test]
    fn label_values_are_always_valid(s in "\\PC{0,300}") {
        let v = sanitize_label_value(&s);
        prop_assert!(is_label_value(&v), "{v}");
        prop_assert_eq!(v, sanitize_label_value(&s));
        if let Some(v) = aim::aim_label_value(&s) {
            prop_assert!(is_label_value(&v), "{v}");
        }
    }

    #[test]
    fn dns1035_sanitising_always_gives_a_valid_name_body(s in "\\PC{0,300}") {
        let v = sanitize_dns1035(&s);
        // Not truncated (callers bound the length): every length is checked for its form.
        let bounded = if v.len() > 63 { v[..63].trim_end_matches('-') } else { v.as_str() };
        prop_assert!(is_dns1035_label(bounded), "{v}");
        prop_assert!(v.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'));
        prop_assert!(!v.ends_with('-'));
    }

    #[test]
    fn aim_derived_names_are_valid_labels(
        parts in proptest::collection::vec("\\PC{0,80}", 1..5),
        hash in "\\PC{0,40}",
        max in 12usize..=63,
    ) {
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        if let Ok(name) = aim::generate_derived_name(&refs, &[hash.as_str().into()], 8, max) {
            prop_assert!(is_dns1123_label(name.as_str()), "{name}");
            prop_assert!(name.as_str().len() <= max);
        }
    }
}

/// The upstream InferenceService rule is not injective, and kinfer keeps it for adoption:
/// pinned here so the behaviour is a decision, not a surprise.
#[test]
fn upstream_inference_service_names_collide_where_upstream_does() {
    let dotted = aim::inference_service_name("a.b", "team").expect("fits");
    let dashed = aim::inference_service_name("a-b", "team").expect("fits");
    assert_eq!(dotted, dashed);
    let long_ns = "a-a000-0a000aa-a0-0aa-a00-a0a--aa-aaa--00";
    let short = aim::inference_service_name("9", long_ns).expect("fits");
    let trimmed = aim::inference_service_name("9.0", long_ns).expect("fits");
    assert_eq!(short, trimmed);
    assert_ne!(
        aim::inference_service_name("chat", "team").expect("fits"),
        aim::inference_service_name("chat-2", "team").expect("fits")
    );
}
