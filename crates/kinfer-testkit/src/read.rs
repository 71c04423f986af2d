//! GET and LIST: single objects, and lists with label/field selectors and `limit`/`continue`
//! pagination. Objects are presented in the requested version (`apiVersion` rewritten).

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::resources::ResourceDef;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::{State, name_of, namespace_of};

/// An object as served under `def`'s version.
pub fn present(def: &ResourceDef, mut v: Value) -> Value {
    v["apiVersion"] = json!(def.api_version());
    v["kind"] = json!(def.kind);
    v
}

/// GET one object.
pub fn get(state: &State, def: &ResourceDef, ns: &str, name: &str) -> Result<Value, ApiError> {
    let k = crate::commit::key(def, ns, name);
    let txn = state.store.txn();
    txn.get(&def.bucket(), &k)
        .cloned()
        .map(|v| present(def, v))
        .ok_or_else(|| ApiError::not_found(&def.group, &def.plural, name))
}

/// List parameters.
#[derive(Debug, Default)]
pub struct ListOpts {
    /// Parsed `labelSelector`.
    pub labels: LabelSelector,
    /// Parsed `fieldSelector`.
    pub fields: FieldSelector,
    /// `limit`.
    pub limit: Option<usize>,
    /// `continue`.
    pub continue_token: Option<String>,
}

/// LIST, optionally in one namespace.
///
/// A `continue` token is `<rv>|<namespace>|<name>`: the version of the first page (which every
/// later page reports, as the real server does, so a watch started from the last page misses
/// nothing) and the last key served. Later pages see current data (no snapshot).
pub fn list(
    state: &State,
    def: &ResourceDef,
    ns: Option<&str>,
    opts: &ListOpts,
) -> Result<Value, ApiError> {
    let txn = state.store.txn();
    let (rv, after) = match &opts.continue_token {
        Some(t) if !t.is_empty() => {
            let invalid = || ApiError::bad_request("invalid continue token");
            let mut parts = t.splitn(3, '|');
            let trv: u64 = parts
                .next()
                .and_then(|x| x.parse().ok())
                .filter(|v| *v <= txn.current_rv())
                .ok_or_else(invalid)?;
            if trv < txn.continue_floor() {
                return Err(ApiError::gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                ));
            }
            let ns = parts.next().ok_or_else(invalid)?.to_owned();
            let name = parts.next().ok_or_else(invalid)?.to_owned();
            (trv, Some((ns, name)))
        }
        _ => (txn.current_rv(), None),
    };
    let mut items = Vec::new();
    let mut next = None;
    let mut remaining = 0usize;
    let ns = ns.filter(|_| def.namespaced);
    for o in txn.range(&def.bucket(), ns, after.as_ref()) {
        if !opts.labels.matches(o) || !opts.fields.matches(o) {
            continue;
        }
        if next.is_some() {
            remaining += 1;
            continue;
        }
        if opts.limit.is_some_and(|l| l > 0 && items.len() >= l) {
            next = items
                .last()
                .map(|last: &Value| format!("{rv}|{}|{}", namespace_of(last), name_of(last)));
            remaining += 1;
            continue;
        }
        items.push(present(def, o.clone()));
    }
    drop(txn);
    let mut meta = json!({ "resourceVersion": rv.to_string() });
    if let Some(n) = next {
        meta["continue"] = json!(n);
        meta["remainingItemCount"] = json!(remaining);
    }
    Ok(json!({
        "kind": format!("{}List", def.kind),
        "apiVersion": def.api_version(),
        "metadata": meta,
        "items": items,
    }))
}
