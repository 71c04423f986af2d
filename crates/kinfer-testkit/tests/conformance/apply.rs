use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::common::{api_status, cluster, local_cluster, rv, widgets};

fn applied(name: &str, spec: Value) -> Value {
    json!({ "apiVersion": "test.kinfer.dev/v1", "kind": "Widget", "metadata": { "name": name }, "spec": spec })
}

fn pp(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

#[tokio::test]
async fn apply_creates_when_absent_and_records_managed_fields() {
    let (_c, client) = cluster().await;
    let o = widgets(&client)
        .patch(
            "a",
            &pp("op"),
            &Patch::Apply(applied("a", json!({"size": 2}))),
        )
        .await
        .unwrap();
    assert_eq!(o.data["spec"]["size"], 2);
    let mf = o.metadata.managed_fields.unwrap();
    assert_eq!(mf.len(), 1);
    assert_eq!(mf[0].manager.as_deref(), Some("op"));
    assert_eq!(mf[0].operation.as_deref(), Some("Apply"));
    let fields = serde_json::to_value(&mf[0].fields_v1).unwrap();
    assert!(fields["f:spec"]["f:size"].is_object(), "{fields}");
}

#[tokio::test]
async fn identical_apply_is_a_no_op_without_new_version_or_event() {
    let Some((c, client)) = local_cluster("counts mutations of the in-process cluster").await
    else {
        return;
    };
    let api = widgets(&client);
    let first = api
        .patch(
            "a",
            &pp("op"),
            &Patch::Apply(applied("a", json!({"size": 2}))),
        )
        .await
        .unwrap();
    let before = c.counters().mutations(None);
    let again = api
        .patch(
            "a",
            &pp("op"),
            &Patch::Apply(applied("a", json!({"size": 2}))),
        )
        .await
        .unwrap();
    assert_eq!(rv(&again), rv(&first));
    assert_eq!(c.counters().mutations(None), before);
    assert_eq!(c.resource_version(), rv(&first));
}

#[tokio::test]
async fn conflicting_apply_is_409_listing_fields_and_force_takes_ownership() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    api.patch(
        "a",
        &pp("one"),
        &Patch::Apply(applied("a", json!({"size": 2, "name": "x"}))),
    )
    .await
    .unwrap();
    let e = api
        .patch(
            "a",
            &pp("two"),
            &Patch::Apply(applied("a", json!({"size": 3}))),
        )
        .await
        .unwrap_err();
    let s = api_status(e);
    assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
    assert!(
        s.message.contains("conflict with \"one\": .spec.size"),
        "{}",
        s.message
    );
    assert_eq!(s.details.unwrap().causes[0].field, ".spec.size");
    let o = api
        .patch(
            "a",
            &pp("two").force(),
            &Patch::Apply(applied("a", json!({"size": 3}))),
        )
        .await
        .unwrap();
    assert_eq!(o.data["spec"]["size"], 3);
    let mf = o.metadata.managed_fields.unwrap();
    let owner_of = |m: &str| {
        mf.iter()
            .find(|e| e.manager.as_deref() == Some(m))
            .map(|e| serde_json::to_value(&e.fields_v1).unwrap())
    };
    assert!(owner_of("two").unwrap()["f:spec"]["f:size"].is_object());
    let one = owner_of("one").unwrap();
    assert!(
        one["f:spec"].get("f:size").is_none() && one["f:spec"]["f:name"].is_object(),
        "{one}"
    );
}

#[tokio::test]
async fn same_value_from_two_managers_is_shared_not_a_conflict() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    api.patch(
        "a",
        &pp("one"),
        &Patch::Apply(applied("a", json!({"size": 2}))),
    )
    .await
    .unwrap();
    let o = api
        .patch(
            "a",
            &pp("two"),
            &Patch::Apply(applied("a", json!({"size": 2}))),
        )
        .await
        .unwrap();
    let mf = o.metadata.managed_fields.unwrap();
    for m in ["one", "two"] {
        let e = mf
            .iter()
            .find(|e| e.manager.as_deref() == Some(m))
            .unwrap_or_else(|| panic!("{m} lost its entry: {mf:?}"));
        let fields = serde_json::to_value(&e.fields_v1).unwrap();
        assert!(fields["f:spec"]["f:size"].is_object(), "{m}: {fields}");
    }
}

