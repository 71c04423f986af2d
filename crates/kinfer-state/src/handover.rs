//! Releasing a field of a child to another controller (an HPA taking `spec.replicas`), as
//! Kubernetes documents it ("Server-Side Apply", "Transferring ownership").
//!
//! Why: server-side apply removes a field its only manager stops sending, so a controller
//! cannot simply leave `spec.replicas` out once an HPA should own it (the Deployment would
//! fall back to one replica). Repeating the value it read is no better: the engine's apply is
//! forced, so an HPA write landing between that read and the apply is undone.
//!
//! Contract, for a planned object that releases some fields ([`crate::DesiredObject::release`]):
//! - While the object does not exist, the released fields are sent with the rest (their
//!   initial value) under the controller's field manager.
//! - Once it exists, the controller's apply never sends them again. Before the first apply
//!   without them, while the controller's manager still owns any of them ([`owns`]), they are
//!   handed over: an apply of only those fields, at their live values, under the temporary
//!   manager [`handover_manager`] (`<manager>-handover`), **without force**. Success means the
//!   hand-over manager co-owns them, so the controller's apply without them keeps them. A 409
//!   means another manager owns a field with a different value (it changed since the read):
//!   the object is read again and the check repeats with what is live (a few times at most,
//!   then an Infrastructure error and a retry later); nothing is ever overwritten. The
//!   hand-over manager's entry goes away on its own with the other controller's first write.
//! - Taking a field back is the ordinary forced apply of a body that sets it again.
//!
//! Field paths are plain object field names (`spec.replicas`); list items are not addressed.

use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject};
use serde_json::{Map, Value, json};

use crate::apply::ApplyError;
use crate::pipeline::{ChildKind, ObjectKey};

/// How often a hand-over is retried after a conflict within one reconcile.
const ATTEMPTS: usize = 3;

/// A path of object field names, such as `spec.replicas`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath(Vec<String>);

impl FieldPath {
    /// A path from dotted field names (`spec.replicas`); empty segments are dropped.
    pub fn parse(dotted: &str) -> Self {
        Self(
            dotted
                .split('.')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }

    /// The value at this path in `obj`.
    pub fn get<'a>(&self, obj: &'a Value) -> Option<&'a Value> {
        self.0.iter().try_fold(obj, |v, f| v.get(f))
    }

    /// Remove this path from `obj` (parents are kept); true when something was removed.
    pub fn remove(&self, obj: &mut Value) -> bool {
        let Some((last, parents)) = self.0.split_last() else {
            return false;
        };
        let mut v = obj;
        for f in parents {
            match v.get_mut(f) {
                Some(c) => v = c,
                None => return false,
            }
        }
        v.as_object_mut().is_some_and(|m| m.remove(last).is_some())
    }

    /// Set this path in `obj` to `value`, creating parent objects.
    fn set(&self, obj: &mut Value, value: Value) {
        let mut v = obj;
        for f in &self.0 {
            if !v.is_object() {
                *v = Value::Object(Map::new());
            }
            let Some(m) = v.as_object_mut() else { return };
            v = m.entry(f.clone()).or_insert(Value::Null);
        }
        *v = value;
    }

    /// Whether a `fieldsV1` tree contains this path.
    fn in_fields(&self, fields: &Map<String, Value>) -> bool {
        let mut tree = fields;
        for f in &self.0 {
            match tree.get(&format!("f:{f}")).and_then(Value::as_object) {
                Some(t) => tree = t,
                None => return false,
            }
        }
        true
    }
}

impl std::fmt::Display for FieldPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

/// The temporary field manager fields are handed over with.
pub fn handover_manager(manager: &str) -> String {
    format!("{manager}-handover")
}

/// Whether `manager` owns `path` of `live` through an apply to the main resource.
pub fn owns(live: &Value, manager: &str, path: &FieldPath) -> bool {
    crate::diff::owned_fields(live, manager)
        .into_iter()
        .any(|fields| path.in_fields(fields))
}

/// The field managers owning `path` of `live` (any operation or subresource), sorted: who
/// holds a released field now (logs, tests).
pub fn owners(live: &Value, path: &FieldPath) -> Vec<String> {
    let mut managers: Vec<String> = live
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e["fieldsV1"].as_object().is_some_and(|f| path.in_fields(f)))
        .filter_map(|e| e["manager"].as_str().map(str::to_owned))
        .collect();
    managers.sort();
    managers.dedup();
    managers
}

/// The hand-over apply of `live` (of kind `resource`): identity plus the fields of `paths`
/// that `live` sets, at their live values; `None` when it sets none of them.
pub fn handover_body(resource: &ApiResource, live: &Value, paths: &[FieldPath]) -> Option<Value> {
    let meta = &live["metadata"];
    let mut metadata = json!({ "name": meta["name"] });
    if let Some(ns) = meta.get("namespace") {
        metadata["namespace"] = ns.clone();
    }
    let mut body = json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": metadata,
    });
    let mut any = false;
    for p in paths {
        if let Some(v) = p.get(live) {
            p.set(&mut body, v.clone());
            any = true;
        }
    }
    any.then_some(body)
}

