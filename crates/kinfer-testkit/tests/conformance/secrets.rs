//! Secrets: `stringData` is a write-only convenience merged into `data`.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{api_status, cluster};

fn data(s: &Secret) -> BTreeMap<String, String> {
    s.data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), String::from_utf8(v.0.clone()).unwrap()))
        .collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[tokio::test]
async fn string_data_is_merged_into_data_and_never_stored() {
    let (_c, client) = cluster().await;
    let api: Api<Secret> = Api::default_namespaced(client);
    let mut s = Secret::default();
    s.metadata.name = Some("creds".into());
    s.data = Some(BTreeMap::from([
        ("keep".to_owned(), ByteString(b"k".to_vec())),
        ("user".to_owned(), ByteString(b"old".to_vec())),
    ]));
    // stringData wins over data for the same key; any bytes survive the base64 round trip.
    s.string_data = Some(map(&[("user", "admin"), ("pass", "p@ss wörd\n~~~")]));
    let made = api.create(&PostParams::default(), &s).await.unwrap();
    let want = map(&[("keep", "k"), ("pass", "p@ss wörd\n~~~"), ("user", "admin")]);
    assert_eq!(made.string_data, None);
    assert_eq!(data(&made), want);
    let got = api.get("creds").await.unwrap();
    assert_eq!((got.string_data.as_ref(), data(&got)), (None, want.clone()));
    let listed = api.list(&ListParams::default()).await.unwrap();
    let listed = listed
        .items
        .iter()
        .find(|x| x.metadata.name.as_deref() == Some("creds"))
        .unwrap();
    assert_eq!((listed.string_data.as_ref(), data(listed)), (None, want));

    // Update (PUT).
    let mut s = got;
    s.string_data = Some(map(&[("pass", "new")]));
    let put = api
        .replace("creds", &PostParams::default(), &s)
        .await
        .unwrap();
    assert_eq!(put.string_data, None);
    assert_eq!(
        data(&put),
        map(&[("keep", "k"), ("pass", "new"), ("user", "admin")])
    );

    // Merge patch.
    let patched = api
        .patch(
            "creds",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"token": "t"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.string_data, None);
    assert_eq!(data(&patched)["token"], "t");
    assert_eq!(data(&patched)["pass"], "new");
}

#[tokio::test]
async fn applied_string_data_is_merged_into_data() {
    let (_c, client) = cluster().await;
    let api: Api<Secret> = Api::default_namespaced(client);
    let mut s = Secret::default();
    s.metadata.name = Some("applied".into());
    s.string_data = Some(map(&[("url", "postgres://db:5432")]));
    let o = api
        .patch("applied", &PatchParams::apply("op"), &Patch::Apply(&s))
        .await
        .unwrap();
    assert_eq!(o.string_data, None);
    assert_eq!(data(&o), map(&[("url", "postgres://db:5432")]));
    assert_eq!(
        api.get("applied").await.unwrap().string_data,
        None,
        "stored without stringData"
    );
    // The same intent again changes nothing.
    let again = api
        .patch("applied", &PatchParams::apply("op"), &Patch::Apply(&s))
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, o.metadata.resource_version);
    assert_eq!(data(&again), map(&[("url", "postgres://db:5432")]));
    // A new value reaches data.
    s.string_data = Some(map(&[("url", "postgres://db:6543")]));
    let o = api
        .patch("applied", &PatchParams::apply("op"), &Patch::Apply(&s))
        .await
        .unwrap();
    assert_eq!(data(&o), map(&[("url", "postgres://db:6543")]));
    assert_eq!(o.string_data, None);
}

#[tokio::test]
async fn string_data_of_the_wrong_type_is_400() {
    let (_c, client) = cluster().await;
    let ar = kube::core::ApiResource::erase::<Secret>(&());
    let api: Api<DynamicObject> = Api::default_namespaced_with(client, &ar);
    let bad: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"}, "stringData": {"n": 1}
    }))
    .unwrap();
    let e = api.create(&PostParams::default(), &bad).await.unwrap_err();
    assert_eq!(api_status(e).code, 400);
}
