use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kinfer_testkit::{JobOutcome, TestCluster};
use kube::api::{Api, LogParams, PostParams};
use serde_json::json;

use crate::common::wait_until;

fn available(d: &Deployment) -> bool {
    d.status.as_ref().is_some_and(|s| {
        s.available_replicas == Some(2)
            && s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Available" && c.status == "True")
    })
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"replicas": 2,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
    .unwrap()
}

#[tokio::test]
async fn deployments_become_available() {
    if crate::common::skip_external("needs the workload simulator") {
        return;
    }
    let c = TestCluster::start_simulated().await.unwrap();
    let api: Api<Deployment> = Api::default_namespaced(c.client().unwrap());
    api.create(&PostParams::default(), &deployment("d"))
        .await
        .unwrap();
    wait_until(&api, "d", available).await;
}

#[tokio::test]
async fn held_deployments_progress_only_when_released() {
    if crate::common::skip_external("needs the workload simulator") {
        return;
    }
    let c = TestCluster::start_simulated().await.unwrap();
    c.hold("deployments", "default", "d");
    let api: Api<Deployment> = Api::default_namespaced(c.client().unwrap());
    api.create(&PostParams::default(), &deployment("d"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &deployment("other"))
        .await
        .unwrap();
    wait_until(&api, "other", available).await;
    assert!(api.get("d").await.unwrap().status.is_none());
    c.release("deployments", "default", "d");
    wait_until(&api, "d", available).await;
}

#[tokio::test]
async fn jobs_run_a_pod_with_a_hooked_log() {
    if crate::common::skip_external("needs the workload simulator") {
        return;
    }
    let c = TestCluster::start_simulated().await.unwrap();
    c.simulator().set_log_hook(Arc::new(
        |_ns: &str, _pod: &str, pod: &serde_json::Value| {
            (pod["spec"]["containers"][0]["image"] == "discover:1")
                .then(|| "{\"models\": 3}".to_owned())
        },
    ));
    c.simulator().job_outcome("bad", JobOutcome::Fail);
    let client = c.client().unwrap();
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let job = |n: &str| -> Job {
        serde_json::from_value(
            json!({"metadata": {"name": n}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "discover:1"}]}}}}),
        )
        .unwrap()
    };
    jobs.create(&PostParams::default(), &job("good"))
        .await
        .unwrap();
    jobs.create(&PostParams::default(), &job("bad"))
        .await
        .unwrap();
    let cond = |t: &'static str| {
        move |j: &Job| {
            j.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == t && c.status == "True")
            })
        }
    };
    wait_until(&jobs, "good", cond("Complete")).await;
    wait_until(&jobs, "bad", cond("Failed")).await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    let pod = pods.get("good-sim").await.unwrap();
    assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Succeeded"));
    assert_eq!(
        pods.logs("good-sim", &LogParams::default()).await.unwrap(),
        "{\"models\": 3}"
    );
}

#[tokio::test]
async fn pvcs_become_bound() {
    if crate::common::skip_external("needs the workload simulator") {
        return;
    }
    let c = TestCluster::start_simulated().await.unwrap();
    let api: Api<PersistentVolumeClaim> = Api::default_namespaced(c.client().unwrap());
    let pvc: PersistentVolumeClaim =
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}))
        .unwrap();
    api.create(&PostParams::default(), &pvc).await.unwrap();
    wait_until(&api, "p", |p: &PersistentVolumeClaim| {
        p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
    })
    .await;
}

#[tokio::test]
async fn httproutes_get_accepted_parents() {
    if crate::common::skip_external("needs the workload simulator") {
        return;
    }
    let c = TestCluster::start_simulated().await.unwrap();
    c.install_crd_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "httproutes.gateway.networking.k8s.io"},
        "spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
                 "names": {"plural": "httproutes", "kind": "HTTPRoute"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })).unwrap();
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", "HTTPRoute"),
        "httproutes",
    );
    let api: Api<kube::core::DynamicObject> =
        Api::default_namespaced_with(c.client().unwrap(), &ar);
    let route: kube::core::DynamicObject = serde_json::from_value(
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "r"}, "spec": {"parentRefs": [{"name": "gw"}]}}),
    )
    .unwrap();
    api.create(&PostParams::default(), &route).await.unwrap();
    let r = wait_until(&api, "r", |r: &kube::core::DynamicObject| {
        r.data["status"]["parents"][0]["conditions"].is_array()
    })
    .await;
    let conds = r.data["status"]["parents"][0]["conditions"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        conds
            .iter()
            .any(|c| c["type"] == "Accepted" && c["status"] == "True")
    );
    assert!(
        conds
            .iter()
            .any(|c| c["type"] == "ResolvedRefs" && c["status"] == "True")
    );
}

fn open_crd(group: &str, plural: &str, kind: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": kind},
                 "versions": [{"name": "v1beta1", "served": true, "storage": true, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

#[tokio::test]
async fn inference_services_become_ready_with_a_url() {
    if crate::common::skip_external("needs the workload simulator") {
        return;
    }
    let c = TestCluster::start_simulated().await.unwrap();
    c.install_crd_value(open_crd(
        "serving.kserve.io",
        "inferenceservices",
        "InferenceService",
    ))
    .unwrap();
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("serving.kserve.io", "v1beta1", "InferenceService"),
        "inferenceservices",
    );
    let api: Api<kube::core::DynamicObject> =
        Api::default_namespaced_with(c.client().unwrap(), &ar);
    let isvc: kube::core::DynamicObject =
        serde_json::from_value(json!({"apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService", "metadata": {"name": "m"}, "spec": {"predictor": {}}}))
        .unwrap();
    api.create(&PostParams::default(), &isvc).await.unwrap();
    let ready = |t: &'static str| {
        move |o: &kube::core::DynamicObject| {
            o.data["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == t && c["status"] == "True"))
        }
    };
    let o = wait_until(&api, "m", ready("Ready")).await;
    assert!(ready("PredictorReady")(&o));
    assert_eq!(o.data["status"]["url"], "http://m.default.example.com");
}

#[tokio::test]
async fn hpas_report_current_replicas() {
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    if crate::common::skip_external("needs the workload simulator") {
        return;
    }
    let c = TestCluster::start_simulated().await.unwrap();
    let api: Api<HorizontalPodAutoscaler> = Api::default_namespaced(c.client().unwrap());
    let hpa: HorizontalPodAutoscaler = serde_json::from_value(json!({"metadata": {"name": "h"}, "spec": {
        "minReplicas": 2, "maxReplicas": 5, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}}})).unwrap();
    api.create(&PostParams::default(), &hpa).await.unwrap();
    wait_until(&api, "h", |h: &HorizontalPodAutoscaler| {
        h.status.as_ref().and_then(|s| s.current_replicas) == Some(2)
    })
    .await;
}
