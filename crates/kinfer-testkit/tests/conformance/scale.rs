//! The `/scale` subresource of Deployments: the Scale view, writes through it, and the
//! managedFields the real API server records for them (an `Update` entry with
//! `subresource: scale` owning `spec.replicas`, which then conflicts with appliers).

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::common::{api_status, cluster};

const HPA: &str = "kube-controller-manager";

fn deployment(name: &str, replicas: Option<i32>) -> Value {
    let mut spec = json!({
        "selector": { "matchLabels": { "app": name, "tier": "web" } },
        "template": {
            "metadata": { "labels": { "app": name, "tier": "web" } },
            "spec": { "containers": [{ "name": "c", "image": "busybox" }] }
        }
    });
    if let Some(r) = replicas {
        spec["replicas"] = json!(r);
    }
    json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": name }, "spec": spec })
}

async fn apply(
    api: &Api<Deployment>,
    body: &Value,
    manager: &str,
    force: bool,
) -> kube::Result<Deployment> {
    let mut pp = PatchParams::apply(manager);
    if force {
        pp = pp.force();
    }
    api.patch(
        body["metadata"]["name"].as_str().unwrap(),
        &pp,
        &Patch::Apply(body),
    )
    .await
}

/// PUT of a Scale as `manager`, as the HPA controller writes it.
async fn scale_to(
    api: &Api<Deployment>,
    name: &str,
    replicas: i32,
    manager: &str,
) -> kube::Result<i32> {
    let pp = PostParams {
        field_manager: Some(manager.to_owned()),
        ..PostParams::default()
    };
    // As a scaler does: read, write with the version read, and read again on a conflict (on a
    // real cluster the deployment controller writes the status in between).
    let mut attempts = 0;
    loop {
        let mut body = api.get_scale(name).await?;
        body.spec.get_or_insert_default().replicas = Some(replicas);
        match api.replace_scale(name, &pp, &body).await {
            Ok(s) => return Ok(s.spec.and_then(|s| s.replicas).unwrap_or_default()),
            Err(kube::Error::Api(s)) if s.code == 409 && attempts < 10 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}

fn replicas_owners(d: &Deployment) -> Vec<(String, String, String)> {
    d.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|e| {
            e.fields_v1
                .as_ref()
                .is_some_and(|f| f.0.pointer("/f:spec/f:replicas").is_some())
        })
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
                e.subresource.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn get_scale_reports_replicas_and_selector() {
    let (_c, client) = cluster().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    apply(&api, &deployment("sc-get", Some(3)), "op", false)
        .await
        .unwrap();
    let scale = api.get_scale("sc-get").await.unwrap();
    assert_eq!(scale.metadata.name.as_deref(), Some("sc-get"));
    assert!(scale.metadata.resource_version.is_some());
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(3));
    let status = scale.status.unwrap();
    assert_eq!(status.selector.as_deref(), Some("app=sc-get,tier=web"));

    // Unset replicas read as the server's default, 1.
    apply(&api, &deployment("sc-default", None), "op", false)
        .await
        .unwrap();
    let scale = api.get_scale("sc-default").await.unwrap();
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(1));
    assert_eq!(
        api_status(api.get_scale("absent").await.unwrap_err()).code,
        404
    );
}

#[tokio::test]
async fn a_scale_update_owns_replicas_and_appliers_then_conflict() {
    let (_c, client) = cluster().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    apply(&api, &deployment("sc-own", Some(2)), "op", false)
        .await
        .unwrap();

    assert_eq!(scale_to(&api, "sc-own", 5, HPA).await.unwrap(), 5);
    let d = api.get("sc-own").await.unwrap();
    assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(5));
    assert_eq!(
        replicas_owners(&d),
        vec![(HPA.to_owned(), "Update".to_owned(), "scale".to_owned())],
        "the scaler takes spec.replicas from the applier"
    );
    // The applier keeps the rest of its fields.
    let op = d
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|e| e.manager.as_deref() == Some("op"))
        .unwrap();
    assert!(
        op.fields_v1
            .as_ref()
            .unwrap()
            .0
            .pointer("/f:spec/f:template")
            .is_some()
    );

    // Re-applying the old count without force conflicts with the scaler, and writes nothing.
    let err = apply(&api, &deployment("sc-own", Some(2)), "op", false)
        .await
        .unwrap_err();
    assert!(err.to_string().contains(HPA), "{err}");
    assert_eq!(api_status(err).code, 409);
    let d = api.get("sc-own").await.unwrap();
    assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(5));

    // Applying without the field leaves it with the scaler; applying its value shares it.
    apply(&api, &deployment("sc-own", None), "op", false)
        .await
        .unwrap();
    assert_eq!(
        api.get("sc-own").await.unwrap().spec.unwrap().replicas,
        Some(5)
    );
    apply(&api, &deployment("sc-own", Some(5)), "handover", false)
        .await
        .unwrap();
    let owners = replicas_owners(&api.get("sc-own").await.unwrap());
    assert_eq!(owners.len(), 2, "{owners:?}");

    // Force takes it back from everyone.
    apply(&api, &deployment("sc-own", Some(3)), "op", true)
        .await
        .unwrap();
    let d = api.get("sc-own").await.unwrap();
    assert_eq!(d.spec.as_ref().and_then(|s| s.replicas), Some(3));
    assert_eq!(
        replicas_owners(&d),
        vec![("op".to_owned(), "Apply".to_owned(), String::new())]
    );
}

