//! The rules of fields copied into the pods unchanged (`validate/pod.rs`, and env names): each
//! value a real API server refuses in a pod template (or that stops vLLM at start-up) is an
//! error at the spec field it came from; the values it accepts pass without warnings.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ResourceClaim, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::rules::{Case, assert_accepted, assert_rejected};
use crate::modelservice::*;

fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
    let set = |v: &str| (!v.is_empty()).then(|| v.to_owned());
    Toleration {
        key: set(key),
        operator: set(operator),
        value: set(value),
        effect: set(effect),
        toleration_seconds: None,
    }
}

fn resources(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> ResourceRequirements {
    let list = |pairs: &[(&str, &str)]| {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
                .collect::<BTreeMap<_, _>>()
        })
    };
    ResourceRequirements {
        requests: list(requests),
        limits: list(limits),
        claims: None,
    }
}

fn args(ms: &mut ModelService, extra: &[&str]) {
    ms.spec.engine.args = extra.iter().map(|a| (*a).to_owned()).collect();
}

const CASES: &[Case] = &[
    (
        "engine image with white space",
        |ms| ms.spec.engine.image = Some(" vllm/vllm-openai:v0.8.0".into()),
        &["spec.engine.image"],
    ),
    (
        "model image with white space",
        |ms| ms.spec.model.image = "   ".into(),
        &["spec.model.image"],
    ),
    (
        "routing proxy image with white space",
        |ms| ms.spec.routing_proxy.as_mut().unwrap().image = Some("proxy\n".into()),
        &["spec.routingProxy.image"],
    ),
    (
        "unknown pull policy",
        |ms| ms.spec.engine.image_pull_policy = Some("always".into()),
        &["spec.engine.imagePullPolicy"],
    ),
    (
        "broken JSON after a JSON flag",
        |ms| {
            args(
                ms,
                &[
                    "--max-model-len=8192",
                    "--kv-transfer-config",
                    "{\"kv_role\": ",
                ],
            );
        },
        &["spec.engine.args[2]"],
    ),
    (
        "broken JSON in --flag=value form, underscores",
        |ms| args(ms, &["--compilation_config=[1, 2"]),
        &["spec.engine.args[0]"],
    ),
    (
        "broken JSON in a role's args",
        |ms| {
            ms.spec.decode.engine = Some(RoleEngineSpec {
                args: vec!["--hf-overrides={".into()],
                env: Vec::new(),
            });
        },
        &["spec.decode.engine.args[0]"],
    ),
    (
        "env name with '=' and a non-ASCII one",
        |ms| {
            ms.spec.engine.env.push(EnvVar::new("A=B", "1"));
            ms.spec.engine.env.push(EnvVar::new("имя", "1"));
        },
        &["spec.engine.env[2].name", "spec.engine.env[3].name"],
    ),
    (
        "node selector key and value",
        |ms| {
            ms.spec.decode.node_selector = BTreeMap::from([
                ("Bad Key".into(), "v".into()),
                ("ok".into(), "x".repeat(64)),
            ]);
        },
        &[
            "spec.decode.nodeSelector[Bad Key]",
            "spec.decode.nodeSelector[ok]",
        ],
    ),
    (
        "pod annotation key",
        |ms| {
            ms.spec.prefill.as_mut().unwrap().annotations =
                BTreeMap::from([("a/b/c".into(), "v".into())]);
        },
        &["spec.prefill.annotations[a/b/c]"],
    ),
    (
        "tolerations",
        |ms| {
            let mut seconds = toleration("k", "Equal", "v", "NoSchedule");
            seconds.toleration_seconds = Some(60);
            ms.spec.decode.tolerations = vec![
                toleration("", "Equal", "v", ""),
                toleration("k", "Exists", "v", ""),
                toleration("k", "In", "", "NoSchedule"),
                toleration("k", "", "", "Never"),
                seconds,
            ];
        },
        &[
            "spec.decode.tolerations[0].operator",
            "spec.decode.tolerations[1].value",
            "spec.decode.tolerations[2].operator",
            "spec.decode.tolerations[3].effect",
            "spec.decode.tolerations[4].tolerationSeconds",
        ],
    ),
    (
        "resources: names, signs, request above limit, extended without limit, claims",
        |ms| {
            let mut r = resources(
                &[("cpu", "8"), ("memory", "-1Gi"), ("example.com/fpga", "1")],
                &[("cpu", "2"), ("Bad Name", "1"), ("gpus", "1")],
            );
            r.claims = Some(vec![ResourceClaim {
                name: "c".into(),
                request: None,
            }]);
            ms.spec.decode.resources = Some(r);
        },
        &[
            "spec.decode.resources.claims",
            "spec.decode.resources.requests[memory]",
            "spec.decode.resources.limits[Bad Name]",
            "spec.decode.resources.limits[gpus]",
            "spec.decode.resources.requests[cpu]",
            "spec.decode.resources.requests[example.com/fpga]",
        ],
    ),
    (
        "extended resources: fractions and unequal requests",
        |ms| {
            ms.spec.decode.resources = Some(resources(
                &[("example.com/fpga", "1"), ("hugepages-1Gi", "2Gi")],
                &[("example.com/fpga", "2"), ("example.com/nic", "0.5")],
            ));
        },
        &[
            "spec.decode.resources.limits[example.com/nic]",
            "spec.decode.resources.requests[example.com/fpga]",
            "spec.decode.resources.requests[hugepages-1Gi]",
        ],
    ),
    (
        "Endpoint Picker image and resources",
        |ms| {
            let picker = &mut ms.spec.inference_pool.as_mut().unwrap().endpoint_picker;
            picker.image = Some(" epp".into());
            picker.resources = Some(resources(&[("cpu", "1e400")], &[]));
        },
        &[
            "spec.inferencePool.endpointPicker.image",
            "spec.inferencePool.endpointPicker.resources.requests[cpu]",
        ],
    ),
    (
        "Gateway name over 253 characters",
        |ms| ms.spec.http_route.as_mut().unwrap().gateway_ref.name = "g".repeat(254),
        &["spec.httpRoute.gatewayRef.name"],
    ),
];

