//! Image pull secrets: read the Secrets a model or model source names, for registry access.
//!
//! Contract: a missing Secret is a MissingUpstream error with reason `SecretNotFound`; any other
//! read failure keeps the API error's category with reason `SecretAccessFailed` (NOTES row 2).
//! Reads only.

use k8s_openapi::api::core::v1::{LocalObjectReference, Secret};
use kinfer_oci::PullSecret;
use kinfer_state::{CategorizedError, Direction, ErrorCategory, Reason, categorize_kube_error};
use kube::{Api, Client};

/// Reads every named Secret in `namespace`.
pub async fn fetch(
    client: &Client,
    namespace: &str,
    refs: &[LocalObjectReference],
) -> Result<Vec<PullSecret>, CategorizedError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut out = Vec::new();
    for r in refs.iter().filter(|r| !r.name.is_empty()) {
        match api.get_opt(&r.name).await {
            Ok(Some(secret)) => out.push(pull_secret(&secret, &r.name)),
            Ok(None) => {
                return Err(CategorizedError::new(
                    ErrorCategory::MissingUpstreamDependency,
                    format!("image pull secret {namespace}/{} not found", r.name),
                )
                .with_reason(Reason::custom("SecretNotFound")));
            }
            Err(e) => {
                return Err(CategorizedError::new(
                    categorize_kube_error(&e, Direction::Upstream),
                    format!("read image pull secret {namespace}/{}: {e}", r.name),
                )
                .with_reason(Reason::custom("SecretAccessFailed")));
            }
        }
    }
    Ok(out)
}

fn pull_secret(secret: &Secret, name: &str) -> PullSecret {
    let data = secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect();
    PullSecret::new(name, secret.type_.clone().unwrap_or_default(), data)
}
