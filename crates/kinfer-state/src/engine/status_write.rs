//! Deriving, comparing and writing status.
//!
//! Contract:
//! - The current status is the object's, except when the object is the very version the
//!   engine last derived a written status from (a stale cache after our own write): then it is
//!   the status written, so neither the patch nor its events repeat.
//! - Conditions this controller does not own (another manager's, per `managedFields`; without
//!   an entry of ours: anything but the framework types and `<C>Ready`) are kept as they are;
//!   conditions we own that were not set this time (a component that went away) are dropped.
//! - Only the fields the pipeline's status sets are compared ([`crate::diff::subset`]:
//!   conditions by type, CRD defaults and fields others write ignored, `null` as unset); a
//!   dropped condition of ours also needs a write. Status is written with server-side apply
//!   (`force`) on the status subresource; the body names the object without a `namespace: null`
//!   for cluster-scoped kinds.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, FieldsV1, ManagedFieldsEntry};
use kube::api::{Patch, PatchParams};
use kube::core::ApiResource;
use kube::{Resource, ResourceExt};
use serde_json::Value;

use super::Engine;
use super::memory::WrittenStatus;
use crate::apply::{self, ApplyError};
use crate::category::CategorizedError;
use crate::clock::now_seconds;
use crate::condition::ConditionType;
use crate::metrics::WriteVerb;
use crate::pipeline::{ObjectKey, Observation, Pipeline};
use crate::status::{DeriveInput, OverallStatus, derive};

/// What the status step did.
pub(super) struct StatusOutcome {
    pub status: OverallStatus,
    pub written: bool,
    pub events: usize,
    pub error: Option<ApplyError>,
}

/// Condition types our manager owns in the status subresource, per `managedFields` (a
/// `conditions` list keyed by type); `None` when that is unknown: no entry of ours, or an
/// atomic list (the CRD does not declare `x-kubernetes-list-type: map`).
fn owned_condition_types(object: &Value, manager: &str) -> Option<BTreeSet<String>> {
    let entries = object.pointer("/metadata/managedFields")?.as_array()?;
    let mut found = false;
    let mut types = BTreeSet::new();
    for e in entries.iter().filter(|e| {
        e["manager"] == manager && e["operation"] == "Apply" && e["subresource"] == "status"
    }) {
        found = true;
        if let Some(conds) = e
            .pointer("/fieldsV1/f:status/f:conditions")
            .and_then(Value::as_object)
        {
            if !conds.keys().any(|k| k.starts_with("k:")) {
                return None;
            }
            for k in conds.keys() {
                let parsed = k
                    .strip_prefix("k:")
                    .and_then(|j| serde_json::from_str::<Value>(j).ok());
                if let Some(t) = parsed.as_ref().and_then(|v| v["type"].as_str()) {
                    types.insert(t.to_owned());
                }
            }
        }
    }
    found.then_some(types)
}

/// Cuts `fields` (a reconciled object's `managedFields`) to what [`owned_condition_types`]
/// reads: `manager`'s `Apply` entries on the status subresource, each reduced to the keys of
/// its `conditions` (values emptied). A controller's cache of the objects it reconciles keeps
/// only this: the full field sets are kilobytes per object as `serde_json` trees, and nothing
/// else of them is read.
pub(crate) fn keep_status_condition_keys(
    fields: &mut Option<Vec<ManagedFieldsEntry>>,
    manager: &str,
) {
    let Some(entries) = fields.as_mut() else {
        return;
    };
    entries.retain(|e| {
        e.manager.as_deref() == Some(manager)
            && e.operation.as_deref() == Some("Apply")
            && e.subresource.as_deref() == Some("status")
    });
    for e in entries.iter_mut() {
        let keys: Option<serde_json::Map<String, Value>> = e
            .fields_v1
            .as_ref()
            .and_then(|f| f.0.pointer("/f:status/f:conditions"))
            .and_then(Value::as_object)
            .map(|conds| {
                conds
                    .keys()
                    .map(|k| (k.clone(), Value::Object(serde_json::Map::new())))
                    .collect()
            });
        e.fields_v1 = Some(FieldsV1(match keys {
            Some(keys) => serde_json::json!({"f:status": {"f:conditions": keys}}),
            None => serde_json::json!({}),
        }));
    }
    if entries.is_empty() {
        *fields = None;
    }
}

