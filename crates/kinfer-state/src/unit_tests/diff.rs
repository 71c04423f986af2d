use serde_json::{Value, json};

use super::*;

#[test]
fn subset_and_server_defaults() {
    let desired = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
    let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "uid": "u", "resourceVersion": "9", "labels": {"x": "1", "y": "2"}}, "data": {"k": "v"}});
    assert!(!needs_apply(&desired, &live, "m"));
    let changed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "w"}});
    assert!(needs_apply(&changed, &live, "m"));
    // Keyed lists: element by merge key; server defaults inside elements are fine.
    let d = json!({"spec": {"containers": [{"name": "c", "image": "i"}]}});
    let l = json!({"spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "IfNotPresent"}]}});
    assert!(subset(&d, &l));
    // Atomic lists: same length.
    assert!(!subset(
        &json!({"spec": {"args": ["a"]}}),
        &json!({"spec": {"args": ["a", "b"]}})
    ));
    assert!(subset(&json!({"n": 1}), &json!({"n": 1.0})));
    assert!(subset(
        &json!({"metadata": {"labels": {}}}),
        &json!({"metadata": {}})
    ));
}

/// A Deployment as the builder writes it.
fn desired_deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns", "labels": {"app": "x"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "containers": [{
                        "name": "main", "image": "img:1",
                        "ports": [{"containerPort": 8000, "name": "http"}],
                        "resources": {"limits": {"cpu": "1000m", "memory": "1Gi"}, "requests": {"cpu": "0.5"}},
                        "volumeMounts": [{"name": "cache", "mountPath": "/cache", "readOnly": false}]
                    }],
                    "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}],
                    "hostNetwork": false
                }
            }
        }
    })
}

/// The same Deployment as a real API server returns it: quantities normalised, zero values
/// omitted, defaults added, a sidecar injected by another manager, managedFields.
fn server_deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {
            "name": "d", "namespace": "ns", "uid": "u1", "resourceVersion": "42", "generation": 1,
            "labels": {"app": "x"},
            "managedFields": [{
                "manager": "m", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {
                        "f:replicas": {},
                        "f:selector": {},
                        "f:template": {
                            "f:metadata": {"f:labels": {"f:app": {}}},
                            "f:spec": {
                                "f:containers": {"k:{\"name\":\"main\"}": {
                                    ".": {}, "f:image": {}, "f:name": {},
                                    "f:ports": {"k:{\"containerPort\":8000,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}}},
                                    "f:resources": {"f:limits": {"f:cpu": {}, "f:memory": {}}, "f:requests": {"f:cpu": {}}},
                                    "f:volumeMounts": {"k:{\"mountPath\":\"/cache\"}": {".": {}, "f:mountPath": {}, "f:name": {}}}
                                }},
                                "f:volumes": {"k:{\"name\":\"cache\"}": {".": {}, "f:emptyDir": {"f:sizeLimit": {}}, "f:name": {}}}
                            }
                        }
                    }
                }
            }, {
                "manager": "istio-injector", "operation": "Update", "apiVersion": "apps/v1",
                "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"istio-proxy\"}": {}}}}}}
            }]
        },
        "spec": {
            "replicas": 1,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "x"}},
            "strategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "containers": [
                        {"name": "istio-proxy", "image": "proxy"},
                        {
                            "name": "main", "image": "img:1", "imagePullPolicy": "IfNotPresent",
                            "ports": [{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
                            "resources": {"limits": {"cpu": "1", "memory": "1073741824"}, "requests": {"cpu": "500m"}},
                            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                            "terminationMessagePath": "/dev/termination-log"
                        }
                    ],
                    "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1073741824"}}],
                    "restartPolicy": "Always",
                    "dnsPolicy": "ClusterFirst"
                }
            }
        },
        "status": {"replicas": 1}
    })
}

#[test]
fn server_normalisation_is_not_a_change() {
    let desired = desired_deployment();
    let live = server_deployment();
    assert!(
        !needs_apply(&desired, &live, "m"),
        "quantities by value, omitempty zero values, a sidecar we do not own"
    );

    // A real change in each of those places is still seen.
    let mut more_cpu = desired.clone();
    more_cpu["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] =
        json!("1500m");
    assert!(needs_apply(&more_cpu, &live, "m"));
    let mut read_only = desired.clone();
    read_only["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["readOnly"] =
        json!(true);
    assert!(needs_apply(&read_only, &live, "m"));
    let mut image = desired.clone();
    image["spec"]["template"]["spec"]["containers"][0]["image"] = json!("img:2");
    assert!(needs_apply(&image, &live, "m"));
}

#[test]
fn removed_keyed_elements_we_own_need_an_apply() {
    let live = server_deployment();
    let mut no_port = desired_deployment();
    no_port["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([]);
    assert!(
        needs_apply(&no_port, &live, "m"),
        "k:{{containerPort,protocol}} is ours and no longer desired"
    );
    let mut no_volume = desired_deployment();
    no_volume["spec"]["template"]["spec"]["volumes"] = Value::Null;
    assert!(needs_apply(&no_volume, &live, "m"));
}

#[test]
fn pruned_fields_do_not_cause_perpetual_writes() {
    // A typed subset sends `spec.extra`, which the CRD prunes: the live object never has it,
    // and our managedFields entry does not list it.
    let desired = json!({
        "apiVersion": "example.com/v1", "kind": "Thing",
        "metadata": {"name": "t"},
        "spec": {"size": 2, "extra": {"x": 1}}
    });
    let live = json!({
        "apiVersion": "example.com/v1", "kind": "Thing",
        "metadata": {"name": "t", "managedFields": [{
            "manager": "m", "operation": "Apply",
            "fieldsV1": {"f:spec": {"f:size": {}}}
        }]},
        "spec": {"size": 2}
    });
    assert!(
        needs_apply(&desired, &live, "m"),
        "full compare: the field looks missing"
    );
    assert!(
        !needs_apply_pruned(&desired, &live, "m"),
        "the body we last applied: pruned by the server"
    );
    let mut bigger = desired.clone();
    bigger["spec"]["size"] = json!(3);
    assert!(
        needs_apply_pruned(&bigger, &live, "m"),
        "a value the server keeps still counts"
    );
    let no_entry = json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"size": 2}});
    assert!(
        needs_apply_pruned(&desired, &no_entry, "m"),
        "without our managedFields entry nothing is known to be pruned"
    );
}

#[test]
fn removed_fields_we_own_need_an_apply() {
    let live = json!({
        "metadata": {"name": "a", "managedFields": [
            {"manager": "m", "operation": "Apply", "fieldsV1": {"f:data": {"f:k": {}, "f:old": {}}, "f:metadata": {"f:labels": {"f:x": {}}}}},
            {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:data": {"f:theirs": {}}}}
        ]},
        "data": {"k": "v", "old": "o", "theirs": "t"}
    });
    let without_old = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
    let mut live_labelled = live.clone();
    live_labelled["metadata"]["labels"] = json!({"x": "1"});
    assert!(
        needs_apply(&without_old, &live_labelled, "m"),
        "old is ours and no longer desired"
    );
    let with_old =
        json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v", "old": "o"}});
    assert!(
        !needs_apply(&with_old, &live_labelled, "m"),
        "theirs is not ours to remove"
    );
    assert!(
        !needs_apply(&without_old, &live_labelled, "other"),
        "another manager's view"
    );
}
