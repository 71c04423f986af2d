//! Discovery documents: `/api`, `/api/v1`, `/apis`, `/apis/<group>`, `/apis/<group>/<version>`
//! and `/version`, built from the registry (built-in kinds plus every established CRD).

use serde_json::{Value, json};

use crate::resources::Registry;

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Kubernetes version ordering: GA before beta before alpha, higher numbers first.
fn priority(v: &str) -> (u8, u32, u32) {
    let rest = v.strip_prefix('v').unwrap_or(v);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (level, minor) = if tail.is_empty() {
        (3, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        (0, 0)
    };
    (level, major, minor)
}

/// Versions of a group, preferred first.
pub fn sorted_versions(mut versions: Vec<String>) -> Vec<String> {
    versions.sort_by_key(|v| std::cmp::Reverse(priority(v)));
    versions
}

/// `/api`.
pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1" }],
    })
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let versions = sorted_versions(versions.to_vec());
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({ "groupVersion": format!("{name}/{v}"), "version": v }))
        .collect();
    json!({
        "name": name,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

/// `/apis`.
pub fn group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_doc(g, vs))
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `/apis/<group>`.
pub fn group(reg: &Registry, name: &str) -> Option<Value> {
    let groups = reg.groups();
    let vs = groups.get(name)?;
    let mut doc = group_doc(name, vs);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// `/api/v1` or `/apis/<group>/<version>`.
pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    for d in reg
        .all()
        .filter(|d| d.group == group && d.version == version)
    {
        let mut r = json!({
            "name": d.plural,
            "singularName": d.singular,
            "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": VERBS,
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        resources.push(r);
        if d.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", d.plural), "singularName": "", "namespaced": d.namespaced,
                "kind": d.kind, "verbs": ["get", "patch", "update"],
            }));
        }
        for s in &d.extra_subresources {
            resources.push(if s == crate::scale::SCALE {
                json!({
                    "name": format!("{}/{s}", d.plural), "singularName": "", "namespaced": d.namespaced,
                    "group": "autoscaling", "version": "v1", "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                })
            } else {
                json!({
                    "name": format!("{}/{s}", d.plural), "singularName": "", "namespaced": d.namespaced,
                    "kind": d.kind, "verbs": ["get"],
                })
            });
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources }),
    )
}

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-kinfer-testkit",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_priority() {
        let v = sorted_versions(vec![
            "v1alpha1".into(),
            "v1beta2".into(),
            "v2".into(),
            "v1".into(),
        ]);
        assert_eq!(v, vec!["v2", "v1", "v1beta2", "v1alpha1"]);
    }
}
