//! How lists merge: atomic (replaced whole), map (items keyed by fields) or set (scalar items).
//!
//! Core kinds follow the real server's merge keys for the lists controllers touch (containers,
//! env, ports, volumes, volumeMounts, conditions, ownerReferences, finalizers...). Custom
//! resources follow `x-kubernetes-list-type` / `x-kubernetes-list-map-keys` in their schema and
//! are atomic otherwise, as on a real server.

use std::sync::Arc;

use serde_json::Value;

/// How one list merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    /// Replaced as a whole.
    Atomic,
    /// Items identified by these key fields.
    Map(Vec<String>),
    /// Scalar items, union.
    Set,
}

/// The list-merge knowledge for one resource.
#[derive(Debug, Clone)]
pub enum Shape {
    /// A built-in kind: the fixed table.
    Core,
    /// A custom resource: its schema.
    Schema(Arc<Value>),
}

fn keys(k: &[&str]) -> ListKind {
    ListKind::Map(k.iter().map(|s| (*s).to_owned()).collect())
}

fn metadata_list(path: &[String]) -> Option<ListKind> {
    match path {
        [m, f] if m == "metadata" && f == "ownerReferences" => Some(keys(&["uid"])),
        [m, f] if m == "metadata" && f == "finalizers" => Some(ListKind::Set),
        _ => None,
    }
}

fn core_list(path: &[String]) -> ListKind {
    let last = path.last().map_or("", String::as_str);
    let parent = if path.len() >= 2 {
        path[path.len() - 2].as_str()
    } else {
        ""
    };
    match last {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => keys(&["name"]),
        "volumeMounts" => keys(&["mountPath"]),
        "volumeDevices" => keys(&["devicePath"]),
        "conditions" => keys(&["type"]),
        "hostAliases" => keys(&["ip"]),
        "topologySpreadConstraints" => keys(&["topologyKey"]),
        "ports"
            if matches!(
                parent,
                "containers" | "initContainers" | "ephemeralContainers"
            ) =>
        {
            keys(&["containerPort"])
        }
        "ports" if parent == "spec" => keys(&["port"]),
        _ => ListKind::Atomic,
    }
}

fn schema_at<'a>(schema: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = schema;
    for seg in path {
        // Descend through list items transparently: the path holds field names only.
        while cur.get("type").and_then(Value::as_str) == Some("array") {
            cur = cur.get("items")?;
        }
        cur = match cur.get("properties").and_then(|p| p.get(seg)) {
            Some(s) => s,
            None => cur.get("additionalProperties").filter(|a| a.is_object())?,
        };
    }
    Some(cur)
}

impl Shape {
    /// How the list at `path` (field names from the root, list items skipped) merges.
    pub fn list_kind(&self, path: &[String]) -> ListKind {
        if let Some(k) = metadata_list(path) {
            return k;
        }
        match self {
            Self::Core => core_list(path),
            Self::Schema(schema) => {
                let Some(s) = schema_at(schema, path) else {
                    return ListKind::Atomic;
                };
                match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("map") => ListKind::Map(
                        s.get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .filter_map(|k| k.as_str().map(str::to_owned))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    ),
                    Some("set") => ListKind::Set,
                    _ => ListKind::Atomic,
                }
            }
        }
    }
}
