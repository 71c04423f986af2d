//! The write verbs: create (POST), update (PUT) and patch (JSON merge, JSON patch, strategic
//! merge, server-side apply). Each builds the candidate object and hands it to
//! [`crate::commit::commit`].

use serde_json::{Value, json};

use crate::commit::{Ctx, Fields, commit, key, part_of, shape_of};
use crate::error::ApiError;
use crate::patch::apply::{Managers, Writer};
use crate::patch::{json as jsonpatch, merge, strategic};
use crate::resources::ResourceDef;
use crate::state::{State, name_of, now};
use crate::store::Txn;

/// Request options that affect writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `force` (apply only).
    pub force: bool,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The User-Agent, for the default manager name.
    pub user_agent: String,
}

impl WriteOpts {
    /// The field manager of a non-apply write: `fieldManager`, else the User-Agent's program.
    pub(crate) fn manager(&self) -> String {
        self.field_manager.clone().unwrap_or_else(|| {
            let ua = self.user_agent.split('/').next().unwrap_or_default();
            if ua.is_empty() {
                "unknown".to_owned()
            } else {
                ua.to_owned()
            }
        })
    }
}

/// The kind of patch, from the Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml`.
    Apply,
}

fn check_identity(def: &ResourceDef, body: &mut Value, ns: &str) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    }
    if let Some(kind) = body["kind"].as_str()
        && kind != def.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind {kind:?} does not match the resource {:?}",
            def.kind
        )));
    }
    crate::builtin::check_decodable(def, body)?;
    if !body["metadata"].is_object() {
        body["metadata"] = json!({});
    }
    if def.namespaced {
        match body["metadata"]["namespace"].as_str() {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => body["metadata"]["namespace"] = json!(ns),
        }
    } else if let Some(m) = body["metadata"].as_object_mut() {
        m.remove("namespace");
    }
    Ok(())
}

fn check_namespace(txn: &Txn<'_>, def: &ResourceDef, ns: &str, name: &str) -> Result<(), ApiError> {
    if !def.namespaced {
        return Ok(());
    }
    let Some(n) = txn.get(
        &(String::new(), "namespaces".to_owned()),
        &(String::new(), ns.to_owned()),
    ) else {
        return Err(ApiError::not_found("", "namespaces", ns));
    };
    if n["metadata"].get("deletionTimestamp").is_some() {
        return Err(ApiError::namespace_terminating(
            &def.group,
            &def.plural,
            name,
            ns,
        ));
    }
    Ok(())
}

/// POST: create.
pub fn create(
    state: &State,
    def: &ResourceDef,
    ns: &str,
    mut body: Value,
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    check_identity(def, &mut body, ns)?;
    let mut txn = state.store.txn();
    if name_of(&body).is_empty() {
        let Some(prefix) = body["metadata"]["generateName"].as_str().map(str::to_owned) else {
            return Err(ApiError::invalid(
                &def.group,
                &def.kind,
                "",
                &[crate::error::Cause {
                    reason: "FieldValueRequired",
                    message: "Required value: name or generateName is required".to_owned(),
                    field: "metadata.name".to_owned(),
                }],
            ));
        };
        body["metadata"]["name"] = json!(crate::names::generated(&prefix, &state.random_suffix()));
    }
    let name = name_of(&body).to_owned();
    check_namespace(&txn, def, ns, &name)?;
    if txn.get(&def.bucket(), &key(def, ns, &name)).is_some() {
        return Err(ApiError::already_exists(&def.group, &def.plural, &name));
    }
    commit(
        &mut txn,
        &Ctx {
            state,
            def,
            sub: None,
            dry_run: opts.dry_run,
        },
        None,
        body,
        Fields::Update(opts.manager()),
    )
}

