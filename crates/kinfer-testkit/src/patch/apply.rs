//! Server-side apply and managed-fields bookkeeping.
//!
//! Contract:
//! - Every write records which manager set which fields in `metadata.managedFields`, one entry
//!   per (manager, operation, subresource). Updates (`PUT`, non-apply patches, creates) give
//!   the writer the fields it changed and take them from every other manager.
//! - An apply (`application/apply-patch+yaml`) declares the full intent of one manager:
//!   fields another manager owns with a different value are conflicts (409) unless `force`;
//!   fields the manager applied before but no longer does are removed unless another manager
//!   still owns them, and so are the objects and items around them that nothing kept (a
//!   dropped object goes whole, never leaf by leaf); keyed lists merge per item, atomic lists
//!   are replaced.
//! - The main endpoint tracks everything but `status`, the `/status` endpoint only `status`,
//!   `/scale` only `spec.replicas` (its entries conflict with the main endpoint's appliers).

use serde_json::{Map, Value, json};

use super::fieldset::{self, FieldSet, Path, Pe};
use super::shape::{ListKind, Shape};

/// Which part of an object a request writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Everything but status (for resources with a status subresource).
    Main,
    /// Only status.
    Status,
    /// Everything (resources without a status subresource).
    Whole,
    /// Only `spec.replicas`, through the `/scale` subresource ([`crate::scale`]).
    Scale,
}

impl Part {
    fn subresource(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Scale => "scale",
            Self::Main | Self::Whole => "",
        }
    }
}

/// Whether entries of subresources `a` and `b` own fields of the same part of an object:
/// `status` entries own status; the main endpoint's and `/scale`'s own the rest (a `/scale`
/// write owns the parent's `spec.replicas`, and conflicts with appliers of that field).
fn same_fields(a: &str, b: &str) -> bool {
    (a == "status") == (b == "status")
}

/// Who writes which part of an object, and how its lists merge.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    /// Manager name.
    pub manager: &'a str,
    /// The part written.
    pub part: Part,
    /// The apiVersion written with.
    pub api_version: &'a str,
    /// The time of the write.
    pub now: &'a str,
    /// The list-merge shape of the resource.
    pub shape: &'a Shape,
}

/// One managedFields entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Manager name.
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    /// Empty or `status`.
    pub subresource: String,
    /// apiVersion the fields were written with.
    pub api_version: String,
    /// Time of the last change of this entry.
    pub time: String,
    /// Owned fields.
    pub set: FieldSet,
}

/// All managedFields entries of an object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Managers(pub Vec<Entry>);

const UNTRACKED_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "generateName",
];

