use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::core::DynamicObject;
use serde_json::{Value, json};

use crate::common::{cluster, create_widget, status_code, wait_deleted, wait_until, widgets};

fn gen_of(o: &DynamicObject) -> i64 {
    o.metadata.generation.unwrap()
}

#[tokio::test]
async fn main_endpoint_ignores_status_and_status_endpoint_ignores_the_rest() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    create_widget(&client, "a", json!({"size": 1})).await;
    let o = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "X"}})),
        )
        .await
        .unwrap();
    assert!(o.data.get("status").is_none());
    let o = api
        .patch_status("a", &PatchParams::default(), &Patch::Merge(json!({"spec": {"size": 7}, "metadata": {"labels": {"l": "v"}}, "status": {"phase": "Ready"}})))
        .await
        .unwrap();
    assert_eq!(o.data["status"]["phase"], "Ready");
    assert_eq!(o.data["spec"]["size"], 1);
    assert!(o.metadata.labels.is_none());
}

#[tokio::test]
async fn generation_bumps_on_spec_changes_only() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    let o = create_widget(&client, "a", json!({"size": 1})).await;
    assert_eq!(gen_of(&o), 1);
    let o = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(gen_of(&o), 1);
    let o = api
        .patch_status(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "P"}})),
        )
        .await
        .unwrap();
    assert_eq!(gen_of(&o), 1);
    let o = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(gen_of(&o), 2);
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    let mut w = crate::common::widget("a", json!({"size": 1}));
    w.metadata.finalizers = Some(vec!["test/hold".into()]);
    let made = api.create(&PostParams::default(), &w).await.unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let o = api.get("a").await.unwrap();
    assert!(o.metadata.deletion_timestamp.is_some());
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    wait_deleted(&api, "a", made.metadata.uid.as_deref().unwrap()).await;
}

fn owned_cm(name: &str, owner: &DynamicObject, block: bool) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": { "name": name, "ownerReferences": [{
            "apiVersion": "test.kinfer.dev/v1", "kind": "Widget", "name": owner.metadata.name,
            "uid": owner.metadata.uid, "controller": true, "blockOwnerDeletion": block }] }
    }))
    .unwrap()
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let (_c, client) = cluster().await;
    let owner = create_widget(&client, "a", json!({"size": 1})).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let child = cms
        .create(&PostParams::default(), &owned_cm("child", &owner, false))
        .await
        .unwrap();
    widgets(&client)
        .delete("a", &DeleteParams::background())
        .await
        .unwrap();
    wait_deleted(&cms, "child", child.metadata.uid.as_deref().unwrap()).await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let (_c, client) = cluster().await;
    let owner = create_widget(&client, "a", json!({"size": 1})).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mut child = owned_cm("child", &owner, true);
    child.metadata.finalizers = Some(vec!["test/hold".into()]);
    cms.create(&PostParams::default(), &child).await.unwrap();
    let api = widgets(&client);
    api.delete("a", &DeleteParams::foreground()).await.unwrap();
    // The child is being deleted (held by its finalizer), so the owner waits.
    wait_until(&cms, "child", |c: &ConfigMap| {
        c.metadata.deletion_timestamp.is_some()
    })
    .await;
    let o = api.get("a").await.unwrap();
    assert!(
        o.metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_owned())
    );
    cms.patch(
        "child",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    wait_deleted(&api, "a", owner.metadata.uid.as_deref().unwrap()).await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let (_c, client) = cluster().await;
    let owner = create_widget(&client, "a", json!({"size": 1})).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.create(&PostParams::default(), &owned_cm("child", &owner, false))
        .await
        .unwrap();
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    widgets(&client).delete("a", &dp).await.unwrap();
    let c = cms.get("child").await.unwrap();
    assert!(c.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn namespaced_dependents_of_cluster_scoped_owners_are_collected() {
    let (_c, client) = cluster().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    let owner: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "owner-ns"}})).unwrap();
    let owner = nss.create(&PostParams::default(), &owner).await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let child: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c", "ownerReferences": [{
        "apiVersion": "v1", "kind": "Namespace", "name": "owner-ns", "uid": owner.metadata.uid }]}})).unwrap();
    let child = cms.create(&PostParams::default(), &child).await.unwrap();
    nss.delete("owner-ns", &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&cms, "c", child.metadata.uid.as_deref().unwrap()).await;
}

#[tokio::test]
async fn namespace_deletion_cascades_to_its_contents() {
    let (_c, client) = cluster().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    let ns = nss
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap(),
        )
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c"}})).unwrap();
    let cm = cms.create(&PostParams::default(), &cm).await.unwrap();
    nss.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let cm2: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "late"}})).unwrap();
    let late = cms.create(&PostParams::default(), &cm2).await;
    if let Err(e) = late {
        assert!(matches!(status_code(&e), 403 | 404));
    }
    wait_deleted(&cms, "c", cm.metadata.uid.as_deref().unwrap()).await;
    wait_deleted(&nss, "doomed", ns.metadata.uid.as_deref().unwrap()).await;
    let _: Value = json!(null);
}