#[tokio::test]
async fn fields_no_longer_applied_are_removed_unless_owned_by_another_manager() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    api.patch(
        "a",
        &pp("one"),
        &Patch::Apply(applied("a", json!({"size": 2, "name": "x", "tags": ["t"]}))),
    )
    .await
    .unwrap();
    api.patch(
        "a",
        &pp("two"),
        &Patch::Apply(applied("a", json!({"tags": ["t"]}))),
    )
    .await
    .unwrap();
    let o = api
        .patch(
            "a",
            &pp("one"),
            &Patch::Apply(applied("a", json!({"size": 2}))),
        )
        .await
        .unwrap();
    assert!(o.data["spec"].get("name").is_none(), "{}", o.data);
    assert_eq!(o.data["spec"]["tags"], json!(["t"]));
}

#[tokio::test]
async fn keyed_lists_merge_per_item_between_managers() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    api.patch(
        "a",
        &pp("one"),
        &Patch::Apply(applied(
            "a",
            json!({"size": 1, "ports": [{"name": "http", "port": 80}]}),
        )),
    )
    .await
    .unwrap();
    let o = api
        .patch(
            "a",
            &pp("two"),
            &Patch::Apply(applied(
                "a",
                json!({"ports": [{"name": "grpc", "port": 90}]}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(
        o.data["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "grpc", "port": 90}])
    );
    let o = api
        .patch(
            "a",
            &pp("two"),
            &Patch::Apply(applied("a", json!({"ports": []}))),
        )
        .await
        .unwrap();
    assert_eq!(
        o.data["spec"]["ports"],
        json!([{"name": "http", "port": 80}])
    );
}

#[tokio::test]
async fn apply_to_main_endpoint_ignores_status_and_status_apply_ignores_spec() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    let mut body = applied("a", json!({"size": 1}));
    body["status"] = json!({"phase": "Bogus"});
    let o = api
        .patch("a", &pp("op"), &Patch::Apply(body))
        .await
        .unwrap();
    assert!(o.data.get("status").is_none());
    let st = json!({"apiVersion": "test.kinfer.dev/v1", "kind": "Widget", "metadata": {"name": "a"},
                    "spec": {"size": 9}, "status": {"phase": "Ready"}});
    let o = api
        .patch_status("a", &pp("op-status"), &Patch::Apply(st))
        .await
        .unwrap();
    assert_eq!(o.data["status"]["phase"], "Ready");
    assert_eq!(o.data["spec"]["size"], 1);
    let mf = o.metadata.managed_fields.unwrap();
    assert!(
        mf.iter().any(|e| e.manager.as_deref() == Some("op-status")
            && e.subresource.as_deref() == Some("status"))
    );
}

#[tokio::test]
async fn update_takes_ownership_from_appliers() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    api.patch(
        "a",
        &pp("one"),
        &Patch::Apply(applied("a", json!({"size": 1}))),
    )
    .await
    .unwrap();
    api.patch(
        "a",
        &PatchParams {
            field_manager: Some("editor".into()),
            ..PatchParams::default()
        },
        &Patch::Merge(json!({"spec": {"size": 5}})),
    )
    .await
    .unwrap();
    let e = api
        .patch(
            "a",
            &pp("one"),
            &Patch::Apply(applied("a", json!({"size": 1}))),
        )
        .await
        .unwrap_err();
    assert!(api_status(e).message.contains("conflict with \"editor\""));
}

#[tokio::test]
async fn identical_apply_after_a_status_write_is_still_a_no_op() {
    let Some((c, client)) = local_cluster("counts mutations of the in-process cluster").await
    else {
        return;
    };
    let api = widgets(&client);
    api.patch(
        "a",
        &pp("op"),
        &Patch::Apply(applied("a", json!({"size": 2}))),
    )
    .await
    .unwrap();
    let st = json!({"apiVersion": "test.kinfer.dev/v1", "kind": "Widget", "metadata": {"name": "a"},
                    "status": {"phase": "Ready"}});
    let after_status = api
        .patch_status("a", &pp("op-status"), &Patch::Apply(st))
        .await
        .unwrap();
    let before = c.counters().mutations(None);
    let again = api
        .patch(
            "a",
            &pp("op"),
            &Patch::Apply(applied("a", json!({"size": 2}))),
        )
        .await
        .unwrap();
    assert_eq!(rv(&again), rv(&after_status));
    assert_eq!(c.counters().mutations(None), before);
    assert_eq!(c.resource_version(), rv(&after_status));
    let mf = again.metadata.managed_fields.unwrap();
    let status_entry = mf
        .iter()
        .find(|e| e.manager.as_deref() == Some("op-status"))
        .expect("the status manager keeps its entry");
    let fields = serde_json::to_value(&status_entry.fields_v1).unwrap();
    assert!(fields["f:status"]["f:phase"].is_object(), "{fields}");
}

/// A Deployment a real server accepts (selector and matching labels), with `containers`.
fn deployment(containers: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"selector": {"matchLabels": {"app": "d"}},
                    "template": {"metadata": {"labels": {"app": "d"}},
                                 "spec": {"containers": containers}}}})
}

