use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use crate::common::{
    api_status, cluster, create_widget, local_cluster, rv, status_code, widget, widgets,
};

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
    // Later writes of any kind get higher versions (etcd's revision on a real cluster, where
    // other writers run in between; one more in process, where nothing else writes).
    if crate::common::external() {
        assert!(rv(&b) > rv(&a));
    } else {
        assert_eq!(rv(&b), rv(&a) + 1);
    }
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
            .filter(|n| n != crate::common::ROOT_CA)
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
    let ns = client.default_namespace().to_owned();
    let all: Api<ConfigMap> = Api::all(client);
    let l = all
        .list(&ListParams::default().fields(&format!("metadata.namespace={ns},metadata.name!=a")))
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
    let Some((c, client)) = local_cluster("injects faults").await else {
        return;
    };
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
    let team = crate::common::unique("team");
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": team}})).unwrap();
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
    assert!(names.contains(&"default".to_owned()) && names.contains(&team));
    api.delete(&team, &DeleteParams::default()).await.unwrap();
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
        .filter(|n| n != crate::common::ROOT_CA)
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

#[tokio::test]
async fn continue_pages_report_the_first_page_version_so_a_watch_misses_nothing() {
    let (_c, client) = cluster().await;
    for i in 0..3 {
        create_widget(&client, &format!("w{i}"), json!({"size": 1})).await;
    }
    let api = widgets(&client);
    let p1 = api.list(&ListParams::default().limit(2)).await.unwrap();
    let first_rv = p1.metadata.resource_version.clone().unwrap();
    // A change between the pages: the watch started from the last page must see it.
    create_widget(&client, "between", json!({"size": 1})).await;
    let p2 = api
        .list(
            &ListParams::default()
                .limit(2)
                .continue_token(p1.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(
        p2.metadata.resource_version.as_deref(),
        Some(first_rv.as_str())
    );
    let last_rv = p2.metadata.resource_version.unwrap();
    let stream = api
        .watch(&kube::api::WatchParams::default(), &last_rv)
        .await
        .unwrap();
    futures::pin_mut!(stream);
    let seen = tokio::time::timeout(crate::common::TIMEOUT, async {
        while let Some(ev) = futures::StreamExt::next(&mut stream).await {
            if let kube::api::WatchEvent::Added(o) = ev.unwrap()
                && o.metadata.name.as_deref() == Some("between")
            {
                return true;
            }
        }
        false
    })
    .await
    .unwrap();
    assert!(seen);
}

#[tokio::test]
async fn paginated_relist_survives_history_trimming() {
    if crate::common::skip_external("starts a cluster with a small history") {
        return;
    }
    let c = kinfer_testkit::TestCluster::start_with(kinfer_testkit::Options {
        history_limit: 3,
        ..kinfer_testkit::Options::default()
    })
    .await
    .unwrap();
    c.install_crd_value(crate::common::widget_crd()).unwrap();
    let client = c.client().unwrap();
    for i in 0..4 {
        create_widget(&client, &format!("w{i}"), json!({"size": 1})).await;
    }
    let api = widgets(&client);
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(1);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.unwrap();
        names.extend(page.items.into_iter().map(|o| o.metadata.name.unwrap()));
        // Churn well past the history window between pages.
        for j in 0..5 {
            let n = format!("churn{}-{j}", names.len());
            create_widget(&client, &n, json!({"size": 1})).await;
            api.delete(&n, &kube::api::DeleteParams::default())
                .await
                .unwrap();
        }
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => break,
        }
    }
    assert_eq!(names, ["w0", "w1", "w2", "w3"]);
}

#[tokio::test]
async fn custom_resource_put_without_resource_version_is_422() {
    let (_c, client) = cluster().await;
    let made = create_widget(&client, "a", json!({"size": 1})).await;
    let mut body = made.clone();
    body.metadata.resource_version = None;
    body.data["spec"]["size"] = json!(2);
    let s = api_status(
        widgets(&client)
            .replace("a", &PostParams::default(), &body)
            .await
            .unwrap_err(),
    );
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
    assert!(
        s.message.contains(
            "metadata.resourceVersion: Invalid value: 0: must be specified for an update"
        ),
        "{}",
        s.message
    );
    // Built-in kinds allow unconditional updates.
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    let mut c = cms
        .create(&PostParams::default(), &cm("b", &[]))
        .await
        .unwrap();
    c.metadata.resource_version = None;
    cms.replace("b", &PostParams::default(), &c).await.unwrap();
}

/// A raw request through the client, answering (status code, body); `/namespaces/default/`
/// in `uri` stands for the test's namespace.
async fn raw(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: &str,
) -> (u16, serde_json::Value) {
    let req = hyper::http::Request::builder()
        .method(method)
        .uri(uri.replace(
            "/namespaces/default/",
            &format!("/namespaces/{}/", client.default_namespace()),
        ))
        .header("content-type", content_type)
        .body(body.as_bytes().to_vec())
        .unwrap();
    match client.request::<serde_json::Value>(req).await {
        Ok(v) => (200, v),
        Err(kube::Error::Api(s)) => (s.code, serde_json::to_value(&*s).unwrap()),
        Err(e) => panic!("transport error: {e:?}"),
    }
}

