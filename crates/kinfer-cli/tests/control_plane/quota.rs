//! The AIM Jobs' pods are admitted in a namespace whose ResourceQuota counts CPU and memory
//! (the real ResourceQuota admission, its status computed by the real quota controller),
//! where a pod that sets neither is refused.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodSpec, ResourceQuota};
use kinfer_builders::discovery_job::{
    ArtifactInput, ArtifactJobs, DiscoveryInput, artifact_objects, discovery_job,
};
use kinfer_builders::naming::Dns1123Label;
use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::json;

use crate::{client, create_unless_exists, ensure_namespace, root};

const NS: &str = "quota-jobs";

fn input<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let path = root().join(format!("crates/kinfer-builders/tests/inputs/{name}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

/// The pod a Job's controller would create (its identity left out: ServiceAccounts are not
/// what this test is about).
fn pod_of(job: &Job) -> Pod {
    let template = job.spec.clone().unwrap().template;
    let spec = PodSpec {
        service_account_name: None,
        ..template.spec.unwrap()
    };
    Pod {
        metadata: kube::api::ObjectMeta {
            name: job.metadata.name.clone(),
            namespace: Some(NS.to_owned()),
            labels: template.metadata.and_then(|m| m.labels),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }
}

#[tokio::test]
async fn aim_job_pods_are_admitted_where_a_quota_counts_cpu_and_memory() {
    let (client, _) = client().await;
    ensure_namespace(&client, NS).await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), NS);
    let quota = serde_json::from_value(json!({
        "metadata": {"name": "compute"},
        "spec": {"hard": {
            "requests.cpu": "20", "requests.memory": "40Gi",
            "limits.cpu": "40", "limits.memory": "80Gi",
        }},
    }))
    .unwrap();
    create_unless_exists(&quotas, &quota, "quota").await;
    // Admission refuses every pod until the quota controller computed the quota's status.
    let computed = await_condition(quotas.clone(), "compute", |q: Option<&ResourceQuota>| {
        q.and_then(|q| q.status.as_ref())
            .and_then(|s| s.hard.as_ref())
            .is_some_and(|h| !h.is_empty())
    });
    tokio::time::timeout(std::time::Duration::from_mins(1), computed)
        .await
        .expect("the quota controller computes the quota's status")
        .unwrap();

    let mut discovery = input::<DiscoveryInput>("discovery");
    discovery.namespace = Dns1123Label::new(NS).unwrap();
    let mut artifact = input::<ArtifactInput>("artifact");
    artifact.parent.namespace = Dns1123Label::new(NS).unwrap();
    let download = match artifact_objects(&artifact).unwrap() {
        ArtifactJobs::Download { job, .. } => *job,
        ArtifactJobs::CheckSize(_) => panic!("the input has a size"),
    };
    artifact.size_bytes = None;
    let ArtifactJobs::CheckSize(check_size) = artifact_objects(&artifact).unwrap() else {
        panic!("no size: the size check");
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    for job in [discovery_job(&discovery).unwrap(), *check_size, download] {
        let pod = pod_of(&job);
        pods.create(&dry, &pod)
            .await
            .unwrap_or_else(|e| panic!("{:?}: {e}", job.metadata.name));

        // The same pod without resources is refused: the quota is enforced here.
        let mut bare = pod;
        for c in &mut bare.spec.as_mut().unwrap().containers {
            c.resources = None;
        }
        match pods.create(&dry, &bare).await {
            Err(kube::Error::Api(s)) => assert!(s.message.contains("must specify"), "{s:?}"),
            other => panic!("a pod without resources was not refused: {other:?}"),
        }
    }
}
