use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::{api_status, cluster, create_widget, widget, widgets};

/// The causes of the 422 a create of a Widget with `spec` gets.
async fn invalid_causes(spec: serde_json::Value) -> Vec<kube::core::response::StatusCause> {
    let (_c, client) = cluster().await;
    let e = widgets(&client)
        .create(&PostParams::default(), &widget("bad", spec))
        .await
        .unwrap_err();
    let s = api_status(e);
    assert_eq!(
        (s.code, s.reason.as_str()),
        (422, "Invalid"),
        "{}",
        s.message
    );
    s.details.unwrap().causes
}

/// The fields the 422 names, once each, in order (without the field-less causes: the real
/// server adds some for `anyOf` failures and for CEL rules it did not evaluate).
async fn invalid_fields(spec: serde_json::Value) -> Vec<String> {
    let mut fields: Vec<String> = Vec::new();
    for c in invalid_causes(spec).await {
        if c.field != "<nil>" && !fields.contains(&c.field) {
            fields.push(c.field);
        }
    }
    fields
}

#[tokio::test]
async fn a_blocking_error_leaves_cel_rules_unchecked_and_says_so() {
    // A wrong type blocks the Widget's CEL rules: a last cause without a field says so.
    let causes = invalid_causes(json!({"size": "big"})).await;
    let last = causes.last().unwrap();
    assert_eq!(last.field, "<nil>", "{causes:?}");
    assert!(
        last.message
            .contains("some validation rules were not checked because the object was invalid"),
        "{causes:?}"
    );
    // A pattern violation does not block them: no such cause.
    let causes = invalid_causes(json!({"size": 1, "name": "UPPER"})).await;
    assert!(causes.iter().all(|c| c.field != "<nil>"), "{causes:?}");
}

#[tokio::test]
async fn wrong_type_is_422_with_field() {
    assert_eq!(invalid_fields(json!({"size": "big"})).await, ["spec.size"]);
}

#[tokio::test]
async fn missing_required_is_422() {
    assert_eq!(invalid_fields(json!({"color": "red"})).await, ["spec.size"]);
}

#[tokio::test]
async fn enum_pattern_and_bounds_are_enforced() {
    assert_eq!(
        invalid_fields(json!({"size": 1, "color": "green"})).await,
        ["spec.color"]
    );
    assert_eq!(
        invalid_fields(json!({"size": 1, "name": "UPPER"})).await,
        ["spec.name"]
    );
    assert_eq!(invalid_fields(json!({"size": 11})).await, ["spec.size"]);
    assert_eq!(
        invalid_fields(json!({"size": 1, "name": "waytoolongname"})).await,
        ["spec.name"]
    );
    assert_eq!(
        invalid_fields(json!({"size": 1, "tags": ["a", "b", "c", "d"]})).await,
        ["spec.tags"]
    );
    assert_eq!(
        invalid_fields(json!({"size": 1, "tags": [""]})).await,
        ["spec.tags[0]"]
    );
}

#[tokio::test]
async fn formats_int_or_string_quantity_and_date_time() {
    assert_eq!(
        invalid_fields(json!({"size": 1, "memory": true})).await,
        ["spec.memory"]
    );
    assert_eq!(
        invalid_fields(json!({"size": 1, "when": "yesterday"})).await,
        ["spec.when"]
    );
    let (_c, client) = cluster().await;
    create_widget(
        &client,
        "ok",
        json!({"size": 1, "memory": "1Gi", "when": "2024-01-02T03:04:05Z"}),
    )
    .await;
    create_widget(&client, "ok2", json!({"size": 1, "memory": 3})).await;
    // The server does not check `format: quantity` (not a format it knows): a typed client
    // finds such a value when it parses it.
    create_widget(&client, "lots", json!({"size": 1, "memory": "lots"})).await;
}

#[tokio::test]
async fn defaults_are_applied_and_unknown_fields_pruned() {
    let (_c, client) = cluster().await;
    let o = create_widget(
        &client,
        "a",
        json!({"size": 1, "bogus": 1, "free": {"any": {"thing": 1}}, "labels": {"a": "b"}}),
    )
    .await;
    assert_eq!(
        o.data["spec"],
        json!({"size": 1, "color": "red", "free": {"any": {"thing": 1}}, "labels": {"a": "b"}})
    );
}

#[tokio::test]
async fn cel_self_equals_old_self_makes_a_field_immutable() {
    let (_c, client) = cluster().await;
    create_widget(&client, "a", json!({"size": 1, "frozen": "v1"})).await;
    let api = widgets(&client);
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 2}})),
    )
    .await
    .unwrap();
    let e = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"frozen": "v2"}})),
        )
        .await
        .unwrap_err();
    let s = api_status(e);
    assert_eq!(s.code, 422);
    let c = &s.details.unwrap().causes[0];
    assert_eq!(c.field, "spec.frozen");
    assert!(c.message.contains("frozen is immutable"));
}

#[tokio::test]
async fn null_for_a_non_nullable_field_is_pruned_then_defaulted() {
    let (_c, client) = cluster().await;
    let o = create_widget(
        &client,
        "a",
        json!({"size": 1, "color": null, "name": null, "labels": {"k": null, "j": "v"}}),
    )
    .await;
    assert_eq!(o.data["spec"]["color"], "red", "{}", o.data);
    assert!(o.data["spec"].get("name").is_none(), "{}", o.data);
    assert_eq!(o.data["spec"]["labels"], json!({"j": "v"}));
    // A PUT that sends null gets the default too.
    let mut body = o.clone();
    body.data["spec"]["color"] = serde_json::Value::Null;
    let o = widgets(&client)
        .replace("a", &PostParams::default(), &body)
        .await
        .unwrap();
    assert_eq!(o.data["spec"]["color"], "red", "{}", o.data);
}