#[tokio::test]
async fn scale_writes_check_versions_and_values_and_patches_work() {
    let (_c, client) = cluster().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    apply(&api, &deployment("sc-put", Some(2)), "op", false)
        .await
        .unwrap();
    let stale = api.get_scale("sc-put").await.unwrap();
    scale_to(&api, "sc-put", 4, HPA).await.unwrap();

    // A Scale read before another write is stale.
    let mut body = stale.clone();
    body.spec.get_or_insert_default().replicas = Some(7);
    let r = api
        .replace_scale("sc-put", &PostParams::default(), &body)
        .await;
    assert_eq!(api_status(r.unwrap_err()).code, 409);

    // Negative counts are invalid.
    let r = api
        .patch_scale(
            "sc-put",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": -1 } })),
        )
        .await;
    assert_eq!(api_status(r.unwrap_err()).code, 422);
    assert_eq!(
        api.get("sc-put").await.unwrap().spec.unwrap().replicas,
        Some(4)
    );

    // A merge patch of the Scale changes only spec.replicas, and bumps the generation.
    let before = api.get("sc-put").await.unwrap();
    let s = api
        .patch_scale(
            "sc-put",
            &PatchParams {
                field_manager: Some("kubectl".to_owned()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({ "spec": { "replicas": 6 } })),
        )
        .await
        .unwrap();
    assert_eq!(s.spec.and_then(|s| s.replicas), Some(6));
    let after = api.get("sc-put").await.unwrap();
    assert_eq!(after.spec.as_ref().unwrap().replicas, Some(6));
    assert_eq!(
        after.metadata.generation,
        before.metadata.generation.map(|g| g + 1)
    );
    assert_eq!(
        replicas_owners(&after),
        vec![(
            "kubectl".to_owned(),
            "Update".to_owned(),
            "scale".to_owned()
        )]
    );

    // A JSON patch works too. An apply patch on /scale: the real server takes it (and here it
    // conflicts with the scaler's ownership of the replicas); the in-process cluster does not
    // serve it (415, a known difference).
    let s = api
        .patch_scale(
            "sc-put",
            &PatchParams::default(),
            &Patch::<()>::Json(
                serde_json::from_value(json!([
                    { "op": "replace", "path": "/spec/replicas", "value": 7 }
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(s.spec.and_then(|s| s.replicas), Some(7));
    let r = api
        .patch_scale(
            "sc-put",
            &PatchParams::apply("op"),
            &Patch::Apply(json!({
                "apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": { "name": "sc-put" }, "spec": { "replicas": 1 }
            })),
        )
        .await;
    let expected = if crate::common::external() { 409 } else { 415 };
    assert_eq!(api_status(r.unwrap_err()).code, expected);

    // Writing the current value again changes nothing (compared by generation: on a real
    // cluster the deployment controller may write the status meanwhile).
    let generation = api.get("sc-put").await.unwrap().metadata.generation;
    scale_to(&api, "sc-put", 7, HPA).await.unwrap();
    assert_eq!(
        api.get("sc-put").await.unwrap().metadata.generation,
        generation
    );
}

#[tokio::test]
async fn discovery_lists_the_scale_subresource() {
    let (_c, client) = cluster().await;
    let list = client.list_api_group_resources("apps/v1").await.unwrap();
    let scale = list
        .resources
        .iter()
        .find(|r| r.name == "deployments/scale")
        .expect("deployments/scale is listed");
    assert_eq!(scale.kind, "Scale");
    assert_eq!(scale.group.as_deref(), Some("autoscaling"));
    for verb in ["get", "patch", "update"] {
        assert!(scale.verbs.iter().any(|v| v == verb), "{verb}");
    }
}
