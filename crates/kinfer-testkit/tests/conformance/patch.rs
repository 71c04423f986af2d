use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{cluster, create_widget, status_code, widgets};

fn deployment() -> Deployment {
    serde_json::from_value(json!({
        "metadata": { "name": "d" },
        "spec": {
            "selector": { "matchLabels": { "app": "d" } },
            "template": {
                "metadata": { "labels": { "app": "d" } },
                "spec": { "containers": [
                    { "name": "main", "image": "img:1", "env": [{ "name": "A", "value": "1" }],
                      "ports": [{ "containerPort": 80 }] },
                    { "name": "side", "image": "side:1" }
                ]}
            }
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn json_merge_patch() {
    let (_c, client) = cluster().await;
    create_widget(&client, "a", json!({"size": 1, "tags": ["x", "y"]})).await;
    let o = widgets(&client)
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"tags": ["z"], "name": "n"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        o.data["spec"],
        json!({"size": 1, "color": "red", "tags": ["z"], "name": "n"})
    );
}

#[tokio::test]
async fn json_patch_rfc6902() {
    let (_c, client) = cluster().await;
    create_widget(&client, "a", json!({"size": 1, "tags": ["x"]})).await;
    let body = json!([
        { "op": "add", "path": "/spec/tags/-", "value": "y" },
        { "op": "replace", "path": "/spec/size", "value": 3 },
        { "op": "test", "path": "/spec/color", "value": "red" }
    ]);
    let uri = format!(
        "/apis/test.kinfer.dev/v1/namespaces/{}/widgets/a",
        client.default_namespace()
    );
    let req = hyper::Request::patch(uri)
        .header("content-type", "application/json-patch+json")
        .body(body.to_string().into_bytes())
        .unwrap();
    let o: kube::core::DynamicObject = client.request(req).await.unwrap();
    assert_eq!(o.data["spec"]["tags"], json!(["x", "y"]));
    assert_eq!(o.data["spec"]["size"], json!(3));
}

#[tokio::test]
async fn strategic_merge_merges_containers_env_and_ports_by_key() {
    let (_c, client) = cluster().await;
    let api: Api<Deployment> = Api::default_namespaced(client);
    api.create(&PostParams::default(), &deployment())
        .await
        .unwrap();
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        { "name": "main", "image": "img:2", "env": [{ "name": "B", "value": "2" }], "ports": [{ "containerPort": 81 }] }
    ]}}}});
    let d = api
        .patch("d", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let v = serde_json::to_value(d.spec.unwrap().template.spec.unwrap().containers).unwrap();
    assert_eq!(v[0]["image"], "img:2");
    // The real server's order: the patch's items first, then those only the live list has.
    assert_eq!(
        v[0]["env"],
        json!([{ "name": "B", "value": "2" }, { "name": "A", "value": "1" }])
    );
    // (Compared by port alone: the real server also defaults each port's protocol.)
    let ports: Vec<&serde_json::Value> = v[0]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["containerPort"])
        .collect();
    assert_eq!(ports, [&json!(81), &json!(80)]);
    assert_eq!(v[1]["name"], "side");
}

#[tokio::test]
async fn strategic_merge_is_refused_for_custom_resources() {
    let (_c, client) = cluster().await;
    create_widget(&client, "a", json!({"size": 1})).await;
    let e = widgets(&client)
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&e), 415);
}

#[tokio::test]
async fn patch_of_missing_object_is_404() {
    let (_c, client) = cluster().await;
    let e = widgets(&client)
        .patch("nope", &PatchParams::default(), &Patch::Merge(json!({})))
        .await
        .unwrap_err();
    assert_eq!(status_code(&e), 404);
}
