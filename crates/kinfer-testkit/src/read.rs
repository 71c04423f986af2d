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
    let k = (
        if def.namespaced {
            ns.to_owned()
        } else {
            String::new()
        },
        name.to_owned(),
    );
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
pub fn list(
    state: &State,
    def: &ResourceDef,
    ns: Option<&str>,
    opts: &ListOpts,
) -> Result<Value, ApiError> {
    let txn = state.store.txn();
    let rv = txn.current_rv();
    let after = match &opts.continue_token {
        Some(t) if !t.is_empty() => {
            let mut parts = t.splitn(3, '|');
            let trv: u64 = parts
                .next()
                .and_then(|x| x.parse().ok())
                .ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
            if trv < txn.compacted() {
                return Err(ApiError::gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                ));
            }
            Some((
                parts.next().unwrap_or_default().to_owned(),
                parts.next().unwrap_or_default().to_owned(),
            ))
        }
        _ => None,
    };
    let mut items = Vec::new();
    let mut next = None;
    let mut remaining = 0usize;
    for o in txn.list(&def.bucket(), ns.filter(|_| def.namespaced)) {
        let key = (namespace_of(o).to_owned(), name_of(o).to_owned());
        if after.as_ref().is_some_and(|a| key <= *a) {
            continue;
        }
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
