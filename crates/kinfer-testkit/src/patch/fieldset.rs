//! Field sets as used by server-side apply: the set of paths a manager owns, converted to and
//! from the `fieldsV1` wire format (`{"f:spec":{"f:replicas":{}}}`, `k:{"name":"c"}` for keyed
//! list items with a `.` marker, `v:"x"` for set items).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::shape::{ListKind, Shape};

/// One path element.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pe {
    /// An object field.
    F(String),
    /// A keyed list item; the canonical JSON of its key fields.
    K(String),
    /// A set item; its canonical JSON.
    V(String),
}

/// A path from the object root.
pub type Path = Vec<Pe>;
/// A set of owned paths.
pub type FieldSet = BTreeSet<Path>;

fn field_names(path: &[Pe]) -> Vec<String> {
    path.iter()
        .filter_map(|p| {
            if let Pe::F(f) = p {
                Some(f.clone())
            } else {
                None
            }
        })
        .collect()
}

/// The key of an item of a keyed list, as canonical JSON (`{"name":"c"}`).
pub fn item_key(item: &Value, keys: &[String]) -> String {
    let mut m = Map::new();
    for k in keys {
        if let Some(v) = item.get(k) {
            m.insert(k.clone(), v.clone());
        }
    }
    Value::Object(m).to_string()
}

/// All paths set in `v` (leaves, atomic lists, keyed items and their fields).
pub fn collect(v: &Value, shape: &Shape) -> FieldSet {
    let mut out = FieldSet::new();
    walk(v, &mut Vec::new(), shape, &mut out);
    out
}

fn walk(v: &Value, path: &mut Path, shape: &Shape, out: &mut FieldSet) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                path.push(Pe::F(k.clone()));
                walk(c, path, shape, out);
                path.pop();
            }
        }
        Value::Array(items) => match shape.list_kind(&field_names(path)) {
            ListKind::Map(keys) => {
                for item in items {
                    path.push(Pe::K(item_key(item, &keys)));
                    out.insert(path.clone());
                    if let Some(m) = item.as_object() {
                        for (k, c) in m {
                            path.push(Pe::F(k.clone()));
                            if keys.contains(k) {
                                out.insert(path.clone());
                            } else {
                                walk(c, path, shape, out);
                            }
                            path.pop();
                        }
                    }
                    path.pop();
                }
            }
            ListKind::Set => {
                for item in items {
                    path.push(Pe::V(item.to_string()));
                    out.insert(path.clone());
                    path.pop();
                }
            }
            ListKind::Atomic => {
                out.insert(path.clone());
            }
        },
        _ => {
            if !path.is_empty() {
                out.insert(path.clone());
            }
        }
    }
}

/// Whether a path is a keyed item marker (`k:{...}`) or a set value (`v:...`): owned by
/// presence, never compared by value.
pub fn is_marker(path: &[Pe]) -> bool {
    matches!(path.last(), Some(Pe::K(_) | Pe::V(_)))
}

/// The value at a path.
pub fn get<'a>(v: &'a Value, path: &[Pe], shape: &Shape) -> Option<&'a Value> {
    let mut cur = v;
    for (i, pe) in path.iter().enumerate() {
        cur = match pe {
            Pe::F(f) => cur.get(f)?,
            Pe::K(k) => {
                let ListKind::Map(keys) = shape.list_kind(&field_names(&path[..i])) else {
                    return None;
                };
                cur.as_array()?
                    .iter()
                    .find(|it| item_key(it, &keys) == *k)?
            }
            Pe::V(s) => cur.as_array()?.iter().find(|it| it.to_string() == *s)?,
        };
    }
    Some(cur)
}