fn owned(o: &k8s_openapi::api::apps::v1::Deployment, manager: &str) -> Value {
    let mf = o.metadata.managed_fields.as_ref().unwrap();
    let e = mf
        .iter()
        .find(|e| e.manager.as_deref() == Some(manager))
        .unwrap_or_else(|| panic!("no entry for {manager}: {mf:?}"));
    serde_json::to_value(&e.fields_v1).unwrap()["f:spec"]["f:template"]["f:spec"]["f:containers"]
        ["k:{\"name\":\"c\"}"]
        .clone()
}

#[tokio::test]
async fn different_fields_of_one_keyed_item_do_not_conflict() {
    let (_c, client) = cluster().await;
    let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::default_namespaced(client);
    api.patch(
        "d",
        &pp("one"),
        &Patch::Apply(deployment(json!([{"name": "c", "image": "i:1"}]))),
    )
    .await
    .unwrap();
    let o = api
        .patch(
            "d",
            &pp("two"),
            &Patch::Apply(deployment(
                json!([{"name": "c", "resources": {"limits": {"cpu": "1"}}}]),
            )),
        )
        .await
        .unwrap();
    let c = &o
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0];
    assert_eq!(c.image.as_deref(), Some("i:1"));
    assert!(c.resources.is_some());
    let one = owned(&o, "one");
    let two = owned(&o, "two");
    assert!(one["."].is_object() && one["f:image"].is_object(), "{one}");
    assert!(
        two["."].is_object() && two["f:resources"].is_object(),
        "{two}"
    );
    // A non-apply write to another field of the item leaves the item marker with the appliers.
    let o = api
        .patch(
            "d",
            &PatchParams {
                field_manager: Some("editor".into()),
                ..PatchParams::default()
            },
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "c", "args": ["x"]}]}}}})),
        )
        .await
        .unwrap();
    assert!(owned(&o, "one")["."].is_object());
    // So re-applying the same intent is neither a conflict nor a write.
    let again = api
        .patch(
            "d",
            &pp("one"),
            &Patch::Apply(deployment(json!([{"name": "c", "image": "i:1"}]))),
        )
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, o.metadata.resource_version);
}

#[tokio::test]
async fn status_apply_to_a_missing_object_is_404_and_creates_nothing() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    let st = json!({"apiVersion": "test.kinfer.dev/v1", "kind": "Widget", "metadata": {"name": "ghost"},
                    "status": {"phase": "Ready"}});
    let e = api
        .patch_status("ghost", &pp("op-status"), &Patch::Apply(st))
        .await
        .unwrap_err();
    assert_eq!(api_status(e).code, 404);
    let e = api
        .patch_status(
            "ghost",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_status(e).code, 404);
    assert_eq!(api_status(api.get("ghost").await.unwrap_err()).code, 404);
}

fn scheduled(name: &str, affinity: Option<Value>) -> Value {
    let mut pod_spec = json!({"containers": [{"name": "c", "image": "i:1"}]});
    if let Some(a) = affinity {
        pod_spec["affinity"] = a;
    }
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
           "spec": {"selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec}}})
}

fn node_affinity() -> Value {
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}]}}})
}

fn affinity_of(o: &k8s_openapi::api::apps::v1::Deployment) -> Value {
    serde_json::to_value(o).unwrap()["spec"]["template"]["spec"]["affinity"].clone()
}

#[tokio::test]
async fn a_dropped_object_goes_whole_not_leaf_by_leaf() {
    let (_c, client) = cluster().await;
    let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::default_namespaced(client);
    let o = api
        .patch(
            "aff",
            &pp("op"),
            &Patch::Apply(scheduled("aff", Some(node_affinity()))),
        )
        .await
        .unwrap();
    assert_eq!(affinity_of(&o), node_affinity());
    let o = api
        .patch("aff", &pp("op"), &Patch::Apply(scheduled("aff", None)))
        .await
        .unwrap();
    assert_eq!(affinity_of(&o), Value::Null, "{:?}", o.spec);
    let fields =
        serde_json::to_value(&o.metadata.managed_fields.as_ref().unwrap()[0].fields_v1).unwrap();
    assert!(
        fields["f:spec"]["f:template"]["f:spec"]
            .get("f:affinity")
            .is_none(),
        "{fields}"
    );
    // Re-applying the same intent is a no-op.
    let again = api
        .patch("aff", &pp("op"), &Patch::Apply(scheduled("aff", None)))
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, o.metadata.resource_version);
}

