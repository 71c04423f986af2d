//! Diff before write: does a desired object differ from the live one on the fields we manage?
//!
//! Contract:
//! - [`needs_apply`] is true when a field the desired object sets is missing from or different
//!   in the live object, or when the live object has a field our field manager owns (per
//!   `managedFields`, including keyed list entries `k:{...}` and set entries `v:...`) that the
//!   desired object no longer sets (an apply would remove it).
//! - Only fields we send are compared, and the server's normalisation and defaulting are not
//!   changes:
//!   - quantities compare by value under resource paths (`resources`, `limits`, `requests`,
//!     `capacity`, `hard`, `overhead`, `sizeLimit`): `1000m` equals `1`, `1Gi` equals
//!     `1073741824`;
//!   - a live field that is absent equals a desired zero value (`false`, `0`, `""`, empty list
//!     or map, recursively), the Go `omitempty` rule;
//!   - keyed lists (containers, env, volumes, ports, volume mounts, conditions, owner
//!     references, ...) match elements by merge key, in any order; live elements we do not send
//!     (a sidecar another manager added) are not ours and are ignored. Other lists are atomic:
//!     same length, element by element.
//!   - numbers compare by value (`1` equals `1.0`); `null` in the desired object means "not
//!     set". In `metadata` only labels, annotations, owner references and finalizers count.
//! - CRD pruning: a field the CRD prunes is never stored, so it would look missing forever.
//!   [`needs_apply_pruned`] (used when the desired body is the one the engine last applied
//!   successfully) treats a desired field as pruned when it is absent from the live object and
//!   absent from our `managedFields` entry: the server accepted the apply and dropped it. A
//!   changed body is always compared in full, so a new field is still sent.
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

/// Field names under which strings are Kubernetes quantities.
const QUANTITY_PARENTS: [&str; 7] = [
    "resources",
    "limits",
    "requests",
    "capacity",
    "hard",
    "overhead",
    "sizeLimit",
];

/// True when applying `desired` would change `live`; see the module contract.
pub fn needs_apply(desired: &Value, live: &Value, manager: &str) -> bool {
    compare(desired, live, manager, false)
}

/// [`needs_apply`] for a desired body identical to the one last applied successfully: desired
/// fields absent from the live object and from our `managedFields` entry were pruned by the
/// server and do not count. Without a `managedFields` entry of ours this is [`needs_apply`].
pub fn needs_apply_pruned(desired: &Value, live: &Value, manager: &str) -> bool {
    compare(desired, live, manager, true)
}

fn compare(desired: &Value, live: &Value, manager: &str, tolerate_pruned: bool) -> bool {
    let mut desired = desired.clone();
    if let Some(meta) = desired.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, _| METADATA_FIELDS.contains(&k.as_str()));
    }
    if let Some(obj) = desired.as_object_mut() {
        obj.remove("status");
    }
    let owned = owned_fields(live, manager);
    let merged = merge_trees(&owned);
    let ctx = Ctx {
        tolerate_pruned: tolerate_pruned && !owned.is_empty(),
    };
    if !same(&desired, live, None, Some(&merged), false, ctx) {
        return true;
    }
    owned.iter().any(|f| removed(f, &desired))
}

#[derive(Clone, Copy)]
struct Ctx {
    tolerate_pruned: bool,
}

/// `desired` is contained in `live` under the rules of the module contract (no pruning
/// tolerance, no `managedFields`).
pub fn subset(desired: &Value, live: &Value) -> bool {
    same(
        desired,
        live,
        None,
        None,
        false,
        Ctx {
            tolerate_pruned: false,
        },
    )
}

/// `desired` (the value of field `field`) is contained in `live`. `owned` is our managedFields
/// subtree at this position (`None`: we own nothing here).
fn same(
    desired: &Value,
    live: &Value,
    field: Option<&str>,
    owned: Option<&Map<String, Value>>,
    quantity: bool,
    ctx: Ctx,
) -> bool {
    let quantity = quantity || field.is_some_and(|f| QUANTITY_PARENTS.contains(&f));
    match (desired, live) {
        (Value::Null, _) => true,
        (Value::Object(d), Value::Object(l)) => d.iter().all(|(k, dv)| {
            let sub = owned
                .and_then(|o| o.get(&format!("f:{k}")))
                .and_then(Value::as_object);
            match l.get(k) {
                Some(lv) => same(dv, lv, Some(k), sub, quantity, ctx),
                None => is_zero(dv) || (ctx.tolerate_pruned && sub.is_none()),
            }
        }),
        (Value::Array(d), Value::Array(l)) => match merge_key(field, d) {
            Some(keys) => d.iter().all(|de| {
                let sub = owned.and_then(|o| keyed_entry(o, de, keys));
                l.iter()
                    .find(|le| key_matches(de, le, keys))
                    .is_some_and(|le| same(de, le, None, sub, quantity, ctx))
            }),
            None => {
                d.len() == l.len()
                    && d.iter()
                        .zip(l)
                        .all(|(a, b)| same(a, b, None, None, quantity, ctx))
            }
        },
        (Value::Array(d), Value::Null) => d.is_empty(),
        (Value::Object(d), Value::Null) => d.values().all(is_zero),
        (d, l) if quantity => match (as_quantity(d), as_quantity(l)) {
            (Some(a), Some(b)) => close(a, b),
            _ => scalar_eq(d, l),
        },
        (d, l) => scalar_eq(d, l),
    }
}