/// Remove the value at a path; returns whether something was removed.
pub fn remove(v: &mut Value, path: &[Pe], shape: &Shape) -> bool {
    let Some((last, parent_path)) = path.split_last() else {
        return false;
    };
    let mut cur = v;
    for (i, pe) in parent_path.iter().enumerate() {
        let next = match pe {
            Pe::F(f) => cur.get_mut(f),
            Pe::K(k) => {
                let ListKind::Map(keys) = shape.list_kind(&field_names(&path[..i])) else {
                    return false;
                };
                cur.as_array_mut()
                    .and_then(|a| a.iter_mut().find(|it| item_key(it, &keys) == *k))
            }
            Pe::V(s) => cur
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|it| it.to_string() == *s)),
        };
        match next {
            Some(n) => cur = n,
            None => return false,
        }
    }
    match last {
        Pe::F(f) => cur.as_object_mut().and_then(|m| m.remove(f)).is_some(),
        Pe::K(k) => {
            let ListKind::Map(keys) = shape.list_kind(&field_names(parent_path)) else {
                return false;
            };
            let Some(a) = cur.as_array_mut() else {
                return false;
            };
            let before = a.len();
            a.retain(|it| item_key(it, &keys) != *k);
            a.len() != before
        }
        Pe::V(s) => {
            let Some(a) = cur.as_array_mut() else {
                return false;
            };
            let Ok(target) = serde_json::from_str::<Value>(s) else {
                return false;
            };
            let before = a.len();
            a.retain(|it| *it != target);
            a.len() != before
        }
    }
}

fn pe_key(pe: &Pe) -> String {
    match pe {
        Pe::F(f) => format!("f:{f}"),
        Pe::K(k) => format!("k:{k}"),
        Pe::V(v) => format!("v:{v}"),
    }
}

/// The `fieldsV1` tree of a field set.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        insert(&mut root, path);
    }
    Value::Object(root)
}

fn insert(node: &mut Map<String, Value>, path: &[Pe]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let entry = node
        .entry(pe_key(first))
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(child) = entry else { return };
    if rest.is_empty() {
        if matches!(first, Pe::K(_)) {
            child.insert(".".to_owned(), Value::Object(Map::new()));
        }
    } else {
        insert(child, rest);
    }
}

/// The field set of a `fieldsV1` tree.
pub fn from_fields_v1(v: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    parse_node(v, &mut Vec::new(), &mut out);
    out
}

fn parse_node(v: &Value, path: &mut Path, out: &mut FieldSet) {
    let Some(m) = v.as_object() else { return };
    if m.is_empty() && !path.is_empty() {
        out.insert(path.clone());
        return;
    }
    for (k, child) in m {
        if k == "." {
            out.insert(path.clone());
            continue;
        }
        let pe = if let Some(f) = k.strip_prefix("f:") {
            Pe::F(f.to_owned())
        } else if let Some(key) = k.strip_prefix("k:") {
            // Canonicalise the key JSON.
            Pe::K(
                serde_json::from_str::<Value>(key)
                    .map_or_else(|_| key.to_owned(), |j| j.to_string()),
            )
        } else if let Some(val) = k.strip_prefix("v:") {
            Pe::V(
                serde_json::from_str::<Value>(val)
                    .map_or_else(|_| val.to_owned(), |j| j.to_string()),
            )
        } else {
            continue;
        };
        path.push(pe);
        parse_node(child, path, out);
        path.pop();
    }
}

/// Render a path the way conflict messages do: `.spec.containers[name="c"].image`.
pub fn display(path: &[Pe]) -> String {
    let mut s = String::new();
    for pe in path {
        match pe {
            Pe::F(f) => {
                s.push('.');
                s.push_str(f);
            }
            Pe::K(k) => {
                let inner: Vec<String> = serde_json::from_str::<Map<String, Value>>(k)
                    .map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect())
                    .unwrap_or_default();
                let _ = write!(s, "[{}]", inner.join(","));
            }
            Pe::V(v) => {
                let _ = write!(s, "[={v}]");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip() {
        let obj = json!({"spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
                         "metadata": {"labels": {"a": "b"}, "finalizers": ["x"]}});
        let set = collect(&obj, &Shape::Core);
        let wire = to_fields_v1(&set);
        assert_eq!(from_fields_v1(&wire), set);
        assert!(
            wire["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["."]
                .is_object()
        );
    }
}
