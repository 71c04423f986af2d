//! Repository listing: a registry's `/v2/_catalog`, or Docker Hub's namespace repositories API.
//!
//! Contract:
//! - A registry other than Docker Hub is listed with `GET /v2/_catalog?n=<page>`, following
//!   `Link: <…>; rel="next"` on the same scheme, host and port (like tag lists, [`crate::tags`]).
//! - Auth, as for inspection: the first request goes out anonymously (with a bearer token when
//!   one is given); a `401` with a `WWW-Authenticate: Bearer realm=…,service=…` challenge is
//!   answered by fetching a token for scope `registry:catalog:*` from the realm (with the basic
//!   credentials, when any), any other `401` by HTTP basic credentials, and the request is
//!   retried once; the answer is then kept for the following pages. The password therefore
//!   only goes to a token realm or to a registry that asks for basic auth. A refused token
//!   request or a second refusal is [`OciError::Unauthorized`] (Auth).
//! - Docker Hub has no catalog: its repositories are listed per namespace with
//!   `GET <hub API>/v2/namespaces/<namespace>/repositories?page_size=<page>`, following the JSON
//!   `next` URL on the same host, anonymously (public repositories). The namespace is the first
//!   segment of the requested prefix (`amdenterpriseai/aim-*` → `amdenterpriseai`); without one
//!   the listing is refused as InvalidSpec. Names come back as `<namespace>/<name>`.
//! - Bounded like tag lists: each page at most [`crate::tags::MAX_PAGE_BYTES`], at most
//!   `max_pages` pages and `max_tags` names (Infrastructure when exceeded), a page seen twice
//!   ends the walk. Names are returned in the registry's order, duplicates removed.

use std::collections::HashSet;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Deserialize;

use crate::auth::Credentials;
use crate::client::Transport;
use crate::error::OciError;
use crate::reference::{DOCKER_HUB, ImageReference};
use crate::registry::{self, Auth, bearer_challenge, token};
use crate::tags::{Paging, next_link, read_page};

/// Docker Hub's web API, which lists a namespace's repositories.
pub const DOCKER_HUB_API: &str = "https://hub.docker.com";

/// Where [`list_repositories`] reads from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    /// The registry as written in references (`docker.io`, `ghcr.io`, `127.0.0.1:5000`).
    pub registry: &'a str,
    /// The repository prefix asked for (`amdenterpriseai/aim-`); Docker Hub needs its namespace.
    pub prefix: &'a str,
    /// Docker Hub's API base URL.
    pub hub_api: &'a str,
}

