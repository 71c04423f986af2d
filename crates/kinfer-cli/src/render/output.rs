//! What `kinfer render` prints, and how.
//!
//! Contract:
//! - [`collect`] lists every object in the render cluster and keeps each input and every
//!   object an operator wrote: an object is kept when a field manager other than render's own
//!   (`kinfer-render`), the simulator's (`kinfer-simulator`) and the test cluster's
//!   (`kinfer-testkit`) owns fields of it. Events, Leases and CRDs are left out (they are
//!   bookkeeping, not the plan), and so are the Nodes and Namespaces render adds itself.
//! - [`clean`] removes what differs run to run or is the server's: `metadata.managedFields`,
//!   `resourceVersion`, `uid`, `creationTimestamp`, `deletionTimestamp`, `selfLink`, the `uid`
//!   of each owner reference, and every status field named `uid` (references to other
//!   objects). Every status field holding an RFC 3339 timestamp (`lastTransitionTime`,
//!   `startTime`, ...) is set to [`EPOCH`], so schemas requiring it still hold.
//!   `metadata.generation` and every `observedGeneration` are removed too: how many
//!   intermediate specs an operator applied before settling depends on reconcile order, not
//!   on the plan; so is every status field named `attempts` (how many tries a step took, e.g.
//!   AIM discovery, depends on timing on a loaded machine). Map keys are sorted, so the text is
//!   byte-stable run to run.
//! - Objects are sorted by apiVersion, kind, namespace (cluster-scoped first), name.
//! - [`to_yaml`]: one `---`-separated YAML document per object; [`to_json`]: one `v1` `List`.

use std::collections::BTreeSet;

use anyhow::{Context, Result};
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use serde_json::{Map, Value, json};

use super::apply::{Input, MANAGER};
use super::env::Env;
use super::validate::group_of;

/// Field managers that are not operators.
const NOT_OPERATORS: &[&str] = &[MANAGER, "kinfer-simulator", "kinfer-testkit"];

/// Kinds never printed.
const SKIPPED_KINDS: &[&str] = &["Event", "Lease", "CustomResourceDefinition"];

/// `(apiVersion group, kind, namespace, name)` of an object.
type Key = (String, String, String, String);

fn key_of(value: &Value) -> Key {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        group_of(value["apiVersion"].as_str().unwrap_or_default()).to_owned(),
        s(&value["kind"]),
        s(&value["metadata"]["namespace"]),
        s(&value["metadata"]["name"]),
    )
}

fn written_by_operator(value: &Value) -> bool {
    value["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["manager"].as_str())
        .any(|m| !NOT_OPERATORS.contains(&m))
}

/// Every object of `resource` in all namespaces, as JSON with its `apiVersion` and `kind`
/// (list items carry neither).
pub async fn list_all(client: &kube::Client, resource: &ApiResource) -> Result<Vec<Value>> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let listed = api
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing {}", resource.plural))?;
    listed
        .items
        .into_iter()
        .map(|object| {
            let mut value = serde_json::to_value(&object)?;
            value["apiVersion"] = json!(resource.api_version);
            value["kind"] = json!(resource.kind);
            Ok(value)
        })
        .collect()
}

/// Every input and every object an operator wrote, cleaned and sorted; see the contract.
pub async fn collect(env: &Env, inputs: &[Input]) -> Result<Vec<Value>> {
    let input_keys: BTreeSet<Key> = inputs.iter().map(|i| key_of(&i.doc.value)).collect();
    let mut out = Vec::new();
    for (resource, _) in env.listable() {
        if SKIPPED_KINDS.contains(&resource.kind.as_str()) {
            continue;
        }
        for value in list_all(&env.client, &resource).await? {
            if input_keys.contains(&key_of(&value)) || written_by_operator(&value) {
                out.push(clean(value));
            }
        }
    }
    sort(&mut out);
    Ok(out)
}

/// Whether the printed `object` is `input`'s (same group, kind, namespace and name).
pub fn is_object_of(object: &Value, input: &Input) -> bool {
    key_of(object) == key_of(&input.doc.value)
}

/// Sorts by apiVersion, kind, namespace, name.
pub fn sort(objects: &mut [Value]) {
    objects.sort_by_cached_key(|v| {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        (
            s(&v["apiVersion"]),
            s(&v["kind"]),
            s(&v["metadata"]["namespace"]),
            s(&v["metadata"]["name"]),
        )
    });
}

/// What every status timestamp becomes: fixed, and still a valid `date-time` for the schemas
/// that require one (Gateway API conditions).
pub const EPOCH: &str = "1970-01-01T00:00:00Z";

/// `2024-01-02T03:04:05Z`-shaped.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
}

fn drop_volatile(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("uid");
            map.remove("observedGeneration");
            map.remove("attempts");
            for v in map.values_mut() {
                if v.as_str().is_some_and(is_timestamp) {
                    *v = json!(EPOCH);
                } else {
                    drop_volatile(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_volatile),
        _ => {}
    }
}

fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<String, Value>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Removes server-set and time-dependent fields; see the module contract.
pub fn clean(mut value: Value) -> Value {
    if let Some(meta) = value["metadata"].as_object_mut() {
        for field in [
            "managedFields",
            "resourceVersion",
            "generation",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "selfLink",
        ] {
            meta.remove(field);
        }
        if let Some(owners) = meta
            .get_mut("ownerReferences")
            .and_then(Value::as_array_mut)
        {
            for owner in owners {
                if let Some(o) = owner.as_object_mut() {
                    o.remove("uid");
                }
            }
        }
        if meta
            .get("annotations")
            .is_some_and(|a| a.as_object().is_some_and(Map::is_empty))
        {
            meta.remove("annotations");
        }
    }
    if let Some(status) = value.get_mut("status") {
        drop_volatile(status);
    }
    sorted(value)
}

/// Multi-document YAML.
pub fn to_yaml(objects: &[Value]) -> Result<String> {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(object).context("rendering YAML")?);
    }
    Ok(out)
}

/// One `v1` `List`, pretty-printed, with a final newline.
pub fn to_json(objects: &[Value]) -> Result<String> {
    let list = json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": {},
        "items": objects,
    });
    let mut text = serde_json::to_string_pretty(&list).context("rendering JSON")?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_removes_volatile_fields_and_sorts_keys() {
        let raw = json!({
            "kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": { "name": "a", "uid": "u", "resourceVersion": "7", "generation": 2,
                          "creationTimestamp": "2024-01-02T03:04:05Z", "managedFields": [],
                          "ownerReferences": [{ "kind": "X", "name": "x", "uid": "u2" }] },
            "status": { "conditions": [{ "type": "Ready", "lastTransitionTime": "2024-01-02T03:04:05Z",
                                         "observedGeneration": 2 }],
                        "discovery": { "attempts": 2, "specHash": "h" },
                        "observedGeneration": 2, "phase": "Running" }
        });
        let cleaned = clean(raw);
        assert_eq!(
            cleaned,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": { "name": "a",
                              "ownerReferences": [{ "kind": "X", "name": "x" }] },
                "status": { "conditions": [{ "type": "Ready", "lastTransitionTime": EPOCH }],
                            "discovery": { "specHash": "h" },
                            "phase": "Running" }
            })
        );
        assert!(is_timestamp("2024-01-02T03:04:05.123456Z"));
        assert!(!is_timestamp("v2024-01-02"));
    }
}