/// PUT: update (409 on a stale resourceVersion).
pub fn update(
    state: &State,
    def: &ResourceDef,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    mut body: Value,
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    check_identity(def, &mut body, ns)?;
    if name_of(&body) != name {
        return Err(ApiError::bad_request(
            "the name of the object does not match the name on the URL",
        ));
    }
    let mut txn = state.store.txn();
    let k = key(def, ns, name);
    let Some(old) = txn.get(&def.bucket(), &k).cloned() else {
        return Err(ApiError::not_found(&def.group, &def.plural, name));
    };
    match body["metadata"]["resourceVersion"]
        .as_str()
        .filter(|rv| !rv.is_empty())
    {
        // Custom resources do not allow unconditional updates.
        None if def.custom => {
            return Err(ApiError::invalid(
                &def.group,
                &def.kind,
                name,
                &[crate::error::Cause {
                    reason: "FieldValueInvalid",
                    message: "Invalid value: 0: must be specified for an update".to_owned(),
                    field: "metadata.resourceVersion".to_owned(),
                }],
            ));
        }
        Some(rv) if Some(rv) != old["metadata"]["resourceVersion"].as_str() => {
            return Err(stale(def, name));
        }
        _ => {}
    }
    if let Some(sent) = other_uid(&body, &old) {
        // An update's UID is a precondition.
        let why = format!(
            "Precondition failed: UID in precondition: {sent}, UID in object meta: {}",
            old["metadata"]["uid"].as_str().unwrap_or_default()
        );
        return Err(ApiError::conflict(&def.group, &def.plural, name, &why));
    }
    commit(
        &mut txn,
        &Ctx {
            state,
            def,
            sub,
            dry_run: opts.dry_run,
        },
        Some(&old),
        body,
        Fields::Update(opts.manager()),
    )
}

/// The object a write is addressed to.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    /// The resource.
    pub def: &'a ResourceDef,
    /// The namespace (empty for cluster scope).
    pub ns: &'a str,
    /// The name.
    pub name: &'a str,
    /// The subresource (`status`), if any.
    pub sub: Option<&'a str>,
}

/// The outcome of a PATCH.
#[derive(Debug)]
pub struct Patched {
    /// The object after the patch.
    pub object: Value,
    /// Whether this apply created it (decided under the same lock as the write).
    pub created: bool,
}

/// PATCH of any kind; apply creates the object when absent.
pub fn patch(
    state: &State,
    at: &At<'_>,
    kind: PatchKind,
    patch: &Value,
    opts: &WriteOpts,
) -> Result<Patched, ApiError> {
    let At { def, ns, name, sub } = *at;
    let mut txn = state.store.txn();
    let k = key(def, ns, name);
    let old = txn.get(&def.bucket(), &k).cloned();
    let shape = shape_of(def);
    if kind == PatchKind::Apply {
        let Some(manager) = opts.field_manager.clone() else {
            return Err(ApiError::bad_request(
                "PATCH, application/apply-patch+yaml requires fieldManager to be set",
            ));
        };
        let mut applied = patch.clone();
        check_identity(def, &mut applied, ns)?;
        if name_of(&applied) != name {
            return Err(ApiError::bad_request(
                "the name of the object does not match the name on the URL",
            ));
        }
        if old.is_none() {
            check_namespace(&txn, def, ns, name)?;
        }
        if let Some(o) = &old
            && let Some(sent) = other_uid(&applied, o)
        {
            return Err(uid_immutable(def, name, sent));
        }
        let base = old.clone().unwrap_or_else(|| {
            let mut meta = json!({ "name": name });
            if def.namespaced {
                meta["namespace"] = json!(ns);
            }
            json!({ "apiVersion": def.api_version(), "kind": def.kind, "metadata": meta })
        });
        let mut managers = Managers::from_object(&base);
        let part = part_of(def, sub);
        let (api_version, now) = (def.api_version(), now());
        let w = Writer {
            manager: &manager,
            part,
            api_version: &api_version,
            now: &now,
            shape: &shape,
        };
        let new = managers
            .apply(&base, &applied, opts.force, &w)
            .map_err(|conflicts| conflict_error(def, name, &conflicts))?;
        let created = old.is_none() && !opts.dry_run;
        return commit(
            &mut txn,
            &Ctx {
                state,
                def,
                sub,
                dry_run: opts.dry_run,
            },
            old.as_ref(),
            new,
            Fields::Computed(managers),
        )
        .map(|object| Patched { object, created });
    }
    let Some(old) = old else {
        return Err(ApiError::not_found(&def.group, &def.plural, name));
    };
    if matches!(kind, PatchKind::Merge | PatchKind::Strategic) && !patch.is_object() {
        return Err(ApiError::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type \
             map[string]interface {{}}",
            crate::builtin::json_type(patch)
        )));
    }
    let mut new = old.clone();
    match kind {
        PatchKind::Merge => merge::merge_patch(&mut new, patch),
        PatchKind::Json => jsonpatch::json_patch(&mut new, patch).map_err(|e| {
            ApiError::new(
                422,
                "Invalid",
                format!("the JSON patch could not be applied: {e}"),
            )
        })?,
        PatchKind::Strategic => {
            if def.custom {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                ));
            }
            strategic::strategic_merge(&mut new, patch, &shape);
        }
        PatchKind::Apply => {}
    }
    crate::builtin::check_decodable(def, &new).map_err(|e| undecodable_patch(&new, &e))?;
    if let Some(rv) = patch["metadata"]["resourceVersion"].as_str()
        && rv
            != old["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
    {
        return Err(stale(def, name));
    }
    if name_of(&new) != name {
        return Err(ApiError::bad_request(
            "the name of the object cannot be changed",
        ));
    }
    if let Some(sent) = other_uid(&new, &old) {
        return Err(uid_immutable(def, name, sent));
    }
    commit(
        &mut txn,
        &Ctx {
            state,
            def,
            sub,
            dry_run: opts.dry_run,
        },
        Some(&old),
        new,
        Fields::Update(opts.manager()),
    )
    .map(|object| Patched {
        object,
        created: false,
    })
}

