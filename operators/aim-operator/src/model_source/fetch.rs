//! Model source fetch: list the registry.
//!
//! Contract: reads only. Pull secrets come from the operator namespace. A repository pattern
//! with `*` is expanded through the registry's `/v2/_catalog`, 1000 per page following `Link`
//! headers on the same host (a local adapter: kinfer-oci
//! lists tags but not repositories; Docker Hub's and GHCR's own listing APIs are not
//! implemented); other repositories are listed directly. Tags come from
//! [`kinfer_oci::Inspector::list_tags_with_secrets`]. The first error stops the sync and is
//! returned categorised.

use std::collections::BTreeSet;

use kinfer_api::aim::AIMClusterModelSourceSpec;
use kinfer_oci::{Credentials, ImageReference, OciError};
use kinfer_state::{CategorizedError, ErrorCategory, Reason};
use kube::Client;

use super::filter::{constraints, parse_pattern, select_tags, wildcard};
use crate::context::Context;
use crate::model::fetch::oci_error;

/// One image the registry has: (registry, repository, tag).
pub type Image = (String, String, String);

/// Repositories asked for per `/v2/_catalog` page (the distribution server rejects pages
/// larger than its limit, 1000 by default, with HTTP 400).
const CATALOG_PAGE: usize = 1000;
/// Pages followed before giving up.
const MAX_CATALOG_PAGES: usize = 100;

fn invalid(message: String) -> CategorizedError {
    CategorizedError::new(ErrorCategory::InvalidSpec, message)
        .with_reason(Reason::custom("InvalidFilter"))
}

async fn catalog(
    ctx: &Context,
    registry: &str,
    credentials: &Credentials,
) -> Result<Vec<String>, CategorizedError> {
    let reference = ImageReference::parse(&format!("{registry}/catalog"))
        .map_err(|e| invalid(format!("registry {registry}: {e}")))?;
    let host = reference.api_host().to_owned();
    let scheme = if ctx
        .settings
        .inspector
        .insecure_registries
        .iter()
        .any(|h| h == &host)
    {
        "http"
    } else {
        "https"
    };
    let infra = |m: String| {
        CategorizedError::new(ErrorCategory::Infrastructure, m)
            .with_reason(Reason::custom("RegistryUnavailable"))
    };
    let http = reqwest::Client::builder()
        .timeout(ctx.settings.inspector.timeout)
        .build()
        .map_err(|e| infra(format!("http client: {e}")))?;
    let mut url = reqwest::Url::parse(&format!("{scheme}://{host}/v2/_catalog?n={CATALOG_PAGE}"))
        .map_err(|e| invalid(format!("registry {registry}: {e}")))?;
    let mut repositories = Vec::new();
    for _ in 0..MAX_CATALOG_PAGES {
        let mut req = http.get(url.clone());
        if let Credentials::Basic { username, password } = credentials {
            req = req.basic_auth(username, Some(password));
        }
        let resp = req
            .send()
            .await
            .map_err(|e| infra(format!("list repositories of {registry}: {e}")))?;
        let status = resp.status().as_u16();
        if matches!(status, 401 | 403) {
            return Err(CategorizedError::new(
                ErrorCategory::Auth,
                format!("registry {registry} refused to list repositories (HTTP {status})"),
            )
            .with_reason(Reason::custom("ImageAuthFailure")));
        }
        if status != 200 {
            return Err(infra(format!(
                "list repositories of {registry}: HTTP {status}"
            )));
        }
        let next = next_page(resp.headers(), &url);
        let body: serde_json::Value = resp
            .json()
            .await
            .map_err(|e| infra(format!("list repositories of {registry}: {e}")))?;
        repositories.extend(
            body["repositories"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r.as_str().map(str::to_owned)),
        );
        match next {
            Some(n) => url = n,
            None => return Ok(repositories),
        }
    }
    Err(infra(format!(
        "list repositories of {registry}: more than {MAX_CATALOG_PAGES} pages"
    )))
}

/// The `rel="next"` target of a `Link` header, resolved against `base`; links to another
/// scheme, host or port are ignored so credentials never leave the registry.
fn next_page(headers: &reqwest::header::HeaderMap, base: &reqwest::Url) -> Option<reqwest::Url> {
    headers
        .get_all(reqwest::header::LINK)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter(|part| {
            part.split(';')
                .skip(1)
                .filter_map(|p| p.split_once('='))
                .any(|(k, v)| k.trim() == "rel" && v.trim().trim_matches('"') == "next")
        })
        .find_map(|part| {
            let target = part.split(';').next()?.trim();
            let target = target.strip_prefix('<')?.strip_suffix('>')?;
            base.join(target).ok()
        })
        .filter(|u| {
            u.scheme() == base.scheme()
                && u.host_str() == base.host_str()
                && u.port_or_known_default() == base.port_or_known_default()
        })
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
        let repos = if p.repository.contains('*') {
            let probe = ImageReference::parse(&format!("{}/probe", p.registry))
                .map_err(|e| invalid(format!("filter {}: {e}", f.image)))?;
            let creds = kinfer_oci::credentials_for(&probe, &secrets).map_err(|e| oci_error(&e))?;
            catalog(ctx, &p.registry, &creds)
                .await?
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
