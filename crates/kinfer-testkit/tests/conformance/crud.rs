use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use crate::common::{api_status, cluster, create_widget, rv, status_code, widget, widgets};

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect::<serde_json::Map<_, _>>() },
        "data": { "k": "v" }
    }))
    .unwrap()
}

#[tokio::test]
async fn create_get_and_404_status() {
    let (_c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let made = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    assert!(made.metadata.uid.is_some());
    assert!(made.metadata.creation_timestamp.is_some());
    assert_eq!(api.get("a").await.unwrap().data.unwrap()["k"], "v");
    let err = api_status(api.get("missing").await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "configmaps \"missing\" not found");
}

#[tokio::test]
async fn create_conflict_is_409_already_exists() {
    let (_c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let err = api_status(
        api.create(&PostParams::default(), &cm("a", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
}

#[tokio::test]
async fn generate_name_makes_unique_names() {
    let (_c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let mut o = cm("", &[]);
    o.metadata.name = None;
    o.metadata.generate_name = Some("gen-".into());
    let a = api.create(&PostParams::default(), &o).await.unwrap();
    let b = api.create(&PostParams::default(), &o).await.unwrap();
    let (na, nb) = (a.metadata.name.unwrap(), b.metadata.name.unwrap());
    assert!(na.starts_with("gen-") && na.len() == 9, "{na}");
    assert_ne!(na, nb);
}

#[tokio::test]
async fn create_in_missing_namespace_is_404() {
    let (_c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "nope");
    assert_eq!(
        status_code(
            &api.create(&PostParams::default(), &cm("a", &[]))
                .await
                .unwrap_err()
        ),
        404
    );
}

#[tokio::test]
async fn update_with_stale_resource_version_is_409() {
    let (_c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    let first = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let mut second = first.clone();
    second.data = Some([("k".to_owned(), "2".to_owned())].into());
    let updated = api
        .replace("a", &PostParams::default(), &second)
        .await
        .unwrap();
    assert_ne!(
        updated.metadata.resource_version,
        first.metadata.resource_version
    );
    let err = api_status(
        api.replace("a", &PostParams::default(), &first)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
}

#[tokio::test]
async fn resource_version_is_a_global_counter() {
    let (_c, client) = cluster().await;
    let a = create_widget(&client, "a", json!({"size": 1})).await;
    let b = create_widget(&client, "b", json!({"size": 1})).await;
    assert_eq!(rv(&b), rv(&a) + 1);
}

#[tokio::test]
async fn list_with_label_and_field_selectors() {
    let (_c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(
        &PostParams::default(),
        &cm("a", &[("app", "x"), ("tier", "web")]),
    )
    .await
    .unwrap();
    api.create(&PostParams::default(), &cm("b", &[("app", "y")]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("c", &[]))
        .await
        .unwrap();
    let names = |l: kube::api::ObjectList<ConfigMap>| {
        l.items
            .into_iter()
            .map(|o| o.metadata.name.unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("app=x"))
                .await
                .unwrap()
        ),
        ["a"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("app in (x,y)"))
                .await
                .unwrap()
        ),
        ["a", "b"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("!app"))
                .await
                .unwrap()
        ),
        ["c"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().fields("metadata.name=b"))
                .await
                .unwrap()
        ),
        ["b"]
    );
    let all: Api<ConfigMap> = Api::all(client);
    let l = all
        .list(&ListParams::default().fields("metadata.namespace=default,metadata.name!=a"))
        .await
        .unwrap();
    assert_eq!(names(l), ["b", "c"]);
}

#[tokio::test]
async fn list_pagination_with_limit_and_continue() {
    let (_c, client) = cluster().await;
    for i in 0..5 {
        create_widget(&client, &format!("w{i}"), json!({"size": 1})).await;
    }
    let api = widgets(&client);
    let p1 = api.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(p1.items.len(), 2);
    let token = p1.metadata.continue_.clone().unwrap();
    assert_eq!(p1.metadata.remaining_item_count, Some(3));
    let p2 = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    let p3 = api
        .list(
            &ListParams::default()
                .limit(2)
                .continue_token(p2.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert!(p3.metadata.continue_.as_deref().is_none_or(str::is_empty));
    let names: Vec<_> = [p1, p2, p3]
        .into_iter()
        .flat_map(|p| p.items)
        .map(|o| o.metadata.name.unwrap())
        .collect();
    assert_eq!(names, ["w0", "w1", "w2", "w3", "w4"]);
}

#[tokio::test]
async fn expired_continue_token_is_410() {
    let (c, client) = cluster().await;
    for i in 0..3 {
        create_widget(&client, &format!("w{i}"), json!({"size": 1})).await;
    }
    let api = widgets(&client);
    let p1 = api.list(&ListParams::default().limit(1)).await.unwrap();
    c.faults().expire_history();
    create_widget(&client, "later", json!({"size": 1})).await;
    let err = api
        .list(
            &ListParams::default()
                .limit(1)
                .continue_token(p1.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap_err();
    let s = api_status(err);
    assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
}

#[tokio::test]
async fn cluster_scoped_resources() {
    let (_c, client) = cluster().await;
    let api: Api<Namespace> = Api::all(client);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
    let made = api.create(&PostParams::default(), &ns).await.unwrap();
    assert_eq!(made.metadata.namespace, None);
    assert_eq!(made.status.unwrap().phase.as_deref(), Some("Active"));
    let names: Vec<_> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| n.metadata.name.unwrap())
        .collect();
    assert!(names.contains(&"default".to_owned()) && names.contains(&"team".to_owned()));
}

#[tokio::test]
async fn delete_with_preconditions() {
    let (_c, client) = cluster().await;
    let made = create_widget(&client, "a", json!({"size": 1})).await;
    let api = widgets(&client);
    let bad = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("other".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    assert_eq!(status_code(&api.delete("a", &bad).await.unwrap_err()), 409);
    let good = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: made.metadata.uid.clone(),
            resource_version: made.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    api.delete("a", &good).await.unwrap();
    assert_eq!(status_code(&api.get("a").await.unwrap_err()), 404);
}

#[tokio::test]
async fn delete_collection_by_label() {
    let (_c, client) = cluster().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &cm("a", &[("x", "1")]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("b", &[("x", "1")]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("c", &[]))
        .await
        .unwrap();
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("x=1"),
    )
    .await
    .unwrap();
    let left: Vec<_> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| o.metadata.name.unwrap())
        .collect();
    assert_eq!(left, ["c"]);
}

#[tokio::test]
async fn dry_run_create_stores_nothing() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    let pp = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    api.create(&pp, &widget("dry", json!({"size": 1})))
        .await
        .unwrap();
    assert_eq!(status_code(&api.get("dry").await.unwrap_err()), 404);
}
