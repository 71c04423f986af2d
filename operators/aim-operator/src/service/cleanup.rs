//! Finalizer steps (NOTES row 23): delete the non-Ready objects a parent created.
//!
//! Contract: [`delete_unready`] deletes the objects of `api` matching `selector` whose
//! `status.status` is not Ready, that are not already being deleted and that `keep` does not
//! keep (objects something else still uses); one already gone is fine. Errors are categorised: a Forbidden read or delete is Auth, on which the engine
//! releases the finalizer anyway (the engine never calls a finalizer in a terminating
//! namespace). The service deletes the caches labelled `aim.eai.amd.com/service=<service>`
//! ([`remove_unready_caches`]): a Ready shared cache is kept for the other services of its
//! template, and dedicated caches go with the service by owner reference anyway.

use std::fmt::Debug;

use kinfer_api::aim::AIMTemplateCache;
use kinfer_api::phase::Phase;
use kinfer_state::{CategorizeIn, CategorizedError, Direction};
use kube::api::{DeleteParams, ListParams};
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

/// Deletes `o` (one already gone is fine): the deletion step of [`delete_unready`], for a
/// caller that decided on an object outside its selector.
pub async fn delete_one<K>(api: &Api<K>, o: &K) -> Result<(), CategorizedError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    tracing::info!(object = %o.name_any(), "deleting a non-Ready object on finalization");
    match api.delete(&o.name_any(), &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.categorize_in(Direction::Downstream)),
    }
}

/// Deletes the service's non-Ready caches; see the module contract.
pub async fn remove_unready_caches(
    client: &Client,
    service: &kinfer_api::aim::AIMService,
) -> Result<(), CategorizedError> {
    let api: Api<AIMTemplateCache> =
        Api::namespaced(client.clone(), &service.namespace().unwrap_or_default());
    let selector = format!(
        "{SERVICE_LABEL}={}",
        scheme::label_value(&service.name_any())
    );
    delete_unready(&api, &selector, |_| false).await
}