#[derive(Deserialize)]
struct CatalogPage {
    #[serde(default)]
    repositories: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct HubPage {
    #[serde(default)]
    next: Option<String>,
    #[serde(default)]
    results: Vec<HubRepository>,
}

#[derive(Deserialize)]
struct HubRepository {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
}

/// Every repository of `target` (see the module contract).
pub(crate) async fn list_repositories(
    http: &reqwest::Client,
    transport: &Transport,
    target: Target<'_>,
    credentials: &Credentials,
    paging: Paging,
) -> Result<Vec<String>, OciError> {
    let probe = ImageReference::parse(&format!("{}/catalog", target.registry)).map_err(|e| {
        OciError::InvalidReference {
            reference: target.registry.to_owned(),
            source: e,
        }
    })?;
    if probe.registry() == DOCKER_HUB {
        return hub(http, target, paging).await;
    }
    let host = probe.api_host();
    let shown = format!("{}/_catalog", target.registry);
    let first = format!(
        "{}://{host}/v2/_catalog?n={}",
        transport.scheme(host),
        paging.page_size.max(1)
    );
    let mut authorization = match credentials {
        Credentials::Bearer(t) => Auth::Bearer(t.clone()),
        Credentials::Basic { .. } | Credentials::Anonymous => Auth::None,
    };
    let mut url = reqwest::Url::parse(&first).map_err(|e| OciError::Registry {
        reference: shown.clone(),
        status: None,
        message: format!("cannot build catalog URL: {e}"),
    })?;
    let mut names = Vec::new();
    let mut seen = HashSet::new();
    for _ in 0..paging.max_pages {
        if !seen.insert(url.to_string()) {
            tracing::warn!(listing = %shown, %url, "registry pagination repeats a page; stopping");
            return dedup_bounded(names, paging.max_tags, &shown);
        }
        let (mut status, mut headers, mut body) = get(http, &url, &authorization).await?;
        if status == StatusCode::UNAUTHORIZED && matches!(authorization, Auth::None) {
            let answer = match (bearer_challenge(&headers), credentials) {
                (Some(challenge), _) => {
                    let target = registry::Target {
                        scheme: transport.scheme(host),
                        host,
                        scope: "registry:catalog:*",
                        shown: &shown,
                    };
                    Some(token(http, &challenge, target, credentials).await?.0)
                }
                (None, Credentials::Basic { username, password }) => {
                    Some(Auth::Basic(username.clone(), password.clone()))
                }
                (None, _) => None,
            };
            if let Some(answer) = answer {
                authorization = answer;
                (status, headers, body) = get(http, &url, &authorization).await?;
            }
        }
        let page: CatalogPage = decode(status, &body, &shown, "catalog page")?;
        names.extend(page.repositories.unwrap_or_default());
        if names.len() > paging.max_tags.saturating_mul(2) {
            return dedup_bounded(names, paging.max_tags, &shown);
        }
        match next_link(&headers, &url) {
            Some(next) if same_origin(&next, &url) => url = next,
            Some(next) => {
                return Err(OciError::Registry {
                    reference: shown,
                    status: None,
                    message: format!("pagination link leaves the registry: {next}"),
                });
            }
            None => return dedup_bounded(names, paging.max_tags, &shown),
        }
    }
    Err(OciError::Registry {
        reference: shown,
        status: None,
        message: format!("listing has more than {} pages", paging.max_pages),
    })
}

async fn get(
    http: &reqwest::Client,
    url: &reqwest::Url,
    auth: &Auth,
) -> Result<(StatusCode, HeaderMap, Vec<u8>), OciError> {
    let response = registry::send(http.get(url.clone()), auth, url.as_str()).await?;
    read_page(response, url.as_str()).await
}

/// A listing page's JSON: any status but 200 is classified by [`OciError::from_status`], a
/// body that does not parse is Infrastructure (the registry misbehaves).
fn decode<T: serde::de::DeserializeOwned>(
    status: StatusCode,
    body: &[u8],
    shown: &str,
    what: &str,
) -> Result<T, OciError> {
    if status != StatusCode::OK {
        return Err(OciError::from_status(
            shown,
            status.as_u16(),
            &String::from_utf8_lossy(body),
        ));
    }
    serde_json::from_slice(body).map_err(|e| OciError::Registry {
        reference: shown.to_owned(),
        status: Some(status.as_u16()),
        message: format!("{what} is not JSON: {e}"),
    })
}

fn same_origin(a: &reqwest::Url, b: &reqwest::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

fn dedup_bounded(names: Vec<String>, max: usize, shown: &str) -> Result<Vec<String>, OciError> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for name in names {
        if seen.insert(name.clone()) {
            if out.len() == max {
                return Err(OciError::Registry {
                    reference: shown.to_owned(),
                    status: None,
                    message: format!("registry lists more than {max} repositories"),
                });
            }
            out.push(name);
        }
    }
    Ok(out)
}

/// Docker Hub: the repositories of the prefix's namespace.
async fn hub(
    http: &reqwest::Client,
    target: Target<'_>,
    paging: Paging,
) -> Result<Vec<String>, OciError> {
    let namespace = target
        .prefix
        .split_once('/')
        .map(|(ns, _)| ns)
        .filter(|ns| !ns.is_empty() && !ns.contains('*'))
        .ok_or_else(|| OciError::UnsupportedImage {
            reference: format!("docker.io/{}", target.prefix),
            reason: "Docker Hub lists repositories per namespace: the pattern must start with \
                     one (e.g. amdenterpriseai/aim-*)"
                .to_owned(),
        })?;
    let shown = format!("docker.io/{namespace}");
    let base = target.hub_api.trim_end_matches('/');
    let mut url = reqwest::Url::parse(&format!(
        "{base}/v2/namespaces/{namespace}/repositories?page_size={}",
        paging.page_size.clamp(1, 100)
    ))
    .map_err(|e| OciError::Registry {
        reference: shown.clone(),
        status: None,
        message: format!("cannot build Docker Hub URL: {e}"),
    })?;
    let mut names = Vec::new();
    let mut seen = HashSet::new();
    for _ in 0..paging.max_pages {
        if !seen.insert(url.to_string()) {
            return dedup_bounded(names, paging.max_tags, &shown);
        }
        let (status, _, body) = get(http, &url, &Auth::None).await?;
        let page: HubPage = decode(status, &body, &shown, "Docker Hub page")?;
        names.extend(
            page.results
                .into_iter()
                .map(|r| format!("{}/{}", r.namespace.as_deref().unwrap_or(namespace), r.name)),
        );
        if names.len() > paging.max_tags.saturating_mul(2) {
            return dedup_bounded(names, paging.max_tags, &shown);
        }
        let Some(next) = page.next.filter(|n| !n.is_empty()) else {
            return dedup_bounded(names, paging.max_tags, &shown);
        };
        let next = url.join(&next).map_err(|e| OciError::Registry {
            reference: shown.clone(),
            status: None,
            message: format!("Docker Hub next page {next:?}: {e}"),
        })?;
        if !same_origin(&next, &url) {
            return Err(OciError::Registry {
                reference: shown,
                status: None,
                message: format!("pagination link leaves Docker Hub: {next}"),
            });
        }
        url = next;
    }
    Err(OciError::Registry {
        reference: shown,
        status: None,
        message: format!("listing has more than {} pages", paging.max_pages),
    })
}

#[cfg(test)]
#[path = "unit_tests/catalog.rs"]
mod tests;
