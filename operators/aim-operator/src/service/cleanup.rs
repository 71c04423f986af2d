//! The service's finalizer step (NOTES row 23): delete the non-Ready template caches this
//! service created.
//!
//! Contract: only caches labelled `aim.eai.amd.com/service=<service>` in the service's
//! namespace whose `status.status` is not Ready are deleted (a Ready shared cache is kept for
//! the other services of its template; dedicated caches go with the service by owner
//! reference anyway). A cache already gone is fine. Errors are categorised: a Forbidden read
//! or delete is Auth, on which the engine releases the finalizer anyway; the engine never
//! calls this in a terminating namespace.

use kinfer_api::aim::AIMTemplateCache;
use kinfer_api::phase::Phase;
use kinfer_state::{CategorizeIn, CategorizedError, Direction};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client, ResourceExt};

use super::cache::SERVICE_LABEL;
use crate::scheme;

/// Deletes the service's non-Ready caches; see the module contract.
pub async fn remove_unready_caches(
    client: &Client,
    service: &kinfer_api::aim::AIMService,
) -> Result<(), CategorizedError> {
    let ns = service.namespace().unwrap_or_default();
    let api: Api<AIMTemplateCache> = Api::namespaced(client.clone(), &ns);
    let selector = format!(
        "{SERVICE_LABEL}={}",
        scheme::label_value(&service.name_any())
    );
    let caches = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| e.categorize_in(Direction::Downstream))?;
    for c in caches.items {
        let ready = c.status.as_ref().is_some_and(|s| s.status == Phase::Ready);
        if ready || c.metadata.deletion_timestamp.is_some() {
            continue;
        }
        tracing::info!(cache = %c.name_any(), "deleting the service's non-Ready template cache");
        match api.delete(&c.name_any(), &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.categorize_in(Direction::Downstream)),
        }
    }
    Ok(())
}
