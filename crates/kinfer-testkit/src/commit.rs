//! The final commit shared by every write: enforces the rules of the real server.
//!
//! Contract: status subresource separation (main endpoint keeps the old status,
//! `/status` keeps everything else), immutable metadata carried over, `generation` bumped when
//! anything outside metadata and status changes, CRD schemas applied (prune, default,
//! validate), managedFields maintained, no-op writes skipped (no new resourceVersion, no
//! event), and an object whose deletion is pending is removed once its finalizers are gone.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::patch::apply::{Managers, Part, Writer};
use crate::patch::shape::Shape;
use crate::resources::ResourceDef;
use crate::schema;
use crate::state::{State, name_of, now};
use crate::store::{ObjKey, Txn};

/// The list-merge shape of a resource.
pub fn shape_of(def: &ResourceDef) -> Shape {
    match &def.schema {
        Some(s) if def.custom => Shape::Schema(Arc::clone(s)),
        _ => Shape::Core,
    }
}

pub(crate) fn part_of(def: &ResourceDef, sub: Option<&str>) -> Part {
    match sub {
        Some("status") => Part::Status,
        Some(crate::scale::SCALE) => Part::Scale,
        _ if def.status_subresource => Part::Main,
        _ => Part::Whole,
    }
}

/// The store key of an object of `def` (the namespace is dropped for cluster scope).
pub fn key(def: &ResourceDef, ns: &str, name: &str) -> ObjKey {
    (
        if def.namespaced {
            ns.to_owned()
        } else {
            String::new()
        },
        name.to_owned(),
    )
}

/// What `metadata.generation` follows: everything but metadata, and but status when status is
/// a subresource (a custom resource without one bumps its generation on status changes too).
fn spec_of(def: &ResourceDef, v: &Value) -> Value {
    let mut c = v.clone();
    if let Some(m) = c.as_object_mut() {
        m.remove("metadata");
        if def.status_subresource || !def.custom {
            m.remove("status");
        }
        m.remove("apiVersion");
        m.remove("kind");
    }
    c
}

fn comparable(v: &Value) -> Value {
    let mut c = v.clone();
    if let Some(m) = c["metadata"].as_object_mut() {
        m.remove("managedFields");
        m.remove("resourceVersion");
    }
    if let Some(m) = c.as_object_mut() {
        m.remove("apiVersion");
    }
    c
}

/// How managed fields are recorded by [`commit`].
#[derive(Debug)]
pub enum Fields {
    /// A non-apply write by this manager.
    Update(String),
    /// Already computed (apply).
    Computed(Managers),
    /// Internal write (garbage collector): keep as is.
    Keep,
}

/// Where and how a write happens.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The server.
    pub state: &'a State,
    /// The resource written.
    pub def: &'a ResourceDef,
    /// The subresource (`status`), if any.
    pub sub: Option<&'a str>,
    /// `dryRun=All`: everything but storing.
    pub dry_run: bool,
}

