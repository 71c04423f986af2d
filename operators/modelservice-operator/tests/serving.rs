//! The serving Deployments: decode only, prefill/decode with the routing proxy, validation,
//! accelerator counts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{Harness, condition, container, containers, gpu, has, minimal, sample};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

#[tokio::test]
async fn decode_only() {
    let Some(s) = sample("01-") else { return };
    let h = Harness::start().await;
    h.create(&s).await;
    let ms = h.wait_ready("default", "test-modelservice").await;
    assert!(has(&ms, "InferencePoolAccepted", "True"));
    assert!(has(&ms, "HTTPRouteAccepted", "True"));
    let d: Deployment = h.get("default", "test-modelservice-decode").await.unwrap();
    assert!(
        h.get::<Deployment>("default", "test-modelservice-prefill")
            .await
            .is_none()
    );
    let names: Vec<String> = containers(&d).into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["model-unpack", "vllm"]);
    let vllm = container(&d, "vllm");
    assert_eq!(gpu(&vllm, "nvidia.com/gpu"), ("1".into(), "1".into()));
    assert!(vllm.readiness_probe.is_some() && vllm.startup_probe.is_some());
    // No operator version on the pod template or selector.
    let spec = d.spec.as_ref().unwrap();
    let pod_labels = spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    assert!(!pod_labels.keys().any(|k| k.contains("version")));
    assert_eq!(pod_labels["llm-d.ai/role"], "decode");
    let cm: ConfigMap = h
        .get("default", "test-modelservice-epp-config")
        .await
        .unwrap();
    assert!(cm.data.unwrap().contains_key("default-plugins.yaml"));
    let pool: kinfer_api::inference_pool::InferencePool =
        h.get("default", "test-modelservice").await.unwrap();
    assert_eq!(
        pool.spec.endpoint_picker_ref.failure_mode,
        Some(kinfer_api::inference_pool::FailureMode::FailClose)
    );
    let route: gateway_api::httproutes::HttpRoute =
        h.get("default", "test-modelservice").await.unwrap();
    let parent = &route.spec.parent_refs.as_ref().unwrap()[0];
    assert_eq!(parent.name, "otterscale-llm-d-infra-inference-gateway");
    assert_eq!(parent.namespace.as_deref(), Some("llm-d"));
    assert!(route.spec.rules.as_ref().unwrap()[0].timeouts.is_some());
}

#[tokio::test]
async fn prefill_decode_with_routing_proxy() {
    let Some(s) = sample("03-") else { return };
    let h = Harness::start().await;
    h.create(&s).await;
    let ms = h.wait_ready("llm-d", "qwen3-8b-pd").await;
    assert!(has(&ms, "PrefillAvailable", "True"));
    let decode: Deployment = h.get("llm-d", "qwen3-8b-pd-decode").await.unwrap();
    let names: Vec<String> = containers(&decode).into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["model-unpack", "routing-proxy", "vllm"]);
    let proxy = container(&decode, "routing-proxy");
    assert_eq!(proxy.restart_policy.as_deref(), Some("Always"));
    let args = proxy.args.unwrap();
    for a in [
        "--port=8000",
        "--vllm-port=8200",
        "--connector=nixlv2",
        "--secure-proxy=false",
    ] {
        assert!(args.contains(&a.to_owned()), "{args:?}");
    }
    let vllm = container(&decode, "vllm");
    let ports: BTreeMap<String, i32> = vllm
        .ports
        .unwrap()
        .into_iter()
        .map(|p| (p.name.unwrap_or_default(), p.container_port))
        .collect();
    assert_eq!(ports["http"], 8200);
    assert_eq!(ports["nixl-side"], 5600);
    // Probes hit the engine behind the sidecar, on the named `http` (8200) port.
    let probe = vllm.readiness_probe.unwrap().http_get.unwrap();
    assert_eq!(
        probe.port,
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("http".into())
    );
    let prefill: Deployment = h.get("llm-d", "qwen3-8b-pd-prefill").await.unwrap();
    assert!(
        !containers(&prefill)
            .iter()
            .any(|c| c.name == "routing-proxy")
    );
    let args = container(&prefill, "vllm").args.unwrap();
    assert!(args.windows(2).any(|w| w == ["--port", "8000"]), "{args:?}");
    let epp: Deployment = h.get("llm-d", "qwen3-8b-pd-epp").await.unwrap();
    assert!(
        container(&epp, "epp")
            .args
            .unwrap()
            .contains(&"--config-file=/config/pd-config.yaml".to_owned())
    );
    let pm: kinfer_api::monitoring::PodMonitor =
        h.get("llm-d", "qwen3-8b-pd-prefill").await.unwrap();
    assert_eq!(pm.spec.selector.match_labels["llm-d.ai/role"], "prefill");
}