/// The part of an object whose fields are tracked for `part`.
pub fn tracked(obj: &Value, part: Part) -> Value {
    let mut out = Map::new();
    let Some(m) = obj.as_object() else {
        return Value::Object(out);
    };
    if part == Part::Scale {
        if let Some(r) = obj.pointer("/spec/replicas") {
            out.insert("spec".to_owned(), json!({ "replicas": r }));
        }
        return Value::Object(out);
    }
    for (k, v) in m {
        match (k.as_str(), part) {
            ("apiVersion" | "kind", _) | ("status", Part::Main) => {}
            ("status", _) => {
                out.insert(k.clone(), v.clone());
            }
            (_, Part::Status) => {}
            ("metadata", _) => {
                let mut meta = v.as_object().cloned().unwrap_or_default();
                meta.retain(|k, _| !UNTRACKED_META.contains(&k.as_str()));
                if !meta.is_empty() {
                    out.insert(k.clone(), Value::Object(meta));
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

impl Managers {
    /// Parse `metadata.managedFields`.
    pub fn from_object(obj: &Value) -> Self {
        let entries = obj["metadata"]["managedFields"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| Entry {
                        manager: e["manager"].as_str().unwrap_or_default().to_owned(),
                        operation: e["operation"].as_str().unwrap_or("Update").to_owned(),
                        subresource: e["subresource"].as_str().unwrap_or_default().to_owned(),
                        api_version: e["apiVersion"].as_str().unwrap_or_default().to_owned(),
                        time: e["time"].as_str().unwrap_or_default().to_owned(),
                        set: fieldset::from_fields_v1(&e["fieldsV1"]),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self(entries)
    }

    /// Write `metadata.managedFields` (entries with empty sets are dropped).
    pub fn write(&self, obj: &mut Value) {
        let list: Vec<Value> = self
            .0
            .iter()
            .filter(|e| !e.set.is_empty())
            .map(|e| {
                let mut v = json!({
                    "manager": e.manager,
                    "operation": e.operation,
                    "apiVersion": e.api_version,
                    "time": e.time,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": fieldset::to_fields_v1(&e.set),
                });
                if !e.subresource.is_empty() {
                    v["subresource"] = json!(e.subresource);
                }
                v
            })
            .collect();
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            if list.is_empty() {
                meta.remove("managedFields");
            } else {
                meta.insert("managedFields".to_owned(), Value::Array(list));
            }
        }
    }

    /// Whether the owned sets (ignoring times) are equal.
    pub fn same_sets(&self, other: &Self) -> bool {
        let key = |m: &Self| {
            let mut v: Vec<_> =
                m.0.iter()
                    .filter(|e| !e.set.is_empty())
                    .map(|e| {
                        (
                            e.manager.clone(),
                            e.operation.clone(),
                            e.subresource.clone(),
                            e.set.clone(),
                        )
                    })
                    .collect();
            v.sort();
            v
        };
        key(self) == key(other)
    }

    fn entry(
        &mut self,
        manager: &str,
        operation: &str,
        part: Part,
        api_version: &str,
        now: &str,
    ) -> &mut Entry {
        let sub = part.subresource();
        let pos = self
            .0
            .iter()
            .position(|e| e.manager == manager && e.operation == operation && e.subresource == sub);
        let i = pos.unwrap_or_else(|| {
            self.0.push(Entry {
                manager: manager.to_owned(),
                operation: operation.to_owned(),
                subresource: sub.to_owned(),
                api_version: api_version.to_owned(),
                time: now.to_owned(),
                set: FieldSet::new(),
            });
            self.0.len() - 1
        });
        &mut self.0[i]
    }

    /// Record a non-apply write of `new` over `old` by `w.manager`.
    pub fn record_update(&mut self, old: Option<&Value>, new: &Value, w: &Writer<'_>) {
        let Writer {
            manager,
            part,
            api_version,
            now,
            shape,
        } = *w;
        let empty = json!({});
        let old_t = old.map_or_else(|| empty.clone(), |o| tracked(o, part));
        let new_t = tracked(new, part);
        let old_set = fieldset::collect(&old_t, shape);
        let new_set = fieldset::collect(&new_t, shape);
        // An item marker or set value changes hands only when the item is new: a change of a
        // field inside an item is a change of that field alone.
        let changed: FieldSet = new_set
            .iter()
            .filter(|p| {
                if fieldset::is_marker(p) {
                    !old_set.contains(*p)
                } else {
                    fieldset::get(&old_t, p, shape) != fieldset::get(&new_t, p, shape)
                }
            })
            .cloned()
            .collect();
        let removed: FieldSet = old_set.difference(&new_set).cloned().collect();
        if changed.is_empty() && removed.is_empty() {
            return;
        }
        for e in &mut self.0 {
            e.set
                .retain(|p| !changed.contains(p) && !removed.contains(p));
        }
        let e = self.entry(manager, "Update", part, api_version, now);
        e.set.extend(changed);
        now.clone_into(&mut e.time);
        api_version.clone_into(&mut e.api_version);
        self.0.retain(|e| !e.set.is_empty());
    }

    /// Server-side apply of `applied` by `w.manager` over `current`; returns the new object or
    /// the conflicts as (path, other manager).
    pub fn apply(
        &mut self,
        current: &Value,
        applied: &Value,
        force: bool,
        w: &Writer<'_>,
    ) -> Result<Value, Vec<(String, String)>> {
        let Writer {
            manager,
            part,
            api_version,
            now,
            shape,
        } = *w;
        let cur_t = tracked(current, part);
        let app_t = tracked(applied, part);
        let app_set = fieldset::collect(&app_t, shape);
        let sub = part.subresource();
        let mut conflicts = Vec::new();
        for e in self
            .0
            .iter()
            .filter(|e| e.manager != manager && same_fields(&e.subresource, sub))
        {
            for p in app_set.intersection(&e.set) {
                // Item markers and set values are shared by every manager that applies them;
                // only the fields inside an item can conflict.
                if !fieldset::is_marker(p)
                    && fieldset::get(&cur_t, p, shape) != fieldset::get(&app_t, p, shape)
                {
                    conflicts.push((fieldset::display(p), e.manager.clone()));
                }
            }
        }
        if !conflicts.is_empty() && !force {
            return Err(conflicts);
        }
        let mut new = current.clone();
        let prev: FieldSet = self
            .0
            .iter()
            .find(|e| e.manager == manager && e.operation == "Apply" && e.subresource == sub)
            .map(|e| e.set.clone())
            .unwrap_or_default();
        // What stays: everything the new intent or any other entry (another manager, or this
        // manager's updates) owns, and every object or item around it.
        let others = self
            .0
            .iter()
            .filter(|e| !(e.manager == manager && e.operation == "Apply"))
            .flat_map(|e| e.set.iter());
        let members: FieldSet = app_set.iter().chain(others).cloned().collect();
        let kept = with_ancestors(&members);
        // What goes (structured-merge-diff's prune): every field this manager applied last
        // time, and every object or item around one, that nothing kept. A dropped object goes
        // as a whole, whatever (unowned) fields it holds. The top-level `metadata` also holds
        // the untracked identity fields, so it is never dropped as a whole.
        let root_meta = vec![Pe::F("metadata".to_owned())];
        let prev_all = with_ancestors(&prev);
        let dropped: FieldSet = prev_all
            .iter()
            .filter(|p| !kept.contains(*p) && **p != root_meta)
            .cloned()
            .collect();
        // Remove only the outermost dropped paths, and never the key fields of an item that
        // stays.
        for p in &dropped {
            let inside_dropped = (1..p.len()).any(|i| dropped.contains(&p[..i]));
            if !inside_dropped && !is_key_field(p) {
                fieldset::remove(&mut new, p, shape);
            }
        }
        // An object or list this manager had fields in that stayed only for fields that no
        // longer exist, and is now empty, goes too unless someone owns it as such (deepest
        // first, so emptied parents follow).
        let mut emptied: Vec<&Path> = prev_all
            .difference(&dropped)
            .filter(|p| !members.contains(*p) && **p != root_meta)
            .collect();
        emptied.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for p in emptied {
            let empty = fieldset::get(&new, p, shape).is_some_and(|v| match v {
                Value::Object(m) => m.is_empty(),
                Value::Array(a) => a.is_empty(),
                _ => false,
            });
            if empty {
                fieldset::remove(&mut new, p, shape);
            }
        }
        merge(&mut new, &app_t, shape, &mut Vec::new());
        let new_t = tracked(&new, part);
        // Others lose fields whose value this apply changed (forced) or that no longer exist.
        // Entries of the other endpoint are untouched: their fields are not in this part.
        for e in &mut self.0 {
            if !same_fields(&e.subresource, sub) || (e.manager == manager && e.operation == "Apply")
            {
                continue;
            }
            e.set.retain(|p| {
                let now_v = fieldset::get(&new_t, p, shape);
                now_v.is_some()
                    && (fieldset::is_marker(p)
                        || !(app_set.contains(p) && fieldset::get(&cur_t, p, shape) != now_v))
            });
        }
        let e = self.entry(manager, "Apply", part, api_version, now);
        if e.set != app_set {
            e.set = app_set;
            now.clone_into(&mut e.time);
        }
        api_version.clone_into(&mut e.api_version);
        self.0.retain(|e| !e.set.is_empty());
        Ok(new)
    }
}

/// Merge an applied configuration into an object: objects recursively, keyed lists per item,
/// set lists by union, everything else replaced.
fn merge(dst: &mut Value, src: &Value, shape: &Shape, path: &mut Vec<String>) {
    match src {
        Value::Object(s) => {
            if !dst.is_object() {
                *dst = Value::Object(Map::new());
            }
            let Value::Object(d) = dst else { return };
            for (k, v) in s {
                if v.is_null() {
                    continue;
                }
                path.push(k.clone());
                merge(d.entry(k.clone()).or_insert(Value::Null), v, shape, path);
                path.pop();
            }
        }
        Value::Array(items) => match shape.list_kind(path) {
            ListKind::Map(keys) => {
                let mut cur = dst.as_array().cloned().unwrap_or_default();
                for item in items {
                    let k = fieldset::item_key(item, &keys);
                    match cur.iter().position(|c| fieldset::item_key(c, &keys) == k) {
                        Some(i) => merge(&mut cur[i], item, shape, path),
                        None => cur.push(item.clone()),
                    }
                }
                *dst = Value::Array(cur);
            }
            ListKind::Set => {
                let mut cur = dst.as_array().cloned().unwrap_or_default();
                for it in items {
                    if !cur.contains(it) {
                        cur.push(it.clone());
                    }
                }
                *dst = Value::Array(cur);
            }
            ListKind::Atomic => *dst = src.clone(),
        },
        _ => *dst = src.clone(),
    }
}

/// The paths of a set with all their prefixes (the objects and items around each field).
fn with_ancestors(set: &FieldSet) -> FieldSet {
    let mut out = FieldSet::new();
    for p in set {
        for i in 1..=p.len() {
            if !out.contains(&p[..i]) {
                out.insert(p[..i].to_vec());
            }
        }
    }
    out
}

/// `[..., k:{"name":"x"}, f:name]`: a key field of a keyed item.
fn is_key_field(p: &Path) -> bool {
    match p.as_slice() {
        [.., Pe::K(k), Pe::F(f)] => {
            serde_json::from_str::<Map<String, Value>>(k).is_ok_and(|m| m.contains_key(f))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn keyed_items_from_two_managers() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}}}});
        let shape = Shape::Schema(Arc::new(schema));
        let mut m = Managers::default();
        let w = |manager| Writer {
            manager,
            part: Part::Whole,
            api_version: "v1",
            now: "t",
            shape: &shape,
        };
        let base = json!({"metadata": {"name": "a"}});
        let one =
            json!({"metadata": {"name": "a"}, "spec": {"ports": [{"name": "http", "port": 80}]}});
        let v1 = m.apply(&base, &one, false, &w("one")).unwrap();
        let two =
            json!({"metadata": {"name": "a"}, "spec": {"ports": [{"name": "grpc", "port": 90}]}});
        let v2 = m.apply(&v1, &two, false, &w("two")).unwrap();
        assert_eq!(
            v2["spec"]["ports"],
            json!([{"name": "http", "port": 80}, {"name": "grpc", "port": 90}])
        );
        let none = json!({"metadata": {"name": "a"}, "spec": {"ports": []}});
        let v3 = m.apply(&v2, &none, false, &w("two")).unwrap();
        assert_eq!(v3["spec"]["ports"], json!([{"name": "http", "port": 80}]));
    }

    fn whole(manager: &str) -> Writer<'_> {
        Writer {
            manager,
            part: Part::Whole,
            api_version: "v1",
            now: "t",
            shape: &Shape::Core,
        }
    }

    #[test]
    fn a_dropped_object_takes_its_unowned_fields_and_a_kept_one_keeps_them() {
        let mut m = Managers::default();
        let meta = json!({"name": "a"});
        let v1 = m
            .apply(
                &json!({"metadata": meta}),
                &json!({"metadata": meta, "spec": {"a": {"x": 1}, "b": {"x": 1}}}),
                false,
                &whole("one"),
            )
            .unwrap();
        // Unowned fields (as a defaulting step would add) in both objects; another manager
        // owns a field inside `b`.
        let mut v2 = v1.clone();
        v2["spec"]["a"]["unowned"] = json!(1);
        v2["spec"]["b"]["unowned"] = json!(1);
        v2["spec"]["b"]["y"] = json!(2);
        m.0.push(Entry {
            manager: "two".into(),
            operation: "Update".into(),
            subresource: String::new(),
            api_version: "v1".into(),
            time: "t".into(),
            set: FieldSet::from([vec![
                Pe::F("spec".into()),
                Pe::F("b".into()),
                Pe::F("y".into()),
            ]]),
        });
        let v3 = m
            .apply(&v2, &json!({"metadata": meta}), false, &whole("one"))
            .unwrap();
        assert_eq!(v3["spec"], json!({"b": {"unowned": 1, "y": 2}}));
        assert_eq!(v3["metadata"], meta);
    }

    #[test]
    fn an_object_kept_only_by_stale_ownership_goes_when_empty() {
        let mut m = Managers::default();
        let meta = json!({"name": "a"});
        let v1 = m
            .apply(
                &json!({"metadata": meta}),
                &json!({"metadata": meta, "spec": {"a": {"b": 1}, "keep": 1}}),
                false,
                &whole("one"),
            )
            .unwrap();
        // `two` claims a field that does not exist (any more).
        m.0.push(Entry {
            manager: "two".into(),
            operation: "Update".into(),
            subresource: String::new(),
            api_version: "v1".into(),
            time: "t".into(),
            set: FieldSet::from([vec![
                Pe::F("spec".into()),
                Pe::F("a".into()),
                Pe::F("gone".into()),
            ]]),
        });
        let v2 = m
            .apply(
                &v1,
                &json!({"metadata": meta, "spec": {"keep": 1}}),
                false,
                &whole("one"),
            )
            .unwrap();
        assert_eq!(v2["spec"], json!({"keep": 1}));
    }
}
