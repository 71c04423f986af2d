//! Every container of every bundle runs under the restricted profile.

use kinfer_builders::deployment::{ModelDeploymentInput, model_deployment};
use kinfer_builders::discovery_job::{
    ArtifactInput, ArtifactJobs, DiscoveryInput, artifact_objects, discovery_job,
};
use kinfer_builders::epp::{EppInput, epp_bundle};
use kinfer_builders::kserve::{
    InferenceServiceInput, RuntimeInput, cluster_serving_runtime, inference_service,
};

use crate::common::{assert_restricted, input};

#[test]
fn every_container_of_every_bundle_is_restricted() {
    for name in ["deployment-decode", "deployment-prefill"] {
        let built = model_deployment(&input::<ModelDeploymentInput>(name)).expect("builds");
        assert_restricted(&built.deployment);
    }
    for name in ["epp", "epp-pd-ha"] {
        assert_restricted(
            &epp_bundle(&input::<EppInput>(name))
                .expect("builds")
                .deployment,
        );
    }
    // KServe merges the runtime's container into the predictor pod, whose pod-level context
    // the InferenceService sets: check the pod KServe will create.
    let isvc = inference_service(&input::<InferenceServiceInput>("kserve-isvc"))
        .expect("builds")
        .inference_service;
    let runtime = cluster_serving_runtime(&input::<RuntimeInput>("kserve-runtime")).expect("b");
    let mut json = serde_json::to_value(&runtime).expect("json");
    json["spec"]["securityContext"] =
        serde_json::to_value(&isvc.spec.predictor.security_context).expect("json");
    assert_restricted(&json);
    assert_restricted(&discovery_job(&input::<DiscoveryInput>("discovery")).expect("builds"));
    let artifact: ArtifactInput = input("artifact");
    let ArtifactJobs::Download { job, .. } = artifact_objects(&artifact).expect("builds") else {
        panic!("sized");
    };
    assert_restricted(job.as_ref());
    let mut unsized_input = artifact;
    unsized_input.size_bytes = None;
    let ArtifactJobs::CheckSize(job) = artifact_objects(&unsized_input).expect("builds") else {
        panic!("unsized");
    };
    assert_restricted(job.as_ref());
}