fn scalar_eq(d: &Value, l: &Value) -> bool {
    match (d, l) {
        (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(a), Some(b)) => close(a, b),
            _ => a == b,
        },
        _ => d == l,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

fn as_quantity(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => kinfer_api::quantity::parse(s),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// The Go zero value the API server omits (`omitempty`): null, `false`, `0`, `""`, an empty
/// list, a map of zero values.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.values().all(is_zero),
    }
}

/// The merge key of a list field, when every desired element carries it.
fn merge_key(field: Option<&str>, elements: &[Value]) -> Option<&'static [&'static str]> {
    let first = elements.first()?.as_object()?;
    let candidates: &[&[&str]] = match field? {
        "volumeMounts" => &[&["mountPath"]],
        "volumeDevices" => &[&["devicePath"]],
        "hostAliases" => &[&["ip"]],
        "ownerReferences" => &[&["uid"]],
        "conditions" => &[&["type"]],
        "ports" => &[&["containerPort", "protocol"], &["port", "protocol"]],
        "topologySpreadConstraints" => &[&["topologyKey", "whenUnsatisfiable"]],
        // containers, initContainers, env, volumes, imagePullSecrets, ... and any other list of
        // named elements.
        _ => &[&["name"]],
    };
    let keys = candidates
        .iter()
        .copied()
        .find(|keys| first.contains_key(keys[0]))?;
    elements
        .iter()
        .all(|e| e.as_object().is_some_and(|o| o.contains_key(keys[0])))
        .then_some(keys)
}

/// The live element has the desired element's key values (for the key fields the desired
/// element sets: a defaulted `protocol` does not break the match).
fn key_matches(desired: &Value, live: &Value, keys: &[&str]) -> bool {
    keys.iter().all(|k| match desired.get(*k) {
        None | Some(Value::Null) => true,
        Some(d) => live.get(*k).is_some_and(|l| scalar_eq(d, l)),
    })
}

/// Our managedFields entry (`k:{...}`) for the desired list element, if any.
fn keyed_entry<'a>(
    owned: &'a Map<String, Value>,
    element: &Value,
    keys: &[&str],
) -> Option<&'a Map<String, Value>> {
    owned.iter().find_map(|(k, v)| {
        let json = k.strip_prefix("k:")?;
        let entry: Map<String, Value> = serde_json::from_str(json).ok()?;
        let matches = keys
            .iter()
            .all(|key| match (entry.get(*key), element.get(*key)) {
                (Some(a), Some(b)) => scalar_eq(b, a),
                // An absent key field, or one the server defaulted (protocol).
                (None | Some(_), None) | (None, Some(Value::Null)) => true,
                (None, Some(_)) => false,
            });
        if matches { v.as_object() } else { None }
    })
}

/// The `fieldsV1` trees of our manager's `Apply` entries of the main resource in the live
/// object (also what [`crate::handover::owns`] reads).
pub(crate) fn owned_fields<'a>(live: &'a Value, manager: &str) -> Vec<&'a Map<String, Value>> {
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

/// The union of several fieldsV1 trees.
fn merge_trees(trees: &[&Map<String, Value>]) -> Map<String, Value> {
    let mut out = Map::new();
    for t in trees {
        merge_into(&mut out, t);
    }
    out
}

fn merge_into(out: &mut Map<String, Value>, tree: &Map<String, Value>) {
    for (k, v) in tree {
        let slot = out
            .entry(k.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if let (Some(o), Some(t)) = (slot.as_object_mut(), v.as_object()) {
            merge_into(o, t);
        }
    }
}

/// True when a field in `owned` (a fieldsV1 tree) is absent from `desired`: `f:` fields, keyed
/// list entries `k:{...}` and set entries `v:...`. Index entries (`i:`) are compared by the
/// atomic list check.
fn removed(owned: &Map<String, Value>, desired: &Value) -> bool {
    owned.iter().any(|(key, sub)| {
        if let Some(field) = key.strip_prefix("f:") {
            if desired.is_object() && field == "status" {
                return false;
            }
            return match desired.get(field) {
                None | Some(Value::Null) => true,
                Some(d @ (Value::Object(_) | Value::Array(_))) => {
                    sub.as_object().is_some_and(|s| removed(s, d))
                }
                Some(_) => false,
            };
        }
        if let Some(json) = key.strip_prefix("k:") {
            let Ok(entry) = serde_json::from_str::<Map<String, Value>>(json) else {
                return false;
            };
            let found = desired.as_array().and_then(|items| {
                items.iter().find(|item| {
                    entry.iter().all(|(k, v)| match item.get(k) {
                        Some(d) => scalar_eq(d, v),
                        // A key field the server defaulted (`protocol: TCP`).
                        None => k == "protocol",
                    })
                })
            });
            return match found {
                None => true,
                Some(item) => sub.as_object().is_some_and(|s| removed(s, item)),
            };
        }
        if let Some(json) = key.strip_prefix("v:") {
            let Ok(value) = serde_json::from_str::<Value>(json) else {
                return false;
            };
            return !desired
                .as_array()
                .is_some_and(|items| items.iter().any(|i| scalar_eq(i, &value)));
        }
        false
    })
}

#[cfg(test)]
#[path = "unit_tests/diff.rs"]
mod tests;
