//! Schema fragments for the Kubernetes core and meta types the CRDs embed, written as
//! controller-gen emits them upstream; shared by every kind (AIM, ModelService).
//!
//! The k8s-openapi types are used for (de)serialisation, but the schemas they derive differ
//! from upstream's where the CRD comparison looks: `Quantity` has no `anyOf`/`pattern`,
//! `LocalObjectReference.name` and the key selectors' `name` are `required` instead of
//! `default: ""`, the selectors are not atomic maps, and `Condition` carries none of the length,
//! pattern and enum bounds of `metav1.Condition`. Each function has the `schema_with` signature
//! (`#[schemars(schema_with = "crate::schema_k8s::conditions")]`) and writes upstream's fragment
//! instead. Scalar fragments (quantities, durations) are in [`crate::schema`]; fragments only
//! one kind uses stay in that kind's `schema_ext`.

use k8s_openapi::api::core::v1::{
    ConfigMapKeySelector, LocalObjectReference, ObjectFieldSelector, ResourceFieldSelector,
    SecretKeySelector,
};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value};

/// The `metav1.Condition` type pattern, as controller-gen writes it.
const CONDITION_TYPE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// The `metav1.Condition` reason pattern, as controller-gen writes it.
const CONDITION_REASON_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/// `status.conditions`: a list of `metav1.Condition` keyed by `type`, with the bounds
/// controller-gen emits.
pub fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "description": "Condition contains details for one aspect of the current state of this API Resource.",
            "type": "object",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {
                    "description": "lastTransitionTime is the last time the condition transitioned from one status to another.",
                    "type": "string",
                    "format": "date-time",
                },
                "message": {
                    "description": "message is a human readable message indicating details about the transition. This may be an empty string.",
                    "type": "string",
                    "maxLength": 32768,
                },
                "observedGeneration": {
                    "description": "observedGeneration represents the .metadata.generation that the condition was set based upon.",
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                },
                "reason": {
                    "description": "reason contains a programmatic identifier indicating the reason for the condition's last transition.",
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1024,
                    "pattern": CONDITION_REASON_PATTERN,
                },
                "status": {
                    "description": "status of the condition, one of True, False, Unknown.",
                    "type": "string",
                    "enum": ["True", "False", "Unknown"],
                },
                "type": {
                    "description": "type of condition in CamelCase or in foo.example.com/CamelCase.",
                    "type": "string",
                    "maxLength": 316,
                    "pattern": CONDITION_TYPE_PATTERN,
                },
            },
        },
    })
}

/// `resources`: `core/v1.ResourceRequirements` (`claims`, `limits`, `requests`) with
/// quantity-pattern limits and requests.
pub fn resource_requirements(generator: &mut SchemaGenerator) -> Schema {
    let quantities = crate::schema::quantity_map(generator);
    json_schema!({
        "description": "ResourceRequirements describes the compute resource requirements.",
        "type": "object",
        "properties": {
            "claims": {
                "description": "Claims lists the names of resources, defined in spec.resourceClaims, that are used by this container.",
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "description": "ResourceClaim references one entry in PodSpec.ResourceClaims.",
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {
                            "description": "Name must match the name of one entry in pod.spec.resourceClaims of the Pod where this field is used.",
                            "type": "string",
                        },
                        "request": {
                            "description": "Request is the name chosen for a request in the referenced claim. If empty, everything from the claim is made available, otherwise only the result of this request.",
                            "type": "string",
                        },
                    },
                },
            },
            "limits": quantities.clone(),
            "requests": quantities,
        },
    })
}

/// A list of `core/v1.LocalObjectReference` (`imagePullSecrets`): atomic items whose `name`
/// defaults to `""`.
pub fn local_object_references(generator: &mut SchemaGenerator) -> Schema {
    let item = named_reference::<LocalObjectReference>(generator);
    json_schema!({
        "type": "array",
        "items": item,
    })
}

/// `env[].valueFrom.configMapKeyRef`: atomic, `name` defaults to `""`.
pub fn config_map_key_selector(generator: &mut SchemaGenerator) -> Schema {
    named_reference::<ConfigMapKeySelector>(generator)
}

/// `env[].valueFrom.secretKeyRef`: atomic, `name` defaults to `""`.
pub fn secret_key_selector(generator: &mut SchemaGenerator) -> Schema {
    named_reference::<SecretKeySelector>(generator)
}

/// `env[].valueFrom.fieldRef`: atomic.
pub fn object_field_selector(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = ObjectFieldSelector::json_schema(generator);
    schema.insert("x-kubernetes-map-type".into(), "atomic".into());
    schema
}

/// `env[].valueFrom.resourceFieldRef`: atomic, `divisor` a pattern-checked quantity that keeps
/// its description.
pub fn resource_field_selector(generator: &mut SchemaGenerator) -> Schema {
    let mut divisor = crate::schema::quantity(generator);
    let mut schema = ResourceFieldSelector::json_schema(generator);
    if let Some(properties) = properties_mut(&mut schema) {
        if let Some(description) = properties
            .get("divisor")
            .and_then(|d| d.get("description"))
            .cloned()
        {
            divisor.insert("description".into(), description);
        }
        properties.insert("divisor".into(), divisor.to_value());
    }
    schema.insert("x-kubernetes-map-type".into(), "atomic".into());
    schema
}

/// A k8s-openapi reference type as controller-gen renders it: atomic, with an optional `name`
/// that defaults to the empty string.
fn named_reference<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = T::json_schema(generator);
    if let Some(properties) = properties_mut(&mut schema)
        && let Some(Value::Object(name)) = properties.get_mut("name")
    {
        name.insert("default".into(), "".into());
    }
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|field| field != "name");
        if required.is_empty() {
            schema.remove("required");
        }
    }
    schema.insert("x-kubernetes-map-type".into(), "atomic".into());
    schema
}

fn properties_mut(schema: &mut Schema) -> Option<&mut Map<String, Value>> {
    schema.get_mut("properties").and_then(Value::as_object_mut)
}
