//! Diff before write: does a desired object differ from the live one on the fields we manage?
//!
//! Contract:
//! - [`needs_apply`] is true when a field the desired object sets is missing from or different
//!   in the live object, or when the live object has a field our field manager owns (per
//!   `managedFields`) that the desired object no longer sets (an apply would remove it).
//! - Only fields we send are compared: defaults the server adds and fields other managers own
//!   are ignored. Maps compare as subsets; lists element by element with equal length (atomic
//!   lists, and keyed lists in the order the builder writes them). `null` in the desired object
//!   means "not set". In `metadata` only labels, annotations, owner references and finalizers
//!   count.
//! - Pure: no client.

use serde_json::{Map, Value};

/// Metadata fields an apply can set and that are compared.
const METADATA_FIELDS: [&str; 6] = [
    "name",
    "namespace",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
];

/// True when applying `desired` would change `live`; see the module contract.
pub fn needs_apply(desired: &Value, live: &Value, manager: &str) -> bool {
    let mut desired = desired.clone();
    if let Some(meta) = desired.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, _| METADATA_FIELDS.contains(&k.as_str()));
    }
    if let Some(obj) = desired.as_object_mut() {
        obj.remove("status");
    }
    if !subset(&desired, live) {
        return true;
    }
    owned_fields(live, manager)
        .iter()
        .any(|f| removed(f, &desired))
}

/// `desired` is contained in `live`.
pub fn subset(desired: &Value, live: &Value) -> bool {
    match (desired, live) {
        (Value::Null, _) => true,
        (Value::Object(d), Value::Object(l)) => d.iter().all(|(k, dv)| match l.get(k) {
            Some(lv) => subset(dv, lv),
            None => dv.is_null() || is_empty(dv),
        }),
        (Value::Array(d), Value::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(a, b)| subset(a, b))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (d, l) => d == l,
    }
}

/// An empty map or list the API server drops (`labels: {}`) counts as absent.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.values().all(|v| v.is_null() || is_empty(v)),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The `fieldsV1` trees of our manager's `Apply` entries in the live object.
fn owned_fields<'a>(live: &'a Value, manager: &str) -> Vec<&'a Map<String, Value>> {
    live.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| {
            e["manager"] == manager
                && e["operation"] == "Apply"
                && e.get("subresource")
                    .is_none_or(|s| s.as_str().is_none_or(str::is_empty))
        })
        .filter_map(|e| e["fieldsV1"].as_object())
        .collect()
}

/// True when a field in `owned` (a fieldsV1 tree) is absent from `desired`. Stops at list
/// elements (`k:`, `v:`, `i:`), which the subset check compares by length and content.
fn removed(owned: &Map<String, Value>, desired: &Value) -> bool {
    owned.iter().any(|(key, sub)| {
        let Some(field) = key.strip_prefix("f:") else {
            return false;
        };
        if desired.is_object() && field == "status" {
            return false;
        }
        match desired.get(field) {
            None | Some(Value::Null) => true,
            Some(d @ Value::Object(_)) => sub.as_object().is_some_and(|s| removed(s, d)),
            Some(_) => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn subset_and_server_defaults() {
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "uid": "u", "resourceVersion": "9", "labels": {"x": "1", "y": "2"}}, "data": {"k": "v"}});
        assert!(!needs_apply(&desired, &live, "m"));
        let changed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "w"}});
        assert!(needs_apply(&changed, &live, "m"));
        // Lists: same length, element subset (server defaults inside elements are fine).
        let d = json!({"spec": {"containers": [{"name": "c", "image": "i"}]}});
        let l = json!({"spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "IfNotPresent"}]}});
        assert!(subset(&d, &l));
        let l2 =
            json!({"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "sidecar"}]}});
        assert!(!subset(&d, &l2));
        assert!(subset(&json!({"n": 1}), &json!({"n": 1.0})));
        assert!(subset(
            &json!({"metadata": {"labels": {}}}),
            &json!({"metadata": {}})
        ));
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
        let without_old =
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
        let mut live_labelled = live.clone();
        live_labelled["metadata"]["labels"] = json!({"x": "1"});
        assert!(
            needs_apply(&without_old, &live_labelled, "m"),
            "old is ours and no longer desired"
        );
        let with_old = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v", "old": "o"}});
        assert!(
            !needs_apply(&with_old, &live_labelled, "m"),
            "theirs is not ours to remove"
        );
        assert!(
            !needs_apply(&without_old, &live_labelled, "other"),
            "another manager's view"
        );
    }
}