impl<P: Pipeline> Engine<P> {
    /// Derive status, patch it if a field we write changed and `send` allows a request,
    /// publish transition events.
    pub(super) async fn write_status(
        &self,
        obj: &P::Object,
        key: &ObjectKey,
        observation: &Observation<P::State>,
        errors: &[CategorizedError],
        send: bool,
    ) -> StatusOutcome {
        let whole = serde_json::to_value(obj).unwrap_or(Value::Null);
        let version = obj.meta().resource_version.clone();
        let current = match self.memory.status_from(key, version.as_deref()) {
            Some(written) => written,
            None => whole.get("status").cloned().unwrap_or(Value::Null),
        };
        let previous: Vec<Condition> = current
            .get("conditions")
            .cloned()
            .and_then(|c| serde_json::from_value(c).ok())
            .unwrap_or_default();
        let mut derived = derive(&DeriveInput {
            components: &observation.components,
            errors,
            previous: &previous,
            generation: obj.meta().generation,
            now: now_seconds(self.clock.as_ref()),
            grace: self.config.grace,
        });
        self.pipeline
            .decorate(obj, observation, &mut derived.conditions);
        let owned = owned_condition_types(&whole, &self.config.scheme.manager);
        let dropped = derived.conditions.prune_unset_owned(|t| match &owned {
            Some(types) => types.contains(t),
            None => {
                matches!(
                    ConditionType::parse(t),
                    ConditionType::Ready
                        | ConditionType::ConfigValid
                        | ConditionType::AuthValid
                        | ConditionType::DependenciesReachable
                ) || t.ends_with("Ready")
            }
        });
        let (conditions, transitions) = derived.conditions.finish();
        let status = self
            .pipeline
            .status(obj, observation, derived.status, conditions);
        if !send || (dropped.is_empty() && crate::diff::subset(&status, &current)) {
            return StatusOutcome {
                status: derived.status,
                written: false,
                events: 0,
                error: None,
            };
        }
        let resource = ApiResource::erase::<P::Object>(&());
        let namespace = obj.meta().namespace.as_deref();
        let api = apply::parent_api(&self.client, &resource, namespace);
        let name = obj.name_any();
        let mut metadata = serde_json::json!({"name": name});
        if let Some(ns) = namespace {
            metadata["namespace"] = Value::String(ns.to_owned());
        }
        let body = serde_json::json!({
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": metadata,
            "status": status,
        });
        let pp = PatchParams::apply(&self.config.scheme.manager).force();
        if let Err(source) = api.patch_status(&name, &pp, &Patch::Apply(&body)).await {
            return StatusOutcome {
                status: derived.status,
                written: false,
                events: 0,
                error: Some(ApplyError::PatchStatus {
                    source: Box::new(source),
                }),
            };
        }
        self.handles.writes(WriteVerb::Status, 1);
        self.memory
            .wrote_status(key, WrittenStatus::new(version, &status), self.clock.now());
        let events = self
            .events
            .publish(&obj.object_ref(&()), &transitions)
            .await;
        self.handles.writes(WriteVerb::Event, events);
        StatusOutcome {
            status: derived.status,
            written: true,
            events,
            error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `managedFields` of an object as JSON, and as the cache keeps them.
    fn both(entries: &Value) -> (Value, Value) {
        let whole = json!({"metadata": {"managedFields": entries}});
        let mut fields: Option<Vec<ManagedFieldsEntry>> =
            serde_json::from_value(entries.clone()).ok();
        keep_status_condition_keys(&mut fields, "op");
        let trimmed = json!({"metadata": {"managedFields": fields}});
        (whole, trimmed)
    }

    #[test]
    fn the_cached_entries_answer_like_the_whole_ones() {
        let ready = r#"k:{"type":"Ready"}"#;
        let cases = [
            // A map list of conditions, with another manager's entry and a main entry of ours.
            json!([
                {"manager": "op", "operation": "Apply", "subresource": "status", "fieldsV1":
                    {"f:status": {"f:observedGeneration": {}, "f:conditions": {
                        ready: {".": {}, "f:type": {}, "f:status": {}, "f:message": {}}}}}},
                {"manager": "op", "operation": "Apply", "fieldsV1": {"f:metadata": {}}},
                {"manager": "other", "operation": "Apply", "subresource": "status",
                    "fieldsV1": {"f:status": {"f:conditions": {r#"k:{"type":"Other"}"#: {}}}}}
            ]),
            // An atomic list: unknown.
            json!([{"manager": "op", "operation": "Apply", "subresource": "status",
                "fieldsV1": {"f:status": {"f:conditions": {}}}}]),
            // An entry of ours without conditions, and no entry of ours at all.
            json!([{"manager": "op", "operation": "Apply", "subresource": "status",
                "fieldsV1": {"f:status": {"f:ready": {}}}}]),
            json!([{"manager": "other", "operation": "Update", "fieldsV1": {}}]),
        ];
        for (i, entries) in cases.iter().enumerate() {
            let (whole, trimmed) = both(entries);
            assert_eq!(
                owned_condition_types(&trimmed, "op"),
                owned_condition_types(&whole, "op"),
                "case {i}: {trimmed}"
            );
        }
        let (_, trimmed) = both(&cases[0]);
        assert_eq!(
            trimmed
                .pointer("/metadata/managedFields")
                .and_then(Value::as_array)
                .map(Vec::len),
            Some(1),
            "only our status entry is kept"
        );
    }
}
