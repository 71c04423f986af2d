//! The `/scale` subresource of Deployments, ReplicaSets and StatefulSets, as autoscalers (the
//! HPA controller, `kubectl scale`) use it.
//!
//! Contract:
//! - GET answers an `autoscaling/v1` `Scale`: the parent's name, namespace, uid,
//!   resourceVersion and creationTimestamp; `spec.replicas` (the parent's, 1 when unset, the
//!   real server's default); `status.replicas` (the parent's status, 0 when unset) and
//!   `status.selector` (the parent's label selector as a string, keys sorted).
//! - PUT takes a `Scale`: a `metadata.resourceVersion` that is not the parent's answers 409,
//!   a `spec.replicas` that is not a non-negative integer 422; otherwise only the parent's
//!   `spec.replicas` changes. PATCH (merge, JSON, strategic) patches the `Scale` and then writes
//!   like PUT; apply patches on `/scale` answer 415 (not served here).
//! - Writes are recorded like the real server records them: an `Update` entry of the request's
//!   field manager with `subresource: scale` owning `f:spec.f:replicas` of the parent, taken
//!   from every other manager when the value changes (so an applier without `force` then
//!   conflicts with the scaler). A write of the current value changes nothing.
//! - Every answer is the `Scale` after the write.

use serde_json::{Value, json};

use crate::commit::{Ctx, Fields, commit, key};
use crate::error::{ApiError, Cause};
use crate::patch::{json as jsonpatch, merge};
use crate::resources::ResourceDef;
use crate::state::State;
use crate::write::{PatchKind, WriteOpts};

/// The subresource's name.
pub const SCALE: &str = "scale";

/// A label selector (`matchLabels`, `matchExpressions`) as the string form `Scale` reports.
pub fn selector_string(selector: &Value) -> String {
    let mut parts: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (k, v) in labels {
            parts.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for e in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let k = e["key"].as_str().unwrap_or_default().to_owned();
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{k} in ({})", values.join(",")),
            "NotIn" => format!("{k} notin ({})", values.join(",")),
            "Exists" => k.clone(),
            "DoesNotExist" => format!("!{k}"),
            _ => continue,
        };
        parts.push((k, text));
    }
    parts.sort();
    parts
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// The `Scale` of a stored workload.
pub fn scale_of(obj: &Value) -> Value {
    let meta = &obj["metadata"];
    let mut m = json!({ "name": meta["name"] });
    for k in ["namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(k) {
            m[k] = v.clone();
        }
    }
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": m,
        "spec": { "replicas": obj["spec"]["replicas"].as_i64().unwrap_or(1) },
        "status": {
            "replicas": obj["status"]["replicas"].as_i64().unwrap_or(0),
            "selector": selector_string(&obj["spec"]["selector"]),
        },
    })
}

/// GET `/scale`.
pub fn get(state: &State, def: &ResourceDef, ns: &str, name: &str) -> Result<Value, ApiError> {
    crate::read::get(state, def, ns, name).map(|o| scale_of(&o))
}

fn invalid_replicas(def: &ResourceDef, name: &str, value: &Value) -> ApiError {
    ApiError::invalid(
        "autoscaling",
        "Scale",
        name,
        &[Cause {
            reason: "FieldValueInvalid",
            message: format!(
                "Invalid value: {value}: must be greater than or equal to 0 ({} {name})",
                def.kind
            ),
            field: "spec.replicas".to_owned(),
        }],
    )
}

/// PUT `/scale` with the `Scale` `scale`; see the module contract.
pub fn update(
    state: &State,
    def: &ResourceDef,
    ns: &str,
    name: &str,
    scale: &Value,
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    if !scale.is_object() {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    }
    if let Some(n) = scale["metadata"]["name"].as_str()
        && !n.is_empty()
        && n != name
    {
        return Err(ApiError::bad_request(
            "the name of the object does not match the name on the URL",
        ));
    }
    let replicas = scale["spec"]["replicas"]
        .as_i64()
        .filter(|r| (0..=i64::from(i32::MAX)).contains(r))
        .ok_or_else(|| invalid_replicas(def, name, &scale["spec"]["replicas"]))?;
    let mut txn = state.store.txn();
    let Some(old) = txn.get(&def.bucket(), &key(def, ns, name)).cloned() else {
        return Err(ApiError::not_found(&def.group, &def.plural, name));
    };
    if let Some(rv) = scale["metadata"]["resourceVersion"]
        .as_str()
        .filter(|rv| !rv.is_empty())
        && Some(rv) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(ApiError::conflict(
            &def.group,
            &def.plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        ));
    }
    let mut new = old.clone();
    if !new["spec"].is_object() {
        new["spec"] = json!({});
    }
    new["spec"]["replicas"] = json!(replicas);
    let stored = commit(
        &mut txn,
        &Ctx {
            state,
            def,
            sub: Some(SCALE),
            dry_run: opts.dry_run,
        },
        Some(&old),
        new,
        Fields::Update(opts.manager()),
    )?;
    Ok(scale_of(&stored))
}

/// PATCH `/scale`: the patch applies to the current `Scale`, then as [`update`].
pub fn patch(
    state: &State,
    def: &ResourceDef,
    ns: &str,
    name: &str,
    kind: PatchKind,
    body: &Value,
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    let mut scale = get(state, def, ns, name)?;
    match kind {
        // A Scale has no lists: strategic merge is a merge patch.
        PatchKind::Merge | PatchKind::Strategic => merge::merge_patch(&mut scale, body),
        PatchKind::Json => jsonpatch::json_patch(&mut scale, body).map_err(|e| {
            ApiError::new(
                422,
                "Invalid",
                format!("the JSON patch could not be applied: {e}"),
            )
        })?,
        PatchKind::Apply => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                "server-side apply on the scale subresource is not served by the test cluster",
            ));
        }
    }
    // The patch is against the version read just now unless it names one itself.
    if body["metadata"]["resourceVersion"].is_null()
        && let Some(m) = scale["metadata"].as_object_mut()
    {
        m.remove("resourceVersion");
    }
    update(state, def, ns, name, &scale, opts)
}
