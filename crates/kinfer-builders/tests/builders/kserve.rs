use kinfer_api::kserve::{ClusterServingRuntime, InferenceService, ServingRuntime};
use kinfer_builders::kserve::{
    InferenceServiceInput, RuntimeInput, Scaling, cluster_serving_runtime, inference_service,
    serving_runtime,
};
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use serde_json::Value;

use crate::common::{assert_ours_valid, assert_upstream_valid, input};
use crate::snapshot;

const ISVC_CRD: &str = "kserve/serving.kserve.io_inferenceservices.yaml";

fn isvc() -> InferenceService {
    let built = inference_service(&input::<InferenceServiceInput>("kserve-isvc")).expect("builds");
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
    built.inference_service
}

fn env_value(isvc: &InferenceService, name: &str) -> Option<String> {
    let model = isvc.spec.predictor.model.as_ref()?;
    model
        .env
        .as_ref()?
        .iter()
        .find(|e| e.name == name)?
        .value
        .clone()
}

#[test]
fn runtimes_validate_and_snapshot() {
    let runtime: RuntimeInput = input("kserve-runtime");
    let ns = Dns1123Label::new("team-a").expect("valid");
    let namespaced = serving_runtime(&runtime, &ns).expect("builds");
    let cluster = cluster_serving_runtime(&runtime).expect("builds");
    assert_upstream_valid(
        &namespaced,
        "kserve/serving.kserve.io_servingruntimes.yaml",
        "v1alpha1",
    );
    assert_upstream_valid(
        &cluster,
        "kserve/serving.kserve.io_clusterservingruntimes.yaml",
        "v1alpha1",
    );
    assert_ours_valid::<ServingRuntime>(&namespaced);
    assert_ours_valid::<ClusterServingRuntime>(&cluster);
    assert_eq!(cluster.metadata.namespace, None);
    assert_eq!(namespaced.spec.runtime, cluster.spec.runtime);
    snapshot!("kserve_serving_runtime", &namespaced);
}

