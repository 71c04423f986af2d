//! The `validate()` and `warnings()` tables: every rule rejects its case with its field path,
//! and the upstream sample with its variants is accepted, each with exactly the warnings
//! expected. The base spec is inline, so this runs without `../shared`.

use crate::modelservice::*;

/// The upstream sample, inline so the rule table runs without `../shared`.
const BASE: &str = r"
apiVersion: model.otterscale.io/v1alpha1
kind: ModelService
metadata: {name: qwen3-32b, namespace: ml-serving}
spec:
  model:
    name: qwen/Qwen3-32B
    image: registry.example.com/models/qwen3-32b:v1
    imagePullSecrets: [{name: registry-creds}]
  engine:
    image: vllm/vllm-openai:v0.8.0
    args: [--max-model-len=8192, --enable-chunked-prefill]
    env:
      - {name: VLLM_NIXL_SIDE_CHANNEL_PORT, value: '5600'}
      - name: VLLM_NIXL_SIDE_CHANNEL_HOST
        valueFrom: {fieldRef: {fieldPath: status.podIP}}
  accelerator: {type: nvidia}
  decode:
    replicas: 2
    parallelism: {tensor: 4}
    resources: {requests: {cpu: '8', memory: 64Gi}}
  prefill:
    replicas: 1
    parallelism: {tensor: 4}
  routingProxy: {connector: nixlv2}
  inferencePool: {endpointPicker: {port: 9002}}
  httpRoute:
    gatewayRef: {name: inference-gateway, namespace: gateway-system}
    hostnames: [models.example.com, '*.example.org']
  monitoring: {podMonitor: {enabled: true, interval: 1m30s}}
";

fn base() -> ModelService {
    serde_saphyr::from_str(BASE).expect("BASE parses")
}

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    }
}

fn error_paths(ms: &ModelService) -> Vec<String> {
    match ms.validate() {
        Ok(()) => Vec::new(),
        Err(errors) => errors.iter().map(|e| e.path.clone()).collect(),
    }
}

fn warning_paths(ms: &ModelService) -> Vec<String> {
    ms.warnings().into_iter().map(|w| w.path).collect()
}

fn parallelism(ms: &mut ModelService) -> &mut ParallelismSpec {
    ms.spec
        .decode
        .parallelism
        .get_or_insert_with(ParallelismSpec::default)
}

fn pod_monitor(ms: &mut ModelService) -> &mut PodMonitorSpec {
    ms.spec
        .monitoring
        .as_mut()
        .and_then(|m| m.pod_monitor.as_mut())
        .expect("BASE has a pod monitor")
}

fn proxy(ms: &mut ModelService) -> &mut RoutingProxySpec {
    ms.spec
        .routing_proxy
        .as_mut()
        .expect("BASE has a routing proxy")
}

fn picker(ms: &mut ModelService) -> &mut EndpointPickerSpec {
    &mut ms
        .spec
        .inference_pool
        .as_mut()
        .expect("BASE has a pool")
        .endpoint_picker
}

fn route(ms: &mut ModelService) -> &mut HttpRouteSpec {
    ms.spec.http_route.as_mut().expect("BASE has a route")
}

