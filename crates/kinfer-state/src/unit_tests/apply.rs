use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::core::ObjectMeta;
use serde_json::json;

use super::*;

fn scheme() -> LabelScheme {
    LabelScheme {
        domain: "example.com".into(),
        controller: "toy".into(),
        manager: "toy-controller".into(),
    }
}

fn parent(ns: Option<&str>) -> ParentRef {
    ParentRef {
        api_version: "example.com/v1".into(),
        kind: "Toy".into(),
        name: "p".into(),
        namespace: ns.map(str::to_owned),
        uid: "uid-1".into(),
        labels: [("team-a".to_owned(), "x".to_owned())].into(),
    }
}

fn cm(ns: Option<&str>) -> DesiredObject {
    DesiredObject::from_typed(&ConfigMap {
        metadata: ObjectMeta {
            name: Some("c".into()),
            namespace: ns.map(str::to_owned),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    })
    .unwrap()
}

#[test]
fn owner_reference_rules() {
    let none = LabelPropagation::default();
    // Same namespace (defaulted): owner reference set.
    let (key, body) =
        prepare(&cm(None), true, &parent(Some("ns")), &scheme(), &none, None).unwrap();
    assert_eq!(key.namespace.as_deref(), Some("ns"));
    assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    assert_eq!(body["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(body["apiVersion"], "v1");
    assert_eq!(body["kind"], "ConfigMap");
    // Across namespaces: rejected with owner, fine without.
    let e = prepare(
        &cm(Some("other")),
        true,
        &parent(Some("ns")),
        &scheme(),
        &none,
        None,
    )
    .unwrap_err();
    assert!(matches!(e, ApplyError::OwnerAcrossNamespaces { .. }));
    assert_eq!(e.category(), ErrorCategory::InvalidSpec);
    let (_, body) = prepare(
        &cm(Some("other")),
        false,
        &parent(Some("ns")),
        &scheme(),
        &none,
        None,
    )
    .unwrap();
    assert!(body["metadata"]["ownerReferences"].is_null());
    // Namespaced parent, cluster-scoped child.
    let ns_obj = DesiredObject::from_typed(&Namespace {
        metadata: ObjectMeta {
            name: Some("n".into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    })
    .unwrap();
    let e = prepare(&ns_obj, true, &parent(Some("ns")), &scheme(), &none, None).unwrap_err();
    assert!(matches!(e, ApplyError::OwnerOfClusterScoped { .. }));
    // Cluster-scoped parent: may own cluster-scoped and namespaced children.
    assert!(prepare(&ns_obj, true, &parent(None), &scheme(), &none, None).is_ok());
    assert!(
        prepare(
            &cm(Some("any")),
            true,
            &parent(None),
            &scheme(),
            &none,
            None
        )
        .is_ok()
    );
    let e = prepare(&cm(None), true, &parent(None), &scheme(), &none, None).unwrap_err();
    assert!(matches!(e, ApplyError::MissingNamespace { .. }));
}

#[test]
fn labels_and_job_pod_template() {
    let on = LabelPropagation {
        enabled: true,
        patterns: vec!["team-*".into()],
    };
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "j"},
        "spec": {"template": {"metadata": {"labels": {"own": "1"}}, "spec": {"containers": []}}}
    }))
    .unwrap();
    let desired = DesiredObject::from_typed(&job).unwrap();
    let (_, body) = prepare(&desired, true, &parent(Some("ns")), &scheme(), &on, None).unwrap();
    assert_eq!(body["metadata"]["labels"]["team-a"], "x");
    assert_eq!(body["metadata"]["labels"]["example.com/toy.name"], "p");
    assert_eq!(
        body["spec"]["template"]["metadata"]["labels"]["team-a"],
        "x"
    );
    assert_eq!(body["spec"]["template"]["metadata"]["labels"]["own"], "1");
    // An existing Job keeps its immutable template: new labels are not added there.
    let live: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {"template": {"metadata": {"labels": {"own": "1", "kinfer.dev/managed-by": "toy-controller"}}}}
    }))
    .unwrap();
    let (_, body) = prepare(
        &desired,
        true,
        &parent(Some("ns")),
        &scheme(),
        &on,
        Some(&live),
    )
    .unwrap();
    assert_eq!(body["metadata"]["labels"]["team-a"], "x");
    let tpl = &body["spec"]["template"]["metadata"]["labels"];
    assert!(tpl.get("team-a").is_none(), "{tpl}");
    assert_eq!(tpl["kinfer.dev/managed-by"], "toy-controller");
}

/// A 422 of the server as it refuses a write on `fields` (its causes name them).
fn invalid_on(fields: &[&str]) -> kube::Error {
    let status: kube::core::Status = serde_json::from_value(json!({
        "status": "Failure", "code": 422, "reason": "Invalid",
        "message": "ConfigMap \"c\" is invalid",
        "details": {"name": "c", "kind": "ConfigMap", "causes": fields.iter().map(|f| json!({
            "reason": "FieldValueInvalid", "message": "field is immutable", "field": f
        })).collect::<Vec<_>>()}
    }))
    .unwrap();
    kube::Error::Api(Box::new(status))
}

#[test]
fn a_pinned_apply_refused_on_the_uid_is_a_replaced_object_not_an_invalid_spec() {
    let child = ObjectKey {
        kind: "ConfigMap".into(),
        group: String::new(),
        namespace: Some("ns".into()),
        name: "c".into(),
    };
    let refused = ApplyError::ApplyChild {
        child: child.clone(),
        source: Box::new(invalid_on(&["metadata.uid"])),
    };
    assert_eq!(refused.category(), ErrorCategory::InvalidSpec, "unpinned");
    let replaced = refused.of_pinned_apply();
    assert!(matches!(replaced, ApplyError::ChildReplaced { .. }));
    assert_eq!(replaced.category(), ErrorCategory::Infrastructure);
    assert!(!replaced.category().is_user_fixable());

    // Any other refusal of a pinned apply is still the spec's.
    let other = ApplyError::ApplyChild {
        child,
        source: Box::new(invalid_on(&["data"])),
    }
    .of_pinned_apply();
    assert!(matches!(other, ApplyError::ApplyChild { .. }));
    assert_eq!(other.category(), ErrorCategory::InvalidSpec);
}