#[tokio::test]
async fn malformed_bodies_are_refused_without_harming_the_server() {
    let (_c, client) = cluster().await;
    let json = "application/json";
    for (method, uri, ct, body) in [
        (
            "POST",
            "/api/v1/namespaces",
            json,
            r#"{"metadata":{"name":"a"},"spec":"x"}"#,
        ),
        (
            "POST",
            "/api/v1/namespaces",
            json,
            r#"{"metadata":{"name":"b","labels":"x"}}"#,
        ),
        (
            "POST",
            "/api/v1/namespaces/default/pods",
            json,
            r#"{"metadata":{"name":"p"},"status":"x"}"#,
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            json,
            r#"{"metadata":"x"}"#,
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            json,
            r#"{"metadata":{"name":"c","annotations":{"a":1}}}"#,
        ),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps",
            json,
            r#"{"metadata":{"name":"c","finalizers":"x"}}"#,
        ),
    ] {
        let (code, body) = raw(&client, method, uri, ct, body).await;
        assert_eq!(code, 400, "{method} {uri}: {body}");
    }
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.create(&PostParams::default(), &cm("c", &[]))
        .await
        .unwrap();
    // A body that is no patch is a bad request; a patch whose result cannot be decoded is an
    // invalid `patch`.
    for (body, want) in [
        (r#""x""#, 400),
        (r#"{"metadata":"x"}"#, 422),
        (r#"{"metadata":{"labels":{"a":[1]}}}"#, 422),
    ] {
        let (code, b) = raw(
            &client,
            "PATCH",
            "/api/v1/namespaces/default/configmaps/c",
            "application/merge-patch+json",
            body,
        )
        .await;
        assert_eq!(code, want, "{body}: {b}");
        if want == 422 {
            assert_eq!(b["details"]["causes"][0]["field"], "patch", "{b}");
        }
    }
    let (code, b) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c",
        "application/json-patch+json",
        r#"[{"op":"replace","path":"","value":7}]"#,
    )
    .await;
    // Refused (the in-process cluster), or taken as a no-op (the real server's JSON patch
    // library does not replace the root): either way the object is intact.
    assert!(
        matches!(code, 400 | 422) || (code == 200 && b["data"] == json!({"k": "v"})),
        "{code}: {b}"
    );
    // POST on a named object or a subresource is not a create.
    for uri in [
        "/api/v1/namespaces/default/configmaps/c",
        "/api/v1/namespaces/default/pods/x/log",
    ] {
        let (code, b) = raw(&client, "POST", uri, json, r#"{"metadata":{"name":"c"}}"#).await;
        assert!(matches!(code, 404 | 405), "{uri}: {b}");
    }
    // The server still works.
    cms.get("c").await.unwrap();
    let nss: Api<Namespace> = Api::all(client);
    nss.get("default").await.unwrap();
}

#[tokio::test]
async fn names_and_labels_are_validated_like_the_real_server() {
    let (_c, client) = cluster().await;
    let long = "x".repeat(64);
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    // ConfigMaps (and custom resources) take DNS-1123 subdomains: dots, up to 253 characters.
    cms.create(&PostParams::default(), &cm(&format!("a.{long}"), &[]))
        .await
        .unwrap();
    for bad in ["Upper", "under_score", "-lead", &"x".repeat(254)] {
        let s = api_status(
            cms.create(&PostParams::default(), &cm(bad, &[]))
                .await
                .unwrap_err(),
        );
        assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{bad}");
        assert_eq!(s.details.unwrap().causes[0].field, "metadata.name");
    }
    let s = api_status(
        widgets(&client)
            .create(
                &PostParams::default(),
                &widget("Bad_Name", json!({"size": 1})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(s.code, 422);
    assert!(
        s.message
            .starts_with("Widget.test.kinfer.dev \"Bad_Name\" is invalid: metadata.name"),
        "{}",
        s.message
    );
    // Namespaces are DNS-1123 labels: no dots, at most 63 characters.
    let nss: Api<Namespace> = Api::all(client.clone());
    for bad in ["a.b", long.as_str()] {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": bad}})).unwrap();
        let e = nss.create(&PostParams::default(), &ns).await.unwrap_err();
        assert_eq!(status_code(&e), 422, "{bad}");
    }
    // Services are DNS-1035 labels: they start with a letter.
    let svcs: Api<k8s_openapi::api::core::v1::Service> = Api::default_namespaced(client.clone());
    let svc: k8s_openapi::api::core::v1::Service =
        serde_json::from_value(json!({"metadata": {"name": "1svc"}})).unwrap();
    let e = svcs.create(&PostParams::default(), &svc).await.unwrap_err();
    assert_eq!(status_code(&e), 422);
    // RBAC names are path segments: colons are fine.
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(client.clone());
    let role_name = crate::common::unique("system:thing");
    let role: k8s_openapi::api::rbac::v1::ClusterRole =
        serde_json::from_value(json!({"metadata": {"name": role_name}})).unwrap();
    roles.create(&PostParams::default(), &role).await.unwrap();
    roles
        .delete(&role_name, &DeleteParams::default())
        .await
        .unwrap();
    // Label keys and values, on create and on update.
    for (k, v) in [
        ("ok", long.as_str()),
        ("bad key", "v"),
        ("Example.com/k", "v"),
        ("k", "bad value!"),
    ] {
        let e = cms
            .create(&PostParams::default(), &cm("labelled", &[(k, v)]))
            .await
            .unwrap_err();
        let s = api_status(e);
        assert_eq!(s.code, 422, "{k}={v}");
        assert_eq!(s.details.unwrap().causes[0].field, "metadata.labels");
    }
    cms.create(
        &PostParams::default(),
        &cm("labelled", &[("example.com/k_1", "V.a-l_ue")]),
    )
    .await
    .unwrap();
    let e = cms
        .patch(
            "labelled",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"k": long}}})),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&e), 422);
    // A long generateName prefix is cut to leave room for the suffix.
    let mut g = cm("", &[]);
    g.metadata.name = None;
    g.metadata.generate_name = Some(format!("{long}-"));
    let made = cms.create(&PostParams::default(), &g).await.unwrap();
    assert_eq!(made.metadata.name.unwrap().len(), 63);
}