/// A name, a change to the base spec, and the field paths expected: of the errors in
/// [`CASES`], of the warnings in [`ACCEPTED`].
pub(super) type Case = (&'static str, fn(&mut ModelService), &'static [&'static str]);

const CASES: &[Case] = &[
    (
        "prefill without routing proxy",
        |ms| ms.spec.routing_proxy = None,
        &["spec.routingProxy"],
    ),
    (
        "empty connector",
        |ms| proxy(ms).connector = String::new(),
        &["spec.routingProxy.connector"],
    ),
    (
        "target port equals engine port",
        |ms| proxy(ms).target_port = 8000,
        &["spec.routingProxy.targetPort"],
    ),
    (
        "target port out of range",
        |ms| proxy(ms).target_port = 70000,
        &["spec.routingProxy.targetPort"],
    ),
    (
        "engine port zero",
        |ms| ms.spec.engine.port = 0,
        &["spec.engine.port"],
    ),
    (
        "tensor zero",
        |ms| parallelism(ms).tensor = 0,
        &["spec.decode.parallelism.tensor"],
    ),
    (
        "prefill data local zero",
        |ms| {
            ms.spec
                .prefill
                .as_mut()
                .expect("BASE has prefill")
                .parallelism = Some(ParallelismSpec {
                tensor: 1,
                data: 1,
                data_local: 0,
            });
        },
        &["spec.prefill.parallelism.dataLocal"],
    ),
    (
        "all data ranks in one pod that requests GPUs for one",
        |ms| parallelism(ms).data = 2,
        &["spec.decode.parallelism.dataLocal"],
    ),
    (
        "all data ranks in one pod on AMD",
        |ms| {
            ms.spec.accelerator.r#type = AcceleratorType::Amd;
            parallelism(ms).data = 2;
        },
        &["spec.decode.parallelism.dataLocal"],
    ),
    (
        "multi-node data parallelism",
        |ms| {
            *parallelism(ms) = ParallelismSpec {
                tensor: 1,
                data: 4,
                data_local: 2,
            };
        },
        &["spec.decode.parallelism.data"],
    ),
    (
        "multi-node data parallelism on CPU",
        |ms| {
            ms.spec.accelerator.r#type = AcceleratorType::Cpu;
            *parallelism(ms) = ParallelismSpec {
                tensor: 1,
                data: 4,
                data_local: 2,
            };
        },
        &["spec.decode.parallelism.data"],
    ),
    (
        "data local above data",
        |ms| parallelism(ms).data_local = 2,
        &["spec.decode.parallelism.dataLocal"],
    ),
    (
        "negative replicas",
        |ms| ms.spec.decode.replicas = -1,
        &["spec.decode.replicas"],
    ),
    (
        "empty model name",
        |ms| ms.spec.model.name = String::new(),
        &["spec.model.name"],
    ),
    (
        "model name too long",
        |ms| ms.spec.model.name = "m".repeat(254),
        &["spec.model.name"],
    ),
    (
        "empty model image",
        |ms| ms.spec.model.image = String::new(),
        &["spec.model.image"],
    ),
    (
        "relative mount path",
        |ms| ms.spec.model.mount_path = "models".into(),
        &["spec.model.mountPath"],
    ),
    (
        "root mount path",
        |ms| ms.spec.model.mount_path = "/".into(),
        &["spec.model.mountPath"],
    ),
    (
        "mount path of the kit cache",
        |ms| ms.spec.model.mount_path = "/tmp/model-oci/".into(),
        &["spec.model.mountPath"],
    ),
    (
        "mount path of the registry credentials, with pull secrets",
        |ms| ms.spec.model.mount_path = "/.docker".into(),
        &["spec.model.mountPath"],
    ),
    (
        "empty pull secret name",
        |ms| ms.spec.model.image_pull_secrets[0].name = String::new(),
        &["spec.model.imagePullSecrets[0].name"],
    ),
    (
        "empty env name",
        |ms| ms.spec.engine.env.push(env("", "x")),
        &["spec.engine.env[2].name"],
    ),
    (
        "value and valueFrom",
        |ms| ms.spec.engine.env[1].value = Some("10.0.0.1".into()),
        &["spec.engine.env[1].valueFrom"],
    ),
    (
        "valueFrom without a source",
        |ms| ms.spec.engine.env[1].value_from = Some(EnvVarSource::default()),
        &["spec.engine.env[1].valueFrom"],
    ),
    (
        "NIXL port not a number",
        |ms| ms.spec.engine.env[0].value = Some("nixl".into()),
        &["spec.engine.env[0].value"],
    ),
    (
        "NIXL port on the vLLM port",
        |ms| ms.spec.engine.env[0].value = Some("8200".into()),
        &["spec.engine.env[0].value"],
    ),
    (
        "repeated NIXL port, the last one (which vLLM sees) not a number",
        |ms| {
            ms.spec
                .engine
                .env
                .push(env("VLLM_NIXL_SIDE_CHANNEL_PORT", "nixl"));
        },
        &["spec.engine.env[2].value"],
    ),
    (
        "EPP port on the health port",
        |ms| picker(ms).port = EPP_HEALTH_PORT,
        &["spec.inferencePool.endpointPicker.port"],
    ),
    (
        "EPP port on the metrics port",
        |ms| picker(ms).port = EPP_METRICS_PORT,
        &["spec.inferencePool.endpointPicker.port"],
    ),
    (
        "negative EPP replicas",
        |ms| picker(ms).replicas = -1,
        &["spec.inferencePool.endpointPicker.replicas"],
    ),
    (
        "empty gateway name",
        |ms| route(ms).gateway_ref.name = String::new(),
        &["spec.httpRoute.gatewayRef.name"],
    ),
    (
        "bad gateway namespace",
        |ms| route(ms).gateway_ref.namespace = Some("Gateway_System".into()),
        &["spec.httpRoute.gatewayRef.namespace"],
    ),
    (
        "bad hostname",
        |ms| route(ms).hostnames.push("Models.Example.com".into()),
        &["spec.httpRoute.hostnames[2]"],
    ),
    (
        "too many hostnames",
        |ms| route(ms).hostnames = (0..17).map(|i| format!("h{i}.example.com")).collect(),
        &["spec.httpRoute.hostnames"],
    ),
    (
        "bad scrape interval",
        |ms| pod_monitor(ms).interval = "30 seconds".into(),
        &["spec.monitoring.podMonitor.interval"],
    ),
    (
        "every violation at once",
        |ms| {
            ms.spec.routing_proxy = None;
            ms.spec.engine.port = 0;
            parallelism(ms).data = 4;
        },
        &[
            "spec.engine.port",
            "spec.decode.parallelism.dataLocal",
            "spec.routingProxy",
        ],
    ),
];

/// Specs upstream accepts and runs: valid, with exactly these warnings.
const ACCEPTED: &[Case] = &[
    (
        "no prefill and no routing proxy",
        |ms| {
            ms.spec.prefill = None;
            ms.spec.routing_proxy = None;
        },
        &[],
    ),
    (
        "in-pod data parallelism",
        |ms| {
            *parallelism(ms) = ParallelismSpec {
                tensor: 2,
                data: 2,
                data_local: 2,
            };
        },
        &[],
    ),
    (
        "route without pool",
        |ms| ms.spec.inference_pool = None,
        &[],
    ),
    (
        "empty scrape interval",
        |ms| pod_monitor(ms).interval = String::new(),
        &[],
    ),
    (
        "empty mount path is upstream's /models",
        |ms| ms.spec.model.mount_path = String::new(),
        &[],
    ),
    (
        "mount path /.docker without pull secrets",
        |ms| {
            ms.spec.model.image_pull_secrets.clear();
            ms.spec.model.mount_path = "/.docker".into();
        },
        &[],
    ),
    (
        "duplicate env name",
        |ms| {
            ms.spec
                .engine
                .env
                .push(env("VLLM_NIXL_SIDE_CHANNEL_HOST", "x"));
        },
        &["spec.engine.env[2].name"],
    ),
    (
        "generated env names",
        |ms| {
            for name in ["TP_SIZE", "DP_SIZE", "DP_SIZE_LOCAL"] {
                ms.spec.engine.env.push(env(name, "2"));
            }
        },
        &[
            "spec.engine.env[2].name",
            "spec.engine.env[3].name",
            "spec.engine.env[4].name",
        ],
    ),
    (
        "repeated NIXL port, the last one (which vLLM sees) valid",
        |ms| {
            ms.spec.engine.env[0].value = Some("nixl".into());
            ms.spec
                .engine
                .env
                .push(env("VLLM_NIXL_SIDE_CHANNEL_PORT", "5601"));
        },
        &["spec.engine.env[2].name"],
    ),
    (
        "fileKeyRef",
        |ms| {
            let source = ms.spec.engine.env[1]
                .value_from
                .as_mut()
                .expect("BASE has valueFrom");
            source.field_ref = None;
            source.file_key_ref = Some(FileKeySelector {
                key: "K".into(),
                optional: false,
                path: "env".into(),
                volume_name: "v".into(),
            });
        },
        &[],
    ),
    (
        "bad scrape interval while PodMonitors are disabled",
        |ms| {
            let pm = pod_monitor(ms);
            pm.enabled = false;
            pm.interval = "30 seconds".into();
        },
        &[],
    ),
    (
        "all data ranks in one CPU pod",
        |ms| {
            ms.spec.accelerator.r#type = AcceleratorType::Cpu;
            parallelism(ms).data = 4;
        },
        &["spec.decode.parallelism.dataLocal"],
    ),
    (
        "all data ranks in one TPU pod",
        |ms| {
            ms.spec.accelerator.r#type = AcceleratorType::Google;
            parallelism(ms).data = 2;
        },
        &["spec.decode.parallelism.dataLocal"],
    ),
    (
        "engine.args overrides the data-parallel flags",
        |ms| {
            *parallelism(ms) = ParallelismSpec {
                tensor: 1,
                data: 4,
                data_local: 2,
            };
            ms.spec.engine.args.push("--data-parallel-size=2".into());
        },
        &["spec.decode.parallelism.data"],
    ),
];

#[test]
fn the_base_spec_is_valid() {
    assert_eq!(error_paths(&base()), Vec::<String>::new());
    assert_eq!(warning_paths(&base()), Vec::<String>::new());
}

/// Checks every row of an error table (each case rejected with exactly its paths) and reports
/// every mismatch, not just the first.
pub(super) fn assert_rejected(cases: &[Case]) {
    let mut mismatches = Vec::new();
    for (name, mutate, expected) in cases {
        let mut ms = base();
        mutate(&mut ms);
        let errors = error_paths(&ms);
        if errors != *expected {
            mismatches.push(format!("{name}: errors {errors:?}, expected {expected:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Checks every row of an accepted table (no error, exactly the warnings' paths).
pub(super) fn assert_accepted(cases: &[Case]) {
    let mut mismatches = Vec::new();
    for (name, mutate, expected) in cases {
        let mut ms = base();
        mutate(&mut ms);
        let (errors, warnings) = (error_paths(&ms), warning_paths(&ms));
        if !errors.is_empty() || warnings != *expected {
            mismatches.push(format!(
                "{name}: errors {errors:?}, warnings {warnings:?}, expected warnings {expected:?}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn each_rule_rejects_with_its_field_path() {
    assert_rejected(CASES);
}

#[test]
fn accepted_variants_with_their_warnings() {
    assert_accepted(ACCEPTED);
}

#[test]
fn messages_say_what_to_set() {
    let mut ms = base();
    parallelism(&mut ms).data = 2;
    let errors = ms.validate().expect_err("data 2 on one GPU set is invalid");
    let message = &errors.iter().next().expect("one error").message;
    assert!(
        message.contains("8 nvidia.com/gpu") && message.contains("set dataLocal to 2"),
        "{message}"
    );

    let mut ms = base();
    ms.spec.engine.env.push(env("TP_SIZE", "8"));
    let warnings = ms.warnings();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].message.contains("parallelism.tensor"),
        "{}",
        warnings[0].message
    );
}

#[test]
fn role_engine_overrides_follow_the_env_and_data_parallel_rules_per_role() {
    // Overriding a shared variable by name is the point: no warning.
    let mut ms = base();
    ms.spec.decode.engine = Some(RoleEngineSpec {
        args: vec!["--enforce-eager".into()],
        env: vec![env("VLLM_NIXL_SIDE_CHANNEL_PORT", "5601")],
    });
    assert_eq!(error_paths(&ms), Vec::<String>::new());
    assert_eq!(warning_paths(&ms), Vec::<String>::new());

    // The role's own list: a bad NIXL port, a repeated name, a replaced generated variable.
    ms.spec.decode.engine = Some(RoleEngineSpec {
        args: Vec::new(),
        env: vec![
            env("A", "1"),
            env("A", "2"),
            env("TP_SIZE", "8"),
            env("VLLM_NIXL_SIDE_CHANNEL_PORT", "8000"),
        ],
    });
    assert_eq!(
        error_paths(&ms),
        ["spec.decode.engine.env[3].value"],
        "8000 is the serving port"
    );
    assert_eq!(
        warning_paths(&ms),
        [
            "spec.decode.engine.env[1].name",
            "spec.decode.engine.env[2].name"
        ]
    );
    let text = ms.warnings()[1].message.clone();
    assert!(text.contains("in this role"), "{text}");

    // A role's args that set the data-parallel layout demote that role's layout error.
    let mut ms = base();
    *parallelism(&mut ms) = ParallelismSpec {
        tensor: 1,
        data: 4,
        data_local: 2,
    };
    assert_eq!(error_paths(&ms), ["spec.decode.parallelism.data"]);
    ms.spec.decode.engine = Some(RoleEngineSpec {
        args: vec!["--data-parallel-size=2".into()],
        env: Vec::new(),
    });
    assert_eq!(error_paths(&ms), Vec::<String>::new());
    assert_eq!(warning_paths(&ms), ["spec.decode.parallelism.data"]);
}