/// What [`hand_over`] did.
#[derive(Debug)]
pub struct HandOver {
    /// Whether a hand-over apply was accepted.
    pub wrote: bool,
    /// The live object as last read (re-read after a conflict), for the diff that follows.
    pub live: DynamicObject,
}

fn api(client: &Client, kind: &ChildKind, key: &ObjectKey) -> Api<DynamicObject> {
    match key.namespace.as_deref() {
        Some(ns) if kind.namespaced => Api::namespaced_with(client.clone(), ns, &kind.resource),
        _ => Api::all_with(client.clone(), &kind.resource),
    }
}

/// Hand `paths` of the live object `live` over from `manager`; see the module contract.
pub async fn hand_over(
    client: &Client,
    kind: &ChildKind,
    key: &ObjectKey,
    live: DynamicObject,
    paths: &[FieldPath],
    manager: &str,
) -> Result<HandOver, ApplyError> {
    let api = api(client, kind, key);
    let temporary = handover_manager(manager);
    let pp = PatchParams::apply(&temporary);
    let mut live = live;
    for _ in 0..ATTEMPTS {
        let value = serde_json::to_value(&live).map_err(|source| ApplyError::SerializeChild {
            child: key.clone(),
            source,
        })?;
        let owned = paths.iter().any(|p| owns(&value, manager, p));
        let Some(body) = handover_body(&kind.resource, &value, paths).filter(|_| owned) else {
            return Ok(HandOver { wrote: false, live });
        };
        match api.patch(&key.name, &pp, &Patch::Apply(&body)).await {
            Ok(_) => {
                tracing::info!(object = %key, fields = %paths.iter().map(ToString::to_string).collect::<Vec<_>>().join(","), "handed fields over");
                return Ok(HandOver { wrote: true, live });
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                tracing::info!(object = %key, "hand-over conflicts: another manager changed the field; reading again");
                live = match api.get_opt(&key.name).await {
                    Ok(Some(l)) => l,
                    Ok(None) => return Err(ApplyError::HandOverContended { child: key.clone() }),
                    Err(source) => {
                        return Err(ApplyError::GetChild {
                            child: key.clone(),
                            source: Box::new(source),
                        });
                    }
                };
            }
            Err(source) => {
                return Err(ApplyError::HandOver {
                    child: key.clone(),
                    source: Box::new(source),
                });
            }
        }
    }
    Err(ApplyError::HandOverContended { child: key.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(managed: &Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns", "managedFields": managed},
            "spec": {"replicas": 4, "template": {"spec": {}}},
        })
    }

    fn entry(manager: &str, operation: &str, sub: Option<&str>) -> Value {
        let mut e = json!({
            "manager": manager, "operation": operation, "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}},
        });
        if let Some(s) = sub {
            e["subresource"] = json!(s);
        }
        e
    }

    #[test]
    fn owners_are_every_manager_holding_the_path() {
        let path = FieldPath::parse("spec.replicas");
        let mut hpa = entry("hpa", "Update", Some("scale"));
        hpa["fieldsV1"] = json!({"f:spec": {"f:replicas": {}}});
        let other = json!({"manager": "x", "operation": "Apply", "fieldsV1": {"f:spec": {}}});
        let live = live(&json!([entry("op", "Apply", None), hpa, other]));
        assert_eq!(
            owners(&live, &path),
            vec!["hpa".to_owned(), "op".to_owned()]
        );
    }

    #[test]
    fn ownership_is_our_main_apply_entry_only() {
        let path = FieldPath::parse("spec.replicas");
        assert!(owns(
            &live(&json!([entry("op", "Apply", None)])),
            "op",
            &path
        ));
        for other in [
            entry("op", "Update", None),
            entry("op", "Apply", Some("status")),
            entry("hpa", "Apply", None),
        ] {
            assert!(
                !owns(&live(&json!([other.clone()])), "op", &path),
                "{other}"
            );
        }
        assert!(!owns(
            &live(&json!([entry("op", "Apply", None)])),
            "op",
            &FieldPath::parse("spec.paused")
        ));
    }

    fn deployments() -> ApiResource {
        ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&())
    }

    #[test]
    fn the_handover_body_is_identity_plus_live_values() {
        let paths = [
            FieldPath::parse("spec.replicas"),
            FieldPath::parse("spec.paused"),
        ];
        let body = handover_body(&deployments(), &live(&json!([])), &paths).unwrap();
        assert_eq!(
            body,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "ns"},
                "spec": {"replicas": 4},
            })
        );
        assert!(
            handover_body(
                &deployments(),
                &live(&json!([])),
                &[FieldPath::parse("spec.paused")]
            )
            .is_none()
        );
    }

    #[test]
    fn paths_remove_only_their_field() {
        let mut v = json!({"spec": {"replicas": 2, "selector": {}}});
        assert!(FieldPath::parse("spec.replicas").remove(&mut v));
        assert!(!FieldPath::parse("spec.replicas").remove(&mut v));
        assert!(!FieldPath::parse("").remove(&mut v));
        assert_eq!(v, json!({"spec": {"selector": {}}}));
        assert_eq!(
            FieldPath::parse("spec..replicas").to_string(),
            "spec.replicas"
        );
    }
}