const ACCEPTED: &[Case] = &[
    (
        "JSON flags with JSON, a level, a dotted form",
        |ms| {
            args(
                ms,
                &[
                    "--kv-transfer-config",
                    "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}",
                    "--compilation-config=3",
                    "--compilation-config.level",
                    "3",
                    "--kv-transfer-config",
                ],
            );
        },
        &[],
    ),
    (
        "pod fields a real API server accepts",
        |ms| {
            let decode = &mut ms.spec.decode;
            decode.node_selector = BTreeMap::from([
                (
                    "nvidia.com/gpu.product".into(),
                    "NVIDIA-H100-80GB-HBM3".into(),
                ),
                ("empty".into(), String::new()),
            ]);
            decode.annotations =
                BTreeMap::from([("sidecar.istio.io/inject".into(), "false".into())]);
            let mut seconds =
                toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute");
            seconds.toleration_seconds = Some(300);
            decode.tolerations = vec![
                toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
                toleration("", "Exists", "", ""),
                toleration("dedicated", "", "inference", "PreferNoSchedule"),
                seconds,
            ];
            ms.spec.engine.image_pull_policy = Some("IfNotPresent".into());
        },
        &[],
    ),
    (
        "the accelerator resource in requests only (the operator sets both)",
        |ms| {
            ms.spec.decode.resources = Some(resources(
                &[
                    ("nvidia.com/gpu", "4"),
                    ("cpu", "500m"),
                    ("hugepages-2Mi", "1Gi"),
                ],
                &[
                    ("cpu", "2"),
                    ("ephemeral-storage", "10Gi"),
                    ("hugepages-2Mi", "1Gi"),
                ],
            ));
        },
        &[],
    ),
];

#[test]
fn each_pod_rule_rejects_with_its_field_path() {
    assert_rejected(CASES);
}

#[test]
fn pod_values_a_real_api_server_accepts_pass() {
    assert_accepted(ACCEPTED);
}
