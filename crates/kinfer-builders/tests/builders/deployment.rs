use k8s_openapi::api::apps::v1::Deployment;
use kinfer_builders::Warning;
use kinfer_builders::deployment::{ENGINE_HOME, ModelDeploymentInput, model_deployment};
use kinfer_builders::monitoring::Otel;
use serde_json::Value;

use crate::common::{assert_core_valid, input};
use crate::snapshot;

fn build(name: &str) -> (Deployment, Vec<Warning>, Value) {
    let built = model_deployment(&input::<ModelDeploymentInput>(name)).expect("builds");
    assert_core_valid(&built.deployment);
    let json = serde_json::to_value(&built.deployment).expect("json");
    (built.deployment, built.warnings, json)
}

#[test]
fn decode_validates_and_snapshots() {
    let (deployment, warnings, _) = build("deployment-decode");
    assert!(warnings.is_empty());
    snapshot!("deployment_decode", &deployment);
}

#[test]
fn prefill_validates_and_snapshots() {
    let (deployment, _, _) = build("deployment-prefill");
    snapshot!("deployment_prefill", &deployment);
}

#[test]
fn gpu_count_comes_from_parallelism() {
    let (_, _, json) = build("deployment-decode");
    let vllm = &json["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(vllm["resources"]["limits"]["nvidia.com/gpu"], "2");
    assert_eq!(vllm["resources"]["requests"]["nvidia.com/gpu"], "2");
    assert_eq!(vllm["resources"]["requests"]["cpu"], "8");
}

#[test]
fn user_set_gpu_count_wins_with_a_warning() {
    let (_, warnings, json) = build("deployment-prefill");
    let vllm = &json["spec"]["template"]["spec"]["containers"][0];
    // tensor 4 x dataLocal 2 = 8 computed; the user asked for 4.
    assert_eq!(vllm["resources"]["limits"]["amd.com/gpu"], "4");
    assert_eq!(vllm["resources"]["requests"]["amd.com/gpu"], "4");
    assert_eq!(
        warnings,
        [Warning::AcceleratorCountOverridden {
            resource: "amd.com/gpu".to_owned(),
            computed: 8,
            requested: "4".to_owned(),
        }]
    );
}

/// A role whose resources name a device resource (a MIG slice of the vendor, a vGPU profile)
/// keeps it, and no whole GPU is added beside it; a network device (RDMA, the vendor's own) is
/// no accelerator.
#[test]
fn a_device_resource_the_user_names_replaces_the_whole_gpu() {
    let with = |resources: serde_json::Value| {
        let mut input = input::<ModelDeploymentInput>("deployment-decode");
        input.resources = Some(serde_json::from_value(resources).expect("resources"));
        let built = model_deployment(&input).expect("builds");
        assert_core_valid(&built.deployment);
        let json = serde_json::to_value(&built.deployment).expect("json");
        json["spec"]["template"]["spec"]["containers"][0]["resources"].clone()
    };
    for device in ["nvidia.com/mig-1g.10gb", "otterscale.com/vgpu"] {
        let r = with(serde_json::json!({"limits": {device: "2"}}));
        assert_eq!(r["limits"][device], "2", "{device}");
        assert_eq!(
            r["requests"][device], "2",
            "{device}: requests follow limits"
        );
        assert!(r["limits"].get("nvidia.com/gpu").is_none(), "{device}: {r}");
        assert!(
            r["requests"].get("nvidia.com/gpu").is_none(),
            "{device}: {r}"
        );
    }
    for nic in ["rdma/ib", "nvidia.com/hostdev"] {
        let r = with(serde_json::json!({"limits": {nic: "1"}, "requests": {nic: "1"}}));
        assert_eq!(r["limits"][nic], "1");
        assert_eq!(r["limits"]["nvidia.com/gpu"], "2", "{nic} is no GPU: {r}");
    }
}

#[test]
fn routing_proxy_moves_vllm_and_probes_to_the_target_port() {
    let (_, _, json) = build("deployment-decode");
    let pod = &json["spec"]["template"]["spec"];
    let args: Vec<&str> = pod["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        &args[..5],
        [
            "/models",
            "--port",
            "8200",
            "--served-model-name",
            "meta-llama/Llama-3.1-8B-Instruct"
        ]
    );
    assert_eq!(
        &args[5..],
        ["--tensor-parallel-size", "2", "--max-model-len", "8192"]
    );
    assert_eq!(pod["initContainers"][1]["name"], "routing-proxy");
    assert_eq!(pod["initContainers"][1]["restartPolicy"], "Always");
    assert_eq!(pod["containers"][0]["ports"][0]["containerPort"], 8200);
    assert_eq!(pod["containers"][0]["ports"][1]["name"], "nixl-side");
    assert_eq!(
        pod["containers"][0]["readinessProbe"]["httpGet"]["port"],
        "http"
    );
    // Prefill pods never get the proxy.
    let (_, _, prefill) = build("deployment-prefill");
    assert_eq!(
        prefill["spec"]["template"]["spec"]["initContainers"]
            .as_array()
            .expect("init")
            .len(),
        1
    );
}

#[test]
fn user_env_overrides_generated_env_in_place() {
    let (_, _, json) = build("deployment-decode");
    let env = json["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .clone();
    let names: Vec<&str> = env.iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "TP_SIZE",
            "DP_SIZE",
            "DP_SIZE_LOCAL",
            "HOME",
            "VLLM_NIXL_SIDE_CHANNEL_PORT"
        ]
    );
    assert_eq!(env[0]["value"], "2");
}

