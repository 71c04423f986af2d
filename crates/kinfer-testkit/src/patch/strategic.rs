//! Strategic merge patch for built-in kinds: like a merge patch, but lists with a merge key
//! (see [`super::shape`]) merge item by item, set lists (finalizers) take the union, and the
//! directives `$patch: replace|delete`, `$retainKeys`, `$deleteFromPrimitiveList/<f>` and
//! `$setElementOrder/<f>` (ignored) are understood. A merged list is ordered as the real
//! server orders it (apimachinery's `normalizeElementOrder`): the patch's items in patch order,
//! with the items only the live list has inserted where the live order places them relative
//! to the patch's items it also holds.

use serde_json::Value;

use super::fieldset::item_key;
use super::shape::{ListKind, Shape};

/// Apply a strategic merge patch in place.
pub fn strategic_merge(target: &mut Value, patch: &Value, shape: &Shape) {
    merge(target, patch, shape, &mut Vec::new());
}

fn merge(target: &mut Value, patch: &Value, shape: &Shape, trail: &mut Vec<String>) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut clean = patch.clone();
            if let Some(m) = clean.as_object_mut() {
                m.remove("$patch");
            }
            *target = clean;
            return;
        }
        Some("delete") => {
            *target = Value::Null;
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Value::Object(t) = target else { return };
    if let Some(keep) = p.get("$retainKeys").and_then(Value::as_array) {
        t.retain(|k, _| keep.iter().any(|x| x.as_str() == Some(k)));
    }
    for (k, v) in p {
        if k.starts_with("$setElementOrder/") || k == "$retainKeys" || k == "$patch" {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(a)), Some(del)) = (t.get_mut(field), v.as_array()) {
                a.retain(|x| !del.contains(x));
            }
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        trail.push(k.clone());
        let slot = t.entry(k.clone()).or_insert(Value::Null);
        match (v, shape.list_kind(trail)) {
            (Value::Array(items), ListKind::Map(keys)) => {
                merge_keyed(slot, items, &keys, shape, trail);
            }
            (Value::Array(items), ListKind::Set) => {
                let original = slot.as_array().cloned().unwrap_or_default();
                let mut cur = original.clone();
                for it in items {
                    if !cur.contains(it) {
                        cur.push(it.clone());
                    }
                }
                *slot = Value::Array(server_order(cur, items, &original, ToString::to_string));
            }
            _ => merge(slot, v, shape, trail),
        }
        if slot.is_null() {
            t.remove(k);
        }
        trail.pop();
    }
}

fn merge_keyed(
    slot: &mut Value,
    items: &[Value],
    keys: &[String],
    shape: &Shape,
    trail: &mut Vec<String>,
) {
    // Strategic merge keys on the first key only (containerPort, name, ...).
    let key = &keys[..1.min(keys.len())];
    if items
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *slot = Value::Array(
            items
                .iter()
                .filter(|i| i.get("$patch").is_none())
                .cloned()
                .collect(),
        );
        return;
    }
    let mut cur = slot.as_array().cloned().unwrap_or_default();
    let mut kept = Vec::new();
    for item in items {
        let k = item_key(item, key);
        let pos = cur.iter().position(|c| item_key(c, key) == k);
        if item.get("$patch").and_then(Value::as_str) == Some("delete") {
            if let Some(i) = pos {
                cur.remove(i);
            }
            continue;
        }
        kept.push(item.clone());
        if let Some(i) = pos {
            merge(&mut cur[i], item, shape, trail);
        } else {
            let mut fresh = Value::Null;
            merge(&mut fresh, item, shape, trail);
            cur.push(fresh);
        }
    }
    let original: Vec<Value> = slot
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| cur.iter().any(|c| item_key(c, key) == item_key(o, key)))
        .cloned()
        .collect();
    *slot = Value::Array(server_order(cur, &kept, &original, |v| item_key(v, key)));
}

/// The order the real server gives a merged list (apimachinery's `mergeSlice` then
/// `normalizeElementOrder`): the items the patch names, in patch order, merged with the items
/// only the live list has, in live order; a live-only item goes before a patch item only when
/// both are in the live list and it comes first there.
fn server_order(
    merged: Vec<Value>,
    patch: &[Value],
    live: &[Value],
    key: impl Fn(&Value) -> String,
) -> Vec<Value> {
    let patch_keys: Vec<String> = patch.iter().map(&key).collect();
    let live_keys: Vec<String> = live.iter().map(&key).collect();
    let (mut named, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| patch_keys.contains(&key(v)));
    named.sort_by_key(|v| patch_keys.iter().position(|k| *k == key(v)));
    let live_index = |v: &Value| live_keys.iter().position(|k| *k == key(v));
    let mut out = Vec::with_capacity(named.len() + server_only.len());
    let (mut left, mut right) = (
        server_only.into_iter().peekable(),
        named.into_iter().peekable(),
    );
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                matches!((live_index(l), live_index(r)), (Some(a), Some(b)) if a < b)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_merge_by_name() {
        let mut d = json!({"spec": {"containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]},
                                                   {"name": "b", "image": "1"}]}});
        let p = json!({"spec": {"containers": [{"name": "a", "image": "2", "env": [{"name": "Y", "value": "2"}]},
                                               {"name": "b", "$patch": "delete"}]}});
        strategic_merge(&mut d, &p, &Shape::Core);
        assert_eq!(
            d,
            json!({"spec": {"containers": [{"name": "a", "image": "2",
                "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}]}]}})
        );
    }
}