#[test]
fn runtime_carries_gpus_shm_probes_affinity_and_restricted_context() {
    let runtime = cluster_serving_runtime(&input("kserve-runtime")).expect("builds");
    let json = serde_json::to_value(&runtime).expect("json");
    let c = &json["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["amd.com/gpu"], "2");
    assert_eq!(c["resources"]["requests"]["cpu"], "8");
    assert_eq!(c["resources"]["requests"]["memory"], "64Gi");
    assert_eq!(c["resources"]["limits"]["memory"], "96Gi");
    assert_eq!(c["volumeMounts"][0]["mountPath"], "/dev/shm");
    assert_eq!(json["spec"]["volumes"][0]["emptyDir"]["medium"], "Memory");
    assert_eq!(c["startupProbe"]["httpGet"]["path"], "/health");
    assert_eq!(c["securityContext"]["capabilities"]["drop"][0], "ALL");
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(
        json["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchExpressions"][0]["key"],
        "amd.com/gpu.device-id"
    );
    assert_eq!(json["spec"]["storageHelper"]["disabled"], true);
}

#[test]
fn inference_service_validates_and_snapshots() {
    let isvc = isvc();
    assert_upstream_valid(&isvc, ISVC_CRD, "v1beta1");
    assert_ours_valid::<InferenceService>(&isvc);
    snapshot!("kserve_inference_service", &isvc);
}

#[test]
fn env_follows_the_aim_merge_order_sorted_by_name() {
    let isvc = isvc();
    let names: Vec<String> = isvc
        .spec
        .predictor
        .model
        .as_ref()
        .expect("model")
        .env
        .as_ref()
        .expect("env")
        .iter()
        .map(|e| e.name.clone())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert_eq!(
        env_value(&isvc, "AIM_CACHE_PATH").as_deref(),
        Some("/workspace/cache")
    );
    assert_eq!(
        env_value(&isvc, "AIM_PROFILE_ID").as_deref(),
        Some("mi300x-fp8-latency")
    );
    assert_eq!(env_value(&isvc, "AIM_METRIC").as_deref(), Some("latency"));
    assert_eq!(
        env_value(&isvc, "HF_HOME").as_deref(),
        Some("/workspace/cache/hf")
    );
}

#[test]
fn engine_args_are_deep_merged_across_layers_service_last() {
    let args: Value =
        serde_json::from_str(&env_value(&isvc(), "AIM_ENGINE_ARGS").expect("set")).expect("json");
    assert_eq!(
        args,
        serde_json::json!({"max-model-len": 16384, "kv-cache-dtype": "auto", "gpu-memory-utilization": 0.9})
    );
}

#[test]
fn resources_merge_defaults_then_template_then_service() {
    let isvc = isvc();
    let r = isvc
        .spec
        .predictor
        .model
        .as_ref()
        .expect("model")
        .resources
        .as_ref()
        .expect("resources");
    let requests = r.requests.as_ref().expect("requests");
    let limits = r.limits.as_ref().expect("limits");
    assert_eq!(requests["cpu"].0, "6"); // service
    assert_eq!(requests["memory"].0, "64Gi"); // default 32Gi x 2
    assert_eq!(limits["memory"].0, "64Gi"); // template over the 96Gi default
    assert_eq!(limits["amd.com/gpu"].0, "2");
}

#[test]
fn caches_mount_under_the_model_id() {
    let isvc = isvc();
    let mounts = isvc
        .spec
        .predictor
        .model
        .as_ref()
        .expect("model")
        .volume_mounts
        .as_ref()
        .expect("mounts");
    assert_eq!(mounts[0].mount_path, "/workspace/cache/Qwen/Qwen3-32B");
    assert_eq!(mounts[0].sub_path.as_deref(), Some("Qwen/Qwen3-32B"));
}

#[test]
fn fixed_replicas_disable_kserve_autoscaling_and_external_bounds_keep_it_off() {
    let isvc = isvc();
    assert_eq!(isvc.spec.predictor.min_replicas, Some(1));
    assert_eq!(
        isvc.metadata.annotations.as_ref().expect("annotations")["serving.kserve.io/autoscalerClass"],
        "none"
    );
    let mut external: InferenceServiceInput = input("kserve-isvc");
    external.scaling = Scaling::External { min: 1, max: 3 };
    let built = inference_service(&external)
        .expect("builds")
        .inference_service;
    assert_eq!(built.spec.predictor.max_replicas, Some(3));
    assert_eq!(
        built.metadata.annotations.expect("annotations")["serving.kserve.io/autoscalerClass"],
        "external"
    );
}

#[test]
fn long_names_are_shortened_to_fit_the_predictor_hostname() {
    let mut long: InferenceServiceInput = input("kserve-isvc");
    long.parent.name =
        Dns1123Subdomain::new("a-very-long-service-name-that-will-not-fit-with-the-namespace")
            .expect("valid");
    let name = inference_service(&long)
        .expect("builds")
        .inference_service
        .metadata
        .name
        .expect("name");
    assert_eq!(name.len() + "-predictor-".len() + "team-a".len(), 63);
    long.parent.namespace = Dns1123Label::new("n".repeat(50)).expect("valid");
    assert!(inference_service(&long).is_err());
}

#[test]
fn inference_service_name_is_aim_engines() {
    // NOTES row 14: the 8-hex namespace suffix is always present.
    let mut i: InferenceServiceInput = input("kserve-isvc");
    i.parent.namespace = Dns1123Label::new("ml-team").expect("valid");
    let built = inference_service(&i).expect("builds").inference_service;
    assert_eq!(built.metadata.name.as_deref(), Some("qwen-chat-a04542d9"));
}

#[test]
fn predictor_pods_get_no_api_token() {
    let json = serde_json::to_value(isvc()).expect("json");
    assert_eq!(
        json["spec"]["predictor"]["automountServiceAccountToken"],
        false
    );
}

#[test]
fn predictor_runs_as_the_cache_owner() {
    let json = serde_json::to_value(isvc()).expect("json");
    let sc = &json["spec"]["predictor"]["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["runAsUser"], 1000);
    assert_eq!(sc["runAsGroup"], 1000);
    assert_eq!(sc["fsGroup"], 1000);
}

#[test]
fn service_gpu_override_aligns_requests_and_limits_with_a_warning() {
    let mut i: InferenceServiceInput = input("kserve-isvc");
    i.service_resources = Some(
        serde_json::from_value(serde_json::json!(
            {"limits": {"amd.com/gpu": "1"}}
        ))
        .expect("resources"),
    );
    let built = inference_service(&i).expect("builds");
    let r = built
        .inference_service
        .spec
        .predictor
        .model
        .expect("model")
        .resources
        .expect("r");
    assert_eq!(r.requests.expect("requests")["amd.com/gpu"].0, "1");
    assert_eq!(r.limits.expect("limits")["amd.com/gpu"].0, "1");
    assert_eq!(built.warnings.len(), 1);
}

#[test]
fn huge_gpu_counts_are_input_errors() {
    let mut i: InferenceServiceInput = input("kserve-isvc");
    i.gpu = Some(kinfer_builders::kserve::Gpu {
        count: i64::MAX / 2,
        resource_name: None,
    });
    assert!(matches!(
        inference_service(&i),
        Err(kinfer_builders::Error::Input { .. })
    ));
}

#[test]
fn discovered_profile_env_sits_between_template_and_service() {
    let mut i: InferenceServiceInput = input("kserve-isvc");
    i.env.profile = [
        ("VLLM_USE_V1".to_owned(), "0".to_owned()),
        ("HF_HOME".to_owned(), "/profile".to_owned()),
    ]
    .into();
    i.env
        .service
        .push(kinfer_builders::env::var("VLLM_USE_V1", "1"));
    let built = inference_service(&i).expect("builds").inference_service;
    assert_eq!(env_value(&built, "HF_HOME").as_deref(), Some("/profile"));
    assert_eq!(env_value(&built, "VLLM_USE_V1").as_deref(), Some("1"));
}