#[test]
fn pod_template_carries_pool_labels_and_no_version_and_shm_and_probes() {
    let (deployment, _, json) = build("deployment-decode");
    let labels = &json["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["llm-d.ai/inferenceServing"], "true");
    assert_eq!(labels["llm-d.ai/role"], "decode");
    assert!(
        !labels
            .as_object()
            .expect("labels")
            .keys()
            .any(|k| k.contains("version"))
    );
    let selector = deployment
        .spec
        .as_ref()
        .expect("spec")
        .selector
        .match_labels
        .clone()
        .expect("labels");
    for (k, v) in &selector {
        assert_eq!(
            labels[k.as_str()],
            v.as_str(),
            "selector {k} matches the pod"
        );
    }
    let pod = &json["spec"]["template"]["spec"];
    assert_eq!(pod["volumes"][2]["emptyDir"]["medium"], "Memory");
    assert_eq!(
        pod["containers"][0]["startupProbe"]["failureThreshold"],
        180
    );
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    // An explicit non-root user: an engine image whose USER is root starts under
    // runAsNonRoot, with a HOME it owns.
    for key in ["runAsUser", "runAsGroup", "fsGroup"] {
        assert_eq!(pod["securityContext"][key], 65532, "{key}");
    }
    let vllm = &pod["containers"][0];
    let home = vllm["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "HOME")
        .expect("HOME");
    assert_eq!(home["value"], ENGINE_HOME);
    let mount = vllm["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["mountPath"] == ENGINE_HOME)
        .expect("HOME is mounted");
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("its volume");
    assert!(volume["emptyDir"].is_object(), "{volume}");
    assert_ne!(mount["readOnly"], true);
    assert_eq!(json["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0);
    assert_eq!(json["metadata"]["name"], "llama-decode");
}

#[test]
fn without_an_identity_the_pod_runs_as_the_image_or_the_platform_says() {
    let mut input = input::<ModelDeploymentInput>("deployment-decode");
    input.pod_identity = None;
    let built = model_deployment(&input).expect("builds");
    let pod = built.deployment.spec.unwrap().template.spec.unwrap();
    let sc = pod.security_context.unwrap();
    assert_eq!((sc.run_as_user, sc.fs_group), (None, None));
    assert_eq!(sc.run_as_non_root, Some(true), "still never root");
}

#[test]
fn unpack_uses_tls_unless_asked_and_mounts_the_first_pull_secret() {
    let (_, _, json) = build("deployment-decode");
    let unpack = &json["spec"]["template"]["spec"]["initContainers"][0];
    assert!(
        !unpack["command"][2]
            .as_str()
            .expect("script")
            .contains("--plain-http")
    );
    assert_eq!(unpack["volumeMounts"][2]["mountPath"], "/.docker");
    assert_eq!(unpack["securityContext"]["readOnlyRootFilesystem"], true);
}

#[test]
fn pull_secrets_are_optional_skipped_without_a_config_and_followed_by_an_anonymous_attempt() {
    let mut i: ModelDeploymentInput = input("deployment-decode");
    i.model.image_pull_secrets = vec!["dockerconfigjson".into(), "legacy-dockercfg".into()];
    let d = model_deployment(&i).expect("builds").deployment;
    assert_core_valid(&d);
    let json = serde_json::to_value(&d).expect("json");
    let pod = &json["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == "docker-config")
        .expect("docker-config volume");
    let sources = volume["projected"]["sources"].as_array().expect("sources");
    assert_eq!(sources.len(), 2);
    for (n, source) in sources.iter().enumerate() {
        // A kubernetes.io/dockercfg secret has no .dockerconfigjson: the mount must not fail.
        assert_eq!(source["secret"]["optional"], true, "source {n}");
        assert_eq!(
            source["secret"]["items"][0]["path"],
            format!("{n}/config.json")
        );
    }
    let script = pod["initContainers"][0]["command"][2]
        .as_str()
        .expect("script");
    assert!(
        script.contains(
            "for config in /.docker/0 /.docker/1; do [ -f \"$config/config.json\" ] || continue;"
        ),
        "{script}"
    );
    // After the loop, one attempt without DOCKER_CONFIG (anonymous), whose status is the script's.
    let after = script.rsplit_once("done;").expect("loop").1;
    assert!(
        after.trim_end().ends_with("-o -d \"$MODEL_MOUNT_PATH\""),
        "{script}"
    );
    assert!(!after.contains("DOCKER_CONFIG"), "{script}");
    assert!(!after.contains("exit 1"), "{script}");
}

#[test]
fn routing_proxy_optional_flags_follow_upstream_order_and_tracing_adds_otel_env() {
    let mut i: ModelDeploymentInput = input("deployment-decode");
    let proxy_of = |i: &ModelDeploymentInput| {
        let d = model_deployment(i).expect("builds").deployment;
        assert_core_valid(&d);
        d.spec
            .and_then(|s| s.template.spec)
            .and_then(|p| p.init_containers)
            .into_iter()
            .flatten()
            .find(|c| c.name == "routing-proxy")
            .expect("proxy")
    };
    let plain = proxy_of(&i);
    assert_eq!(
        plain.args.as_deref().expect("args"),
        [
            "--port=8000",
            "--vllm-port=8200",
            "--connector=nixlv2",
            "--secure-proxy=false"
        ]
    );
    assert!(plain.env.is_none());

    let proxy = i.routing_proxy.as_mut().expect("proxy");
    proxy.zap_encoder = Some("json".into());
    proxy.zap_log_level = Some(String::new()); // empty: not passed
    proxy.prefiller_use_tls = Some(true);
    proxy.cert_path = Some("/certs".into());
    proxy.secure_proxy = true;
    i.tracing = Some(Otel {
        endpoint: "http://otel:4317".into(),
        sampler: "parentbased_traceidratio".into(),
        sampler_arg: String::new(),
    });
    let c = proxy_of(&i);
    assert_eq!(
        c.args.as_deref().expect("args"),
        [
            "--port=8000",
            "--vllm-port=8200",
            "--connector=nixlv2",
            "--zap-encoder=json",
            "--secure-proxy=true",
            "--prefiller-use-tls=true",
            "--cert-path=/certs"
        ]
    );
    let env: Vec<(String, String)> = c
        .env
        .expect("env")
        .into_iter()
        .map(|v| (v.name, v.value.unwrap_or_default()))
        .collect();
    assert_eq!(
        env,
        [
            ("OTEL_SERVICE_NAME", "llm-d-routing-sidecar"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel:4317"),
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
    // Tracing never reaches the engine container.
    let d = model_deployment(&i).expect("builds").deployment;
    let vllm = &d.spec.expect("spec").template.spec.expect("pod").containers[0];
    assert!(
        !vllm
            .env
            .iter()
            .flatten()
            .any(|v| v.name.starts_with("OTEL_"))
    );
}