#[tokio::test]
async fn prefill_without_routing_proxy_is_rejected_with_a_field_path() {
    let h = Harness::start().await;
    let mut ms = minimal("no-proxy", "default");
    ms["spec"]["prefill"] = json!({"replicas": 1});
    h.create(&ms).await;
    let ms = h
        .wait_ms("default", "no-proxy", "phase Failed", |ms| {
            ms.status
                .as_ref()
                .and_then(|s| s.phase)
                .is_some_and(|p| p.as_str() == "Failed")
        })
        .await;
    let c = condition(&ms, "SpecValid").unwrap();
    assert_eq!(c.status, "False");
    assert_eq!(c.reason, "InvalidSpec");
    assert!(c.message.contains("spec.routingProxy"), "{}", c.message);
    assert!(has(&ms, "Ready", "False"));
    assert!(
        h.get::<Deployment>("default", "no-proxy-decode")
            .await
            .is_none()
    );
}

#[tokio::test]
async fn tensor4_data_local2_on_amd_requests_8_gpus() {
    let h = Harness::start().await;
    let mut ms = minimal("amd-tp4", "default");
    ms["spec"]["accelerator"]["type"] = json!("amd");
    ms["spec"]["decode"]["parallelism"] = json!({"tensor": 4, "data": 2, "dataLocal": 2});
    h.create(&ms).await;
    h.wait_ready("default", "amd-tp4").await;
    let d: Deployment = h.get("default", "amd-tp4-decode").await.unwrap();
    let vllm = container(&d, "vllm");
    assert_eq!(gpu(&vllm, "amd.com/gpu"), ("8".into(), "8".into()));
    let args = vllm.args.unwrap();
    assert!(
        args.windows(2)
            .any(|w| w == ["--tensor-parallel-size", "4"])
    );
    assert!(
        args.windows(2)
            .any(|w| w == ["--data-parallel-size-local", "2"])
    );
    // /dev/shm for tensor parallelism.
    let pod = d.spec.unwrap().template.spec.unwrap();
    assert!(pod.volumes.unwrap().iter().any(|v| {
        v.empty_dir
            .as_ref()
            .is_some_and(|e| e.medium.as_deref() == Some("Memory"))
    }));
}

/// A role that names a MIG slice gets that slice and no whole GPU beside it.
#[tokio::test]
async fn a_mig_slice_the_role_names_is_kept_without_a_whole_gpu() {
    let h = Harness::start().await;
    let mut ms = minimal("mig", "default");
    ms["spec"]["decode"]["resources"] = json!({"limits": {"nvidia.com/mig-1g.10gb": "1"}});
    h.create(&ms).await;
    h.wait_ready("default", "mig").await;
    let d: Deployment = h.get("default", "mig-decode").await.unwrap();
    let vllm = container(&d, "vllm");
    assert_eq!(
        gpu(&vllm, "nvidia.com/mig-1g.10gb"),
        ("1".into(), "1".into())
    );
    let resources = vllm.resources.unwrap_or_default();
    for list in [resources.limits, resources.requests] {
        assert!(
            !list.unwrap_or_default().contains_key("nvidia.com/gpu"),
            "a whole GPU beside the slice"
        );
    }
}

#[tokio::test]
async fn user_gpu_count_wins_with_a_warning_condition() {
    let h = Harness::start().await;
    let mut ms = minimal("user-gpus", "default");
    ms["spec"]["decode"]["parallelism"] = json!({"tensor": 4});
    ms["spec"]["decode"]["resources"] = json!({"limits": {"nvidia.com/gpu": "2"}});
    h.create(&ms).await;
    let ms = h.wait_ready("default", "user-gpus").await;
    let d: Deployment = h.get("default", "user-gpus-decode").await.unwrap();
    assert_eq!(
        gpu(&container(&d, "vllm"), "nvidia.com/gpu"),
        ("2".into(), "2".into())
    );
    let c = condition(&ms, "SpecValid").unwrap();
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "SpecValidWithWarnings")
    );
    assert!(
        c.message.contains("nvidia.com/gpu") && c.message.contains('4'),
        "{}",
        c.message
    );
}
