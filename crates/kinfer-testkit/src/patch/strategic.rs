//! Strategic merge patch for built-in kinds: like a merge patch, but lists with a merge key
//! (see [`super::shape`]) merge item by item, set lists (finalizers) take the union, and the
//! directives `$patch: replace|delete`, `$retainKeys`, `$deleteFromPrimitiveList/<f>` and
//! `$setElementOrder/<f>` (ignored: order is kept) are understood.

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
                let mut cur = slot.as_array().cloned().unwrap_or_default();
                for it in items {
                    if !cur.contains(it) {
                        cur.push(it.clone());
                    }
                }
                *slot = Value::Array(cur);
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
    for item in items {
        let k = item_key(item, key);
        let pos = cur.iter().position(|c| item_key(c, key) == k);
        if item.get("$patch").and_then(Value::as_str) == Some("delete") {
            if let Some(i) = pos {
                cur.remove(i);
            }
            continue;
        }
        if let Some(i) = pos {
            merge(&mut cur[i], item, shape, trail);
        } else {
            let mut fresh = Value::Null;
            merge(&mut fresh, item, shape, trail);
            cur.push(fresh);
        }
    }
    *slot = Value::Array(cur);
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
                "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]}})
        );
    }
}
