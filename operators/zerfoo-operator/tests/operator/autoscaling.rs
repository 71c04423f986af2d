//! The HPA owns the replica count while autoscaling: the operator never resets what the HPA
//! chose, turning autoscaling on does not drop the Deployment to one replica, and turning it
//! off deletes the HPA and restores `spec.replicas`.

use crate::common::{env, replicas, valid_spec};

#[tokio::test]
async fn the_operator_never_resets_what_the_hpa_chose() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.min_replicas = Some(2);
    spec.max_replicas = Some(10);
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;
    assert_eq!(replicas(&env.deployment("my-llama-primary").await), Some(2));

    // The HPA scales the primary to 7.
    env.scale_as_hpa("my-llama-primary", 7).await;
    env.cluster.counters().reset();
    let report = env.reconcile("my-llama").await;
    assert_eq!(report.applied, 0, "{report:?}");
    assert_eq!(env.cluster.counters().mutations(Some("deployments")), 0);
    assert_eq!(replicas(&env.deployment("my-llama-primary").await), Some(7));

    // An unrelated spec change is applied without touching the replica count.
    env.edit("my-llama", |s| s.model_ref = "llama3-8b-q8".into())
        .await;
    env.converge("my-llama").await;
    let d = env.deployment("my-llama-primary").await;
    assert_eq!(replicas(&d), Some(7));
    assert_eq!(
        crate::common::container(&d).args.as_deref().unwrap()[2],
        "llama3-8b-q8"
    );
    let status = env.get("my-llama").await.status.unwrap();
    assert_eq!(status.replicas, Some(7));
}

#[tokio::test]
async fn turning_autoscaling_off_deletes_the_hpa_and_restores_replicas() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.replicas = 3;
    spec.min_replicas = Some(2);
    spec.max_replicas = Some(10);
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;
    env.scale_as_hpa("my-llama-primary", 9).await;

    env.edit("my-llama", |s| {
        s.min_replicas = None;
        s.max_replicas = None;
    })
    .await;
    env.converge("my-llama").await;
    assert!(env.hpas.get_opt("my-llama-hpa").await.unwrap().is_none());
    assert_eq!(replicas(&env.deployment("my-llama-primary").await), Some(3));
}

#[tokio::test]
async fn turning_autoscaling_on_keeps_the_running_replicas() {
    let env = env().await;
    let mut spec = valid_spec();
    spec.replicas = 4;
    env.create("my-llama", spec).await.unwrap();
    env.converge("my-llama").await;

    env.edit("my-llama", |s| {
        s.min_replicas = Some(2);
        s.max_replicas = Some(10);
    })
    .await;
    env.converge("my-llama").await;
    assert!(env.hpas.get_opt("my-llama-hpa").await.unwrap().is_some());
    // Dropping the field would have defaulted (or removed) it: it is kept until the HPA scales.
    assert_eq!(replicas(&env.deployment("my-llama-primary").await), Some(4));
    env.scale_as_hpa("my-llama-primary", 6).await;
    let report = env.converge("my-llama").await;
    assert_eq!(report.applied, 0);
    assert_eq!(replicas(&env.deployment("my-llama-primary").await), Some(6));
}
