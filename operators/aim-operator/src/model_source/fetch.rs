//! Model source fetch: list the registry.
//!
//! Contract: reads only. Pull secrets come from the operator namespace. A repository pattern
//! with `*` is expanded through [`kinfer_oci::Inspector::list_repositories_with_secrets`] (the
//! registry's `/v2/_catalog`, or Docker Hub's namespace API for `docker.io` patterns such as
//! `amdenterpriseai/aim-*`); other repositories are listed directly. Tags come from
//! [`kinfer_oci::Inspector::list_tags_with_secrets`]. The first error stops the sync and is
//! returned categorised.

use std::collections::BTreeSet;

use kinfer_api::aim::AIMClusterModelSourceSpec;
use kinfer_oci::{ImageReference, OciError};
use kinfer_state::{CategorizedError, ErrorCategory, Reason};
use kube::Client;

use super::filter::{constraints, parse_pattern, select_tags, wildcard};
use crate::context::Context;
use crate::model::fetch::oci_error;

/// One image the registry has: (registry, repository, tag).
pub type Image = (String, String, String);

fn invalid(message: String) -> CategorizedError {
    CategorizedError::new(ErrorCategory::InvalidSpec, message)
        .with_reason(Reason::custom("InvalidFilter"))
}

/// Lists every image matching the source's filters; see the module contract.
pub async fn list(
    ctx: &Context,
    client: &Client,
    spec: &AIMClusterModelSourceSpec,
) -> Result<BTreeSet<Image>, CategorizedError> {
    let secrets = crate::secrets::fetch(
        client,
        &ctx.settings.system_namespace,
        &spec.image_pull_secrets,
    )
    .await?;
    let mut images = BTreeSet::new();
    for f in &spec.filters {
        let p = parse_pattern(&f.image, &spec.registry);
        let reqs = constraints(if f.versions.is_empty() {
            &spec.versions
        } else {
            &f.versions
        })
        .map_err(|e| invalid(e.to_string()))?;
        let repos = if let Some((prefix, _)) = p.repository.split_once('*') {
            ctx.inspector
                .list_repositories_with_secrets(&p.registry, prefix, &secrets)
                .await
                .map_err(|e| oci_error(&e))?
                .into_iter()
                .filter(|r| wildcard(&p.repository, r))
                .collect()
        } else {
            vec![p.repository.clone()]
        };
        for repo in repos {
            if f.exclude.iter().any(|x| wildcard(x, &repo)) {
                continue;
            }
            let reference = ImageReference::parse(&format!("{}/{repo}", p.registry))
                .map_err(|e| invalid(format!("filter {}: {e}", f.image)))?;
            let tags = ctx
                .inspector
                .list_tags_with_secrets(&reference, &secrets)
                .await
                .map_err(|e: OciError| oci_error(&e))?;
            for tag in select_tags(&tags, p.tag.as_deref(), &reqs) {
                images.insert((p.registry.clone(), repo.clone(), tag));
            }
        }
    }
    Ok(images)
}
