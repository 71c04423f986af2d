use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::core::DynamicObject;
use serde_json::json;

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
    // The garbage collector removes the reference (at once in process, shortly on a real
    // cluster), and keeps the child.
    wait_until(&cms, "child", |c: &ConfigMap| {
        c.metadata
            .owner_references
            .as_ref()
            .is_none_or(Vec::is_empty)
    })
    .await;
}

#[tokio::test]
async fn namespaced_dependents_of_cluster_scoped_owners_are_collected() {
    let (_c, client) = cluster().await;
    let owner_ns = &crate::common::unique("owner-ns");
    let nss: Api<Namespace> = Api::all(client.clone());
    let owner: Namespace = serde_json::from_value(json!({"metadata": {"name": owner_ns}})).unwrap();
    let owner = nss.create(&PostParams::default(), &owner).await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let child: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c", "ownerReferences": [{
        "apiVersion": "v1", "kind": "Namespace", "name": owner_ns, "uid": owner.metadata.uid }]}}))
        .unwrap();
    let child = cms.create(&PostParams::default(), &child).await.unwrap();
    nss.delete(owner_ns, &DeleteParams::default())
        .await
        .unwrap();
    wait_deleted(&cms, "c", child.metadata.uid.as_deref().unwrap()).await;
}

#[tokio::test]
async fn namespace_deletion_cascades_to_its_contents() {
    let (_c, client) = cluster().await;
    let doomed = crate::common::unique("doomed");
    let nss: Api<Namespace> = Api::all(client.clone());
    // A finalizer keeps the namespace terminating (instead of gone) for the late create.
    let ns = nss
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": &doomed, "finalizers": ["test/hold"]}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &doomed);
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "c"}})).unwrap();
    let cm = cms.create(&PostParams::default(), &cm).await.unwrap();
    nss.delete(&doomed, &DeleteParams::default()).await.unwrap();
    let cm2: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "late"}})).unwrap();
    let s = crate::common::api_status(cms.create(&PostParams::default(), &cm2).await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
    assert!(
        s.message.contains("because it is being terminated"),
        "{}",
        s.message
    );
    let cause = &s.details.unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("NamespaceTerminating", "metadata.namespace")
    );
    wait_deleted(&cms, "c", cm.metadata.uid.as_deref().unwrap()).await;
    nss.patch(
        &doomed,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    wait_deleted(&nss, &doomed, ns.metadata.uid.as_deref().unwrap()).await;
}

#[tokio::test]
async fn an_owner_in_another_namespace_is_absent_so_the_dependent_is_collected() {
    let (_c, client) = cluster().await;
    let elsewhere = crate::common::unique("elsewhere");
    let nss: Api<Namespace> = Api::all(client.clone());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": elsewhere}})).unwrap(),
    )
    .await
    .unwrap();
    let others: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &elsewhere, &crate::common::widget_ar());
    let owner = others
        .create(
            &PostParams::default(),
            &crate::common::widget("a", json!({"size": 1})),
        )
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let child = cms
        .create(&PostParams::default(), &owned_cm("child", &owner, false))
        .await
        .unwrap();
    wait_deleted(&cms, "child", child.metadata.uid.as_deref().unwrap()).await;
    // The owner itself is untouched.
    assert!(others.get("a").await.is_ok());
    nss.delete(&elsewhere, &DeleteParams::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_instances_first() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let Some((_c, client)) =
        crate::common::local_cluster("deletes the Widget CRD every other test uses").await
    else {
        return;
    };
    let api = widgets(&client);
    create_widget(&client, "a", json!({"size": 1})).await;
    let mut held = crate::common::widget("held", json!({"size": 1}));
    held.metadata.finalizers = Some(vec!["test/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get("widgets.test.kinfer.dev").await.unwrap();
    crds.delete("widgets.test.kinfer.dev", &DeleteParams::default())
        .await
        .unwrap();
    // The instance held by its finalizer keeps the CRD (and so the kind) alive.
    wait_until(&api, "held", |w: &DynamicObject| {
        w.metadata.deletion_timestamp.is_some()
    })
    .await;
    assert_eq!(status_code(&api.get("a").await.unwrap_err()), 404);
    assert!(crds.get("widgets.test.kinfer.dev").await.is_ok());
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    wait_deleted(
        &crds,
        "widgets.test.kinfer.dev",
        crd.metadata.uid.as_deref().unwrap(),
    )
    .await;
    // Re-creating the CRD does not resurrect anything.
    let again: CustomResourceDefinition =
        serde_json::from_value(crate::common::widget_crd()).unwrap();
    crds.create(&PostParams::default(), &again).await.unwrap();
    assert!(
        api.list(&kube::api::ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "instances came back"
    );
}

#[tokio::test]
async fn orphan_deletion_failing_its_precondition_leaves_dependents_alone() {
    let (_c, client) = cluster().await;
    let owner = create_widget(&client, "a", json!({"size": 1})).await;
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.create(&PostParams::default(), &owned_cm("child", &owner, false))
        .await
        .unwrap();
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        preconditions: Some(kube::api::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let e = widgets(&client).delete("a", &dp).await.unwrap_err();
    assert_eq!(status_code(&e), 409);
    let c = cms.get("child").await.unwrap();
    assert_eq!(c.metadata.owner_references.unwrap_or_default().len(), 1);
}

#[tokio::test]
async fn deletion_marking_bumps_generation_once_and_keeps_the_first_deletion_timestamp() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    let mut w = crate::common::widget("a", json!({"size": 1}));
    w.metadata.finalizers = Some(vec!["test/hold".into()]);
    api.create(&PostParams::default(), &w).await.unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let first = api.get("a").await.unwrap();
    assert_eq!(gen_of(&first), 2, "the first marking bumps the generation");
    let stamp = first.metadata.deletion_timestamp.clone().unwrap();
    // A later DELETE changes neither (src/delete.rs pins the timestamp with an old stamp).
    api.delete("a", &DeleteParams::foreground()).await.unwrap();
    let second = api.get("a").await.unwrap();
    assert_eq!(second.metadata.deletion_timestamp, Some(stamp));
    assert_eq!(gen_of(&second), 2);
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn without_a_status_subresource_status_changes_bump_generation() {
    let Some((c, client)) = crate::common::local_cluster("installs a CRD of its own").await else {
        return;
    };
    let mut crd = crate::common::widget_crd();
    crd["metadata"]["name"] = json!("gadgets.test.kinfer.dev");
    crd["spec"]["names"] = json!({"plural": "gadgets", "singular": "gadget", "kind": "Gadget"});
    crd["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("subresources");
    c.install_crd_value(crd).unwrap();
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("test.kinfer.dev", "v1", "Gadget"),
        "gadgets",
    );
    let api: Api<DynamicObject> = Api::default_namespaced_with(client, &ar);
    let g: DynamicObject = serde_json::from_value(json!({"apiVersion": "test.kinfer.dev/v1",
        "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 1}}))
    .unwrap();
    let made = api.create(&PostParams::default(), &g).await.unwrap();
    assert_eq!(gen_of(&made), 1);
    let o = api
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "P"}})),
        )
        .await
        .unwrap();
    assert_eq!(o.data["status"]["phase"], "P");
    assert_eq!(gen_of(&o), 2);
}
