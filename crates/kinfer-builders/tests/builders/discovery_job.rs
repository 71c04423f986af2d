use k8s_openapi::api::core::v1::ResourceRequirements;
use kinfer_builders::discovery_job::resources::parse_list;
use kinfer_builders::discovery_job::{
    ArtifactInput, ArtifactJobs, DiscoveryInput, JobResources, PROGRESS_COMPONENT,
    artifact_objects, cache_size_gib, discovery_job, progress_name, progress_reporter,
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
fn other_job_resources_reach_the_containers_and_name_another_discovery_job() {
    let default = discovery_job(&input::<DiscoveryInput>("discovery")).expect("builds");
    let mut resources = JobResources {
        discovery: ResourceRequirements {
            requests: Some(parse_list("cpu=2,memory=4Gi").expect("list")),
            limits: Some(parse_list("cpu=2,memory=4Gi").expect("list")),
            ..ResourceRequirements::default()
        },
        ..JobResources::default()
    };
    let mut with = input::<DiscoveryInput>("discovery");
    with.resources = Some(resources.discovery.clone());
    let job = discovery_job(&with).expect("builds");
    assert_core_valid(&job);
    let pod = job.spec.and_then(|s| s.template.spec).expect("pod");
    assert_eq!(
        pod.containers[0].resources.as_ref(),
        Some(&resources.discovery)
    );
    assert_ne!(
        job.metadata.name, default.metadata.name,
        "a Job's template is immutable: other resources are another Job"
    );

    // A Job an earlier operator (or upstream's) created without resources has upstream's
    // name; the Job with resources is another one, so its immutable template is never
    // applied over the old one.
    let i = input::<DiscoveryInput>("discovery");
    let upstream = kinfer_builders::naming::aim::discovery_job_name(
        i.template.as_str(),
        kinfer_builders::naming::aim::DiscoveryHash {
            model: &i.model,
            image: &i.image,
            service_account: i.service_account_name.as_deref().unwrap_or_default(),
            env: &i.env,
            image_pull_secrets: &i.image_pull_secrets,
            metric: i.metric.as_deref().unwrap_or_default(),
            precision: i.precision.as_deref().unwrap_or_default(),
            gpu: Some((
                i.gpu_model.as_deref().unwrap_or_default(),
                i.gpu_count.unwrap_or_default(),
            )),
            profile_id: i.profile_id.as_deref().unwrap_or_default(),
            kinfer: "",
        },
    )
    .expect("upstream's name");
    assert_ne!(default.metadata.name.as_deref(), Some(upstream.as_str()));

    // The defaults, set explicitly, are the defaults.
    let mut explicit = input::<DiscoveryInput>("discovery");
    explicit.resources = Some(JobResources::default().discovery);
    assert_eq!(
        discovery_job(&explicit).expect("builds").metadata.name,
        default.metadata.name
    );

    resources.download.limits = Some(parse_list("cpu=8,memory=32Gi").expect("list"));
    let mut artifact = input::<ArtifactInput>("artifact");
    artifact.resources = Some(resources.clone());
    let Ok(ArtifactJobs::Download { job, .. }) = artifact_objects(&artifact) else {
        panic!("a download");
    };
    let pod = job.spec.and_then(|s| s.template.spec).expect("pod");
    assert_eq!(pod.containers[0].resources, Some(resources.download));
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
    assert_eq!(pod["automountServiceAccountToken"], false, "no API token");
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
    let ArtifactJobs::Download { claim, job, .. } =
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

/// The download pod reports progress as its own ServiceAccount, whose Role may only read and
/// patch this artifact's status; the check-size pod mounts no token. Both pods carry the
/// artifact's pull secrets, the ServiceAccount those it is given (the namespace `default`'s).
#[test]
fn only_the_download_pod_may_patch_its_artifacts_status() {
    let artifact: ArtifactInput = input("artifact");
    let ArtifactJobs::Download { job, .. } = artifact_objects(&artifact).expect("builds") else {
        panic!("the size is known");
    };
    let reporter =
        progress_reporter(&artifact.parent, &artifact.uid, &["mirror".to_owned()]).expect("builds");
    assert_core_valid(&reporter.service_account);
    assert_core_valid(&reporter.role);
    assert_core_valid(&reporter.binding);
    let name = progress_name(artifact.parent.name.as_str(), &artifact.uid).expect("name");
    assert!(name.as_str().len() <= 63);
    for meta in [
        &reporter.service_account.metadata,
        &reporter.role.metadata,
        &reporter.binding.metadata,
    ] {
        assert_eq!(meta.name.as_deref(), Some(name.as_str()));
        assert_eq!(
            meta.namespace.as_deref(),
            Some(artifact.parent.namespace.as_str())
        );
        assert_eq!(
            meta.labels.as_ref().expect("labels")["app.kubernetes.io/component"],
            PROGRESS_COMPONENT
        );
    }
    let rules = reporter.role.rules.clone().expect("rules");
    assert_eq!(rules.len(), 1);
    let json = serde_json::to_value(&rules[0]).expect("json");
    assert_eq!(
        json,
        serde_json::json!({"apiGroups": ["aim.eai.amd.com"], "resources": ["aimartifacts/status"],
            "resourceNames": [artifact.parent.name.as_str()], "verbs": ["get", "patch"]})
    );
    assert_eq!(reporter.binding.role_ref.kind, "Role");
    assert_eq!(reporter.binding.role_ref.name, name.as_str());
    let subjects = reporter.binding.subjects.clone().expect("subjects");
    assert_eq!(
        (
            subjects.len(),
            subjects[0].kind.as_str(),
            subjects[0].name.as_str()
        ),
        (1, "ServiceAccount", name.as_str())
    );
    assert_eq!(
        subjects[0].namespace.as_deref(),
        Some(artifact.parent.namespace.as_str())
    );
    assert_eq!(
        pull_secrets(reporter.service_account.image_pull_secrets),
        ["mirror"]
    );
    let pod = job.spec.expect("spec").template.spec.expect("pod");
    assert_eq!(pod.service_account_name.as_deref(), Some(name.as_str()));
    assert_eq!(pod.automount_service_account_token, Some(true));
    assert_eq!(pull_secrets(pod.image_pull_secrets), ["mirror-cred"]);
    assert_eq!(
        reporter.service_account.automount_service_account_token,
        Some(false),
        "a pod naming it gets a token only by asking"
    );
    let none = progress_reporter(&artifact.parent, &artifact.uid, &[]).expect("builds");
    assert_eq!(none.service_account.image_pull_secrets, None);
    let mut unsized_input = artifact;
    unsized_input.size_bytes = None;
    let ArtifactJobs::CheckSize(check) = artifact_objects(&unsized_input).expect("builds") else {
        panic!("the size is unknown");
    };
    let pod = check.spec.expect("spec").template.spec.expect("pod");
    assert_eq!(pod.automount_service_account_token, Some(false));
    assert_eq!(pod.service_account_name, None);
    assert_eq!(pull_secrets(pod.image_pull_secrets), ["mirror-cred"]);
}

fn pull_secrets(
    refs: Option<Vec<k8s_openapi::api::core::v1::LocalObjectReference>>,
) -> Vec<String> {
    refs.into_iter().flatten().map(|r| r.name).collect()
}

/// A request as Kubernetes RBAC sees it.
struct Request<'a> {
    group: &'a str,
    resource: &'a str,
    subresource: Option<&'a str>,
    name: &'a str,
    verb: &'a str,
}

/// Whether `rules` allow `r`, by RBAC's rule matching (`*` included, though the Role uses
/// none): group, `resource[/subresource]`, resource names (empty: all), verb.
fn allows(rules: &[k8s_openapi::api::rbac::v1::PolicyRule], r: &Request) -> bool {
    let full = r
        .subresource
        .map_or_else(|| r.resource.to_owned(), |s| format!("{}/{s}", r.resource));
    let any = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
    rules.iter().any(|rule| {
        any(rule.api_groups.as_deref().unwrap_or_default(), r.group)
            && any(rule.resources.as_deref().unwrap_or_default(), &full)
            && rule
                .resource_names
                .as_deref()
                .is_none_or(|n| n.is_empty() || n.iter().any(|x| x == r.name))
            && any(&rule.verbs, r.verb)
    })
}

/// The Role lets the pod read and patch its own artifact's status and nothing else: not
/// another artifact's, not the artifact itself, no list or watch, no deletion.
#[test]
fn the_progress_role_allows_only_this_artifacts_status() {
    let artifact: ArtifactInput = input("artifact");
    let reporter = progress_reporter(&artifact.parent, &artifact.uid, &[]).expect("builds");
    let rules = reporter.role.rules.expect("rules");
    let me = artifact.parent.name.as_str();
    let req = |resource, subresource, name, verb| Request {
        group: "aim.eai.amd.com",
        resource,
        subresource,
        name,
        verb,
    };
    for verb in ["get", "patch"] {
        assert!(
            allows(&rules, &req("aimartifacts", Some("status"), me, verb)),
            "{verb} own status"
        );
    }
    let denied = [
        req("aimartifacts", Some("status"), "other-artifact", "patch"),
        req("aimartifacts", Some("status"), "other-artifact", "get"),
        req("aimartifacts", None, me, "patch"),
        req("aimartifacts", None, me, "get"),
        req("aimartifacts", None, me, "delete"),
        req("aimartifacts", Some("status"), me, "update"),
        req("aimartifacts", Some("status"), me, "delete"),
        req("aimartifacts", Some("status"), "", "list"),
        req("aimartifacts", Some("status"), "", "watch"),
        req("aimartifacts", None, "", "list"),
        req("aimtemplatecaches", Some("status"), me, "patch"),
    ];
    for r in &denied {
        assert!(
            !allows(&rules, r),
            "allowed {} {}/{:?} {:?}",
            r.verb,
            r.resource,
            r.subresource,
            r.name
        );
    }
    let other_group = Request {
        group: "",
        ..req("aimartifacts", Some("status"), me, "patch")
    };
    assert!(!allows(&rules, &other_group));
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
