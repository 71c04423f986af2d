use kinfer_builders::discovery_job::{
    ArtifactInput, ArtifactJobs, DiscoveryInput, artifact_objects, cache_size_gib, discovery_job,
};
use serde_json::Value;

use crate::common::{assert_core_valid, input};
use crate::snapshot;

#[test]
fn discovery_job_validates_and_snapshots() {
    let job = discovery_job(&input::<DiscoveryInput>("discovery")).expect("builds");
    assert_core_valid(&job);
    snapshot!("discovery_job", &job);
}

#[test]
fn discovery_job_follows_the_contract() {
    let job = discovery_job(&input::<DiscoveryInput>("discovery")).expect("builds");
    let json = serde_json::to_value(&job).expect("json");
    let name = json["metadata"]["name"].as_str().expect("name");
    assert!(
        name.starts_with("discover-qwen3-32b-1x-mi300x-lat-fp8-"),
        "{name}"
    );
    assert_eq!(json["spec"]["backoffLimit"], 0);
    assert_eq!(json["spec"]["ttlSecondsAfterFinished"], 60);
    assert_eq!(
        json["spec"]["activeDeadlineSeconds"],
        kinfer_builders::discovery_job::DISCOVERY_DEADLINE_SECONDS
    );
    assert_eq!(
        json["metadata"]["labels"]["app.kubernetes.io/name"],
        "aim-discovery"
    );
    assert_eq!(
        json["spec"]["template"]["metadata"]["labels"]["aim.eai.amd.com/template"],
        "qwen3-32b-1x-mi300x-lat-fp8"
    );
    let pod = &json["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["securityContext"]["runAsUser"], 65532);
    assert_eq!(
        pod["containers"][0]["args"],
        serde_json::json!(["dry-run", "--format=json"])
    );
    let env: Vec<&str> = pod["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(
        env,
        [
            "AIM_LOG_LEVEL_ROOT",
            "AIM_LOG_LEVEL",
            "HF_HUB_OFFLINE",
            "AIM_METRIC",
            "AIM_PRECISION",
            "AIM_GPU_MODEL",
            "AIM_GPU_COUNT",
            "AIM_PROFILE_ID"
        ]
    );
}

#[test]
fn any_input_change_gives_a_new_job_name() {
    let base: DiscoveryInput = input("discovery");
    let name = |i: &DiscoveryInput| {
        discovery_job(i)
            .expect("builds")
            .metadata
            .name
            .expect("name")
    };
    let mut changed = base.clone();
    changed.precision = Some("fp16".to_owned());
    assert_ne!(name(&base), name(&changed));
    let mut changed = base.clone();
    changed.env[0].value = Some("1".to_owned());
    assert_ne!(name(&base), name(&changed));
    assert_eq!(name(&base), name(&base.clone()));
}

#[test]
fn artifact_download_validates_and_snapshots() {
    let ArtifactJobs::Download { claim, job } =
        artifact_objects(&input::<ArtifactInput>("artifact")).expect("builds")
    else {
        panic!("the size is known");
    };
    assert_core_valid(claim.as_ref());
    assert_core_valid(job.as_ref());
    let json: Value = serde_json::to_value(&claim).expect("json");
    // 65498251264 bytes x 1.1 = 67.1 GiB -> 68Gi.
    assert_eq!(json["spec"]["resources"]["requests"]["storage"], "68Gi");
    assert_eq!(json["spec"]["accessModes"][0], "ReadWriteMany");
    let job_json: Value = serde_json::to_value(&job).expect("json");
    assert_eq!(job_json["spec"]["backoffLimit"], 2);
    assert_eq!(
        job_json["spec"]["template"]["spec"]["securityContext"]["fsGroup"],
        1000
    );
    snapshot!("artifact_download", &(&claim, &job));
}

#[test]
fn artifact_without_size_checks_the_size_first() {
    let mut unsized_input: ArtifactInput = input("artifact");
    unsized_input.size_bytes = None;
    let ArtifactJobs::CheckSize(job) = artifact_objects(&unsized_input).expect("builds") else {
        panic!("the size is unknown");
    };
    assert_core_valid(job.as_ref());
    let name = job.metadata.name.clone().expect("name");
    assert!(
        name.starts_with("hf-qwen-qwen3-32b-0123456789-check-size-"),
        "{name}"
    );
    snapshot!("artifact_check_size", &job);
}

#[test]
fn cache_sizes_round_up_with_headroom_and_a_floor() {
    assert_eq!(cache_size_gib(1, 10), Ok(1));
    assert_eq!(cache_size_gib(10 << 30, 10), Ok(11));
    assert_eq!(cache_size_gib(10 << 30, 0), Ok(10));
    assert_eq!(cache_size_gib((10 << 30) + 1, 0), Ok(11));
    assert!(cache_size_gib(u64::MAX, u64::MAX).is_err());
    let mut huge: ArtifactInput = input("artifact");
    huge.headroom_percent = Some(u64::MAX);
    assert!(artifact_objects(&huge).is_err());
}