/// 422 for a patch whose result the server cannot decode (a string for `metadata`, a number
/// for a label), as the real server answers it: the patched object quoted against the field
/// `patch`, with the decoder's complaint.
fn undecodable_patch(patched: &Value, e: &ApiError) -> ApiError {
    let why = e
        .message
        .find("json: ")
        .map_or(e.message.as_str(), |i| &e.message[i..]);
    let cause = crate::error::Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {:?}: {why}", patched.to_string()),
        field: "patch".to_owned(),
    };
    ApiError::invalid("", "", "", &[cause])
}

/// The UID `body` names when it is not `old`'s: the write was meant for an object that is
/// gone (deleted, perhaps recreated by someone else), and the server refuses it rather than
/// retargeting it.
fn other_uid<'a>(body: &'a Value, old: &Value) -> Option<&'a str> {
    body["metadata"]["uid"]
        .as_str()
        .filter(|u| !u.is_empty() && Some(*u) != old["metadata"]["uid"].as_str())
}

/// 422 for a patch or apply that changes `metadata.uid`, as the real server answers it.
fn uid_immutable(def: &ResourceDef, name: &str, sent: &str) -> ApiError {
    let cause = crate::error::Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {sent:?}: field is immutable"),
        field: "metadata.uid".to_owned(),
    };
    ApiError::invalid(&def.group, &def.kind, name, &[cause])
}

/// 409 for a write based on an outdated resourceVersion.
fn stale(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::conflict(
        &def.group,
        &def.plural,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

fn conflict_error(def: &ResourceDef, name: &str, conflicts: &[(String, String)]) -> ApiError {
    let n = conflicts.len();
    let lines: Vec<String> = conflicts
        .iter()
        .map(|(f, m)| format!("conflict with \"{m}\": {f}"))
        .collect();
    let mut e = ApiError::new(
        409,
        "Conflict",
        format!(
            "Apply failed with {n} conflict{}: {}",
            if n == 1 { "" } else { "s" },
            lines.join("\n")
        ),
    );
    e.details = Some(json!({
        "name": name,
        "group": def.group,
        "kind": def.plural,
        "causes": conflicts.iter().map(|(f, m)| json!({
            "reason": "FieldManagerConflict",
            "message": format!("conflict with \"{m}\""),
            "field": f,
        })).collect::<Vec<_>>(),
    }));
    e
}