#[tokio::test]
async fn a_dropped_object_keeps_what_another_manager_owns_inside_it() {
    let (_c, client) = cluster().await;
    let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::default_namespaced(client);
    api.patch(
        "aff",
        &pp("op"),
        &Patch::Apply(scheduled("aff", Some(node_affinity()))),
    )
    .await
    .unwrap();
    let anti = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}]}});
    let sibling = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "aff"},
                         "spec": {"template": {"spec": {"affinity": anti}}}});
    let o = api
        .patch("aff", &pp("scheduler"), &Patch::Apply(sibling))
        .await
        .unwrap();
    let mut both = node_affinity();
    both["podAntiAffinity"] = anti["podAntiAffinity"].clone();
    assert_eq!(affinity_of(&o), both);
    let o = api
        .patch("aff", &pp("op"), &Patch::Apply(scheduled("aff", None)))
        .await
        .unwrap();
    // The parent stays for the other manager's field; nothing of the dropped part lingers.
    assert_eq!(affinity_of(&o), anti);
}

#[tokio::test]
async fn dropping_a_status_object_with_required_children_removes_it_whole() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    api.patch(
        "a",
        &pp("op"),
        &Patch::Apply(applied("a", json!({"size": 1}))),
    )
    .await
    .unwrap();
    let status = |s: Value| {
        json!({"apiVersion": "test.kinfer.dev/v1", "kind": "Widget", "metadata": {"name": "a"},
               "status": s})
    };
    let resolved = json!({"nodeSelectorTerms": [{"key": "gpu", "values": ["a100"]}]});
    let o = api
        .patch_status(
            "a",
            &pp("op-status"),
            &Patch::Apply(status(
                json!({"phase": "Ready", "resolvedNodeAffinity": resolved}),
            )),
        )
        .await
        .unwrap();
    assert_eq!(o.data["status"]["resolvedNodeAffinity"], resolved);
    let o = api
        .patch_status(
            "a",
            &pp("op-status"),
            &Patch::Apply(status(json!({"phase": "Ready"}))),
        )
        .await
        .expect("dropping resolvedNodeAffinity must not leave an invalid empty object");
    assert_eq!(o.data["status"], json!({"phase": "Ready"}));
    // A status the manager stops applying altogether goes too.
    let o = api
        .patch_status(
            "a",
            &pp("op-status"),
            &Patch::Apply(applied("a", json!({"size": 1}))),
        )
        .await
        .unwrap();
    assert!(o.data.get("status").is_none(), "{}", o.data);
    assert_eq!(o.data["spec"]["size"], 1);
}

/// A write that names another object's UID was meant for an object that is gone (deleted and
/// recreated by someone else): the server refuses it with 422 on `metadata.uid` instead of
/// applying it to the new object; the right UID, or none, is accepted.
#[tokio::test]
async fn apply_naming_another_uid_is_refused_and_changes_nothing() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    let first = api
        .patch(
            "a",
            &pp("op"),
            &Patch::Apply(applied("a", json!({"size": 2}))),
        )
        .await
        .unwrap();
    let mut stale = applied("a", json!({"size": 3}));
    stale["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    let err = api_status(
        api.patch("a", &pp("op"), &Patch::Apply(stale))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422, "{err:?}");
    assert!(err.message.contains("metadata.uid"), "{}", err.message);
    let merge = json!({"metadata": {"uid": "00000000-0000-0000-0000-000000000000"},
                       "spec": {"size": 4}});
    let err = api_status(
        api.patch("a", &PatchParams::default(), &Patch::Merge(merge))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422, "{err:?}");
    let now = api.get("a").await.unwrap();
    assert_eq!(now.data["spec"]["size"], 2, "nothing applied");
    assert_eq!(rv(&now), rv(&first));

    let mut right = applied("a", json!({"size": 5}));
    right["metadata"]["uid"] = json!(first.metadata.uid);
    let ok = api
        .patch("a", &pp("op"), &Patch::Apply(right))
        .await
        .unwrap();
    assert_eq!(ok.data["spec"]["size"], 5);
    assert_eq!(ok.metadata.uid, first.metadata.uid);
}

/// An update's UID is a precondition: naming another object's UID is a 409.
#[tokio::test]
async fn update_naming_another_uid_is_a_precondition_conflict() {
    let (_c, client) = cluster().await;
    let api = widgets(&client);
    let mut o = api
        .patch(
            "a",
            &pp("op"),
            &Patch::Apply(applied("a", json!({"size": 2}))),
        )
        .await
        .unwrap();
    o.metadata.uid = Some("00000000-0000-0000-0000-000000000000".into());
    let err = api_status(
        api.replace("a", &kube::api::PostParams::default(), &o)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409, "{err:?}");
    assert!(
        err.message.contains("Precondition failed"),
        "{}",
        err.message
    );
}