/// Store `new` over `old` (None = create) after enforcing the server's rules. Returns the
/// stored object (the old one for a no-op, the last state for a removal).
pub fn commit(
    txn: &mut Txn<'_>,
    ctx: &Ctx<'_>,
    old: Option<&Value>,
    mut new: Value,
    fields: Fields,
) -> Result<Value, ApiError> {
    let Ctx {
        state,
        def,
        sub,
        dry_run,
    } = *ctx;
    let part = part_of(def, sub);
    let name = name_of(&new).to_owned();
    if old.is_none() && sub.is_some() {
        // A subresource write never creates its object.
        return Err(ApiError::not_found(&def.group, &def.plural, &name));
    }
    crate::builtin::check_decodable(def, &new)?;
    new["apiVersion"] = json!(def.api_version());
    new["kind"] = json!(def.kind);
    if !new["metadata"].is_object() {
        new["metadata"] = json!({});
    }
    match (old, part) {
        (Some(o), Part::Status) => {
            let status = new.get("status").cloned();
            new = o.clone();
            match status {
                Some(s) => new["status"] = s,
                None => {
                    if let Some(m) = new.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
        }
        (Some(o), Part::Main) => match o.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        },
        (None, Part::Main | Part::Status) => {
            if let Some(m) = new.as_object_mut() {
                m.remove("status");
            }
        }
        _ => {}
    }
    let meta_now = now();
    if let Some(o) = old {
        {
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "name",
                "namespace",
            ] {
                match o["metadata"].get(k) {
                    Some(v) => new["metadata"][k] = v.clone(),
                    None => {
                        if let Some(m) = new["metadata"].as_object_mut() {
                            m.remove(k);
                        }
                    }
                }
            }
            // A pending deletion cannot gain finalizers.
            if o["metadata"].get("deletionTimestamp").is_some() {
                let old_f = o["metadata"]["finalizers"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if let Some(f) = new["metadata"]["finalizers"].as_array_mut() {
                    f.retain(|x| old_f.contains(x));
                }
            }
        }
    } else {
        {
            let identity = format!(
                "{}/{}/{}/{name}",
                def.group,
                def.plural,
                new["metadata"]["namespace"].as_str().unwrap_or_default()
            );
            new["metadata"]["uid"] = json!(state.new_uid(&identity));
            new["metadata"]["creationTimestamp"] = json!(meta_now);
            for k in [
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "managedFields",
            ] {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(k);
                }
            }
            if def.generation {
                new["metadata"]["generation"] = json!(1);
            }
        }
    }
    let mut causes = crate::names::label_causes(&new);
    if old.is_none() {
        causes.splice(0..0, crate::names::name_causes(def, &name));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&def.group, &def.kind, &name, &causes));
    }
    if let Some(schema) = def.schema.as_deref() {
        schema::admit(schema, &mut new, old, &def.group, &def.kind, &name)?;
    }
    crate::builtin::admit(def, &mut new, old)?;
    if let Some(o) = old
        && def.generation
        && spec_of(def, o) != spec_of(def, &new)
    {
        let g = o["metadata"]["generation"].as_i64().unwrap_or(0);
        new["metadata"]["generation"] = json!(g + 1);
    }
    let api_version = def.api_version();
    let shape = shape_of(def);
    let managers = match fields {
        Fields::Computed(m) => m,
        Fields::Update(manager) => {
            let mut m = old.map(Managers::from_object).unwrap_or_default();
            let w = Writer {
                manager: &manager,
                part,
                api_version: &api_version,
                now: &meta_now,
                shape: &shape,
            };
            m.record_update(old, &new, &w);
            m
        }
        Fields::Keep => old.map(Managers::from_object).unwrap_or_default(),
    };
    managers.write(&mut new);
    let k = key(
        def,
        new["metadata"]["namespace"].as_str().unwrap_or_default(),
        &name,
    );
    if let Some(o) = old {
        if comparable(o) == comparable(&new) && Managers::from_object(o).same_sets(&managers) {
            return Ok(o.clone());
        }
        let deleting = new["metadata"].get("deletionTimestamp").is_some();
        let no_finalizers = new["metadata"]["finalizers"]
            .as_array()
            .is_none_or(Vec::is_empty);
        if deleting && no_finalizers && def.plural != "namespaces" {
            if dry_run {
                return Ok(new);
            }
            let Some(gone) = txn.remove(&def.bucket(), &k) else {
                return Ok(new);
            };
            on_removed(state, def, &gone);
            return Ok(Arc::unwrap_or_clone(gone));
        }
    }
    if dry_run {
        return Ok(new);
    }
    let stored = txn.put(&def.bucket(), k, new);
    state.counters.record_mutation(&def.plural);
    if def.plural == "customresourcedefinitions" {
        state.registry_mut().install_crd(&stored);
    }
    Ok(Arc::unwrap_or_clone(stored))
}

/// Bookkeeping after an object left the store.
pub fn on_removed(state: &State, def: &ResourceDef, gone: &Value) {
    state.counters.record_mutation(&def.plural);
    if def.plural == "customresourcedefinitions" {
        state.registry_mut().remove_crd(gone);
    }
}
