//! Finalizer steps (NOTES row 23): delete the non-Ready objects a parent created.
//!
//! Contract: [`delete_unready`] deletes the objects of `api` matching `selector` whose
//! `status.status` is not Ready, that are not already being deleted and that `keep` does not
//! keep (objects something else still uses); one already gone is fine. Every delete carries
//! the UID that was read as a precondition ([`delete_one`]), so an object deleted and created
//! again under the same name in between is left alone. Errors are categorised: a Forbidden read
//! or delete is Auth, on which the engine keeps the finalizer and retries (`CleanupForbidden`;
//! the engine never calls a finalizer in a terminating namespace).
//!
//! [`remove_unready_caches`]: a deleted service removes the non-Ready AIMTemplateCaches it
//! alone uses. Its candidates are the caches labelled `aim.eai.amd.com/service=<service>` and
//! the cache its status names (`status.cache.templateCacheRef`: a shared cache carries the
//! label of the service that created it, so a later user finds it there). A candidate is kept
//! when another live service of the namespace names it in its status, or carries the same
//! label value (values are cut at 63 characters, so two long names can share one and the
//! label alone cannot tell whose the cache is). A Ready shared cache is kept for the other
//! services of its template, and dedicated caches go with the service by owner reference
//! anyway.

use std::fmt::Debug;

use kinfer_api::aim::{AIMService, AIMTemplateCache};
use kinfer_api::phase::Phase;
use kinfer_state::{CategorizeIn, CategorizedError, Direction};
use kube::api::ListParams;
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cache::SERVICE_LABEL;
use crate::scheme;

/// Whether `o` is neither Ready (`status.status`) nor already being deleted: what a
/// finalizer may delete.
pub fn unready<K: Resource + Serialize>(o: &K) -> bool {
    let phase = serde_json::to_value(o)
        .ok()
        .and_then(|v| serde_json::from_value::<Phase>(v["status"]["status"].clone()).ok());
    phase != Some(Phase::Ready) && o.meta().deletion_timestamp.is_none()
}

/// Deletes the non-Ready objects of `api` matching `selector`; see the module contract.
pub async fn delete_unready<K>(
    api: &Api<K>,
    selector: &str,
    keep: impl Fn(&K) -> bool,
) -> Result<(), CategorizedError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let list = api
        .list(&ListParams::default().labels(selector))
        .await
        .map_err(|e| e.categorize_in(Direction::Downstream))?;
    for o in list.items {
        if !unready(&o) || keep(&o) {
            continue;
        }
        delete_one(api, &o).await?;
    }
    Ok(())
}

/// Deletes `o` while it is still the object read (its UID as precondition; one already gone,
/// or replaced, is fine): the deletion step of [`delete_unready`], for a caller that decided on
/// an object outside its selector.
pub async fn delete_one<K>(api: &Api<K>, o: &K) -> Result<(), CategorizedError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    tracing::info!(object = %o.name_any(), "deleting a non-Ready object on finalization");
    kinfer_state::apply::delete_exact(api, &o.name_any(), o.meta().uid.as_deref())
        .await
        .map(drop)
        .map_err(|e| e.categorize_in(Direction::Downstream))
}

/// The cache `service`'s status names, if any.
pub fn cache_in_use(service: &AIMService) -> Option<&str> {
    service
        .status
        .as_ref()?
        .cache
        .as_ref()?
        .template_cache_ref
        .as_ref()?
        .name
        .as_deref()
}

/// Deletes the non-Ready caches `service` alone uses; see the module contract.
pub async fn remove_unready_caches(
    client: &Client,
    service: &AIMService,
) -> Result<(), CategorizedError> {
    let ns = service.namespace().unwrap_or_default();
    let read = |e: kube::Error| e.categorize_in(Direction::Downstream);
    let api: Api<AIMTemplateCache> = Api::namespaced(client.clone(), &ns);
    let label = scheme::label_value(&service.name_any());
    let mut candidates = api
        .list(&ListParams::default().labels(&format!("{SERVICE_LABEL}={label}")))
        .await
        .map_err(read)?
        .items;
    if let Some(name) = cache_in_use(service)
        && !candidates.iter().any(|c| c.name_any() == name)
        && let Some(cache) = api.get_opt(name).await.map_err(read)?
    {
        candidates.push(cache);
    }
    candidates.retain(unready);
    if candidates.is_empty() {
        return Ok(());
    }
    let others: Vec<AIMService> = Api::<AIMService>::namespaced(client.clone(), &ns)
        .list(&ListParams::default())
        .await
        .map_err(read)?
        .items
        .into_iter()
        .filter(|s| s.uid() != service.uid() && s.metadata.deletion_timestamp.is_none())
        .collect();
    for cache in candidates {
        let used = others.iter().any(|s| {
            cache_in_use(s) == Some(cache.name_any().as_str())
                || scheme::label_value(&s.name_any()) == label
        });
        if !used {
            delete_one(&api, &cache).await?;
        }
    }
    Ok(())
}
