//! Paginated tag listing: `GET /v2/<name>/tags/list?n=<page>`, following `Link` headers.
//!
//! Contract:
//! - The first request asks for `n` tags; every further page is the `rel="next"` URL of the
//!   previous response's `Link` header (resolved against the request URL), as the distribution
//!   spec prescribes. A registry that ignores `n` and returns everything in one page works too.
//! - Links to another scheme, host or port are refused, so credentials never leave the
//!   registry; a page seen twice ends the walk; more than `max_pages` pages is an error.
//! - Bounded memory: a page body over [`MAX_PAGE_BYTES`] (4 MiB) is refused while it streams,
//!   and more than `max_tags` distinct tags is an error (both Infrastructure: the registry
//!   misbehaves), so a hostile registry cannot make the operator buffer without limit.
//! - Credentials: [`crate::registry::authorization`] for scope `repository:<name>:pull` (a
//!   bearer token when the registry asks for one, else HTTP basic credentials, else none).
//! - Tags are returned in the registry's order, duplicates removed.

use std::collections::HashSet;

use reqwest::header::{HeaderMap, LINK};
use serde::Deserialize;

use crate::auth::Credentials;
use crate::client::Transport;
use crate::error::OciError;
use crate::reference::ImageReference;
use crate::registry::{self, Tokens, read_limited};

/// Paging limits for [`list_tags`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paging {
    pub page_size: usize,
    pub max_pages: usize,
    pub max_tags: usize,
}

/// Bytes one tag list page may have; a page of 10 000 maximal (128-byte) tags is ~1.4 MB.
pub(crate) const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;

#[derive(Deserialize)]
struct TagPage {
    #[serde(default)]
    tags: Option<Vec<String>>,
}

/// Lists every tag of `repository` (its tag and digest are ignored).
pub(crate) async fn list_tags(
    (http, transport, tokens): (&reqwest::Client, &Transport, &Tokens),
    repository: &ImageReference,
    credentials: &Credentials,
    paging: Paging,
) -> Result<Vec<String>, OciError> {
    let shown = repository.name();
    let host = repository.api_host();
    let scope = format!("repository:{}:pull", repository.repository());
    let target = registry::Target {
        scheme: transport.scheme(host),
        host,
        scope: &scope,
        shown: &shown,
    };
    let authorization = registry::authorization(http, tokens, target, credentials).await?;
    let first = format!(
        "{}://{host}/v2/{}/tags/list?n={}",
        transport.scheme(host),
        repository.repository(),
        paging.page_size.max(1)
    );
    let mut url = reqwest::Url::parse(&first).map_err(|e| OciError::Registry {
        reference: shown.clone(),
        status: None,
        message: format!("cannot build tag list URL: {e}"),
    })?;
    let mut tags = Vec::new();
    let mut seen_tags = HashSet::new();
    let mut seen_pages = HashSet::new();
    for _ in 0..paging.max_pages {
        if !seen_pages.insert(url.to_string()) {
            tracing::warn!(repository = %shown, %url, "registry pagination repeats a page; stopping");
            return Ok(tags);
        }
        let response = registry::send(http.get(url.clone()), &authorization, &shown).await?;
        let (status, headers, body) = read_page(response, &shown).await?;
        if status != reqwest::StatusCode::OK {
            let body = String::from_utf8_lossy(&body);
            return Err(OciError::from_status(&shown, status.as_u16(), &body));
        }
        let page: TagPage = serde_json::from_slice(&body).map_err(|e| OciError::Registry {
            reference: shown.clone(),
            status: Some(status.as_u16()),
            message: format!("tag list is not JSON: {e}"),
        })?;
        for tag in page.tags.unwrap_or_default() {
            if seen_tags.insert(tag.clone()) {
                if tags.len() == paging.max_tags {
                    return Err(OciError::Registry {
                        reference: shown,
                        status: None,
                        message: format!("repository has more than {} tags", paging.max_tags),
                    });
                }
                tags.push(tag);
            }
        }
        let Some(next) = next_link(&headers, &url) else {
            return Ok(tags);
        };
        if next.scheme() != url.scheme()
            || next.host_str() != url.host_str()
            || next.port_or_known_default() != url.port_or_known_default()
        {
            return Err(OciError::Registry {
                reference: shown,
                status: None,
                message: format!("pagination link leaves the registry: {next}"),
            });
        }
        tracing::debug!(repository = %shown, next = %next, "following tag list Link");
        url = next;
    }
    Err(OciError::Registry {
        reference: shown,
        status: None,
        message: format!("tag list has more than {} pages", paging.max_pages),
    })
}

/// Status, headers and body (at most [`MAX_PAGE_BYTES`]; of an error answer, at most
/// [`registry::MAX_ERROR_BYTES`]) of one listing page; a transport failure or an oversized
/// page is an error (Infrastructure).
pub(crate) async fn read_page(
    response: reqwest::Response,
    shown: &str,
) -> Result<(reqwest::StatusCode, HeaderMap, Vec<u8>), OciError> {
    let status = response.status();
    let headers = response.headers().clone();
    if !status.is_success() {
        // An error answer: at most its first 64 KiB, whatever its size.
        return Ok((
            status,
            headers,
            registry::error_body(response).await.into_bytes(),
        ));
    }
    let body = read_limited(response, MAX_PAGE_BYTES)
        .await
        .map_err(|e| e.into_error(shown, "listing page", MAX_PAGE_BYTES))?;
    Ok((status, headers, body))
}

/// The `rel="next"` target of a `Link` header, resolved against `base`.
pub(crate) fn next_link(headers: &HeaderMap, base: &reqwest::Url) -> Option<reqwest::Url> {
    headers
        .get_all(LINK)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(parse_link_header)
        .find(|(_, rel)| {
            rel.split_whitespace()
                .any(|r| r.eq_ignore_ascii_case("next"))
        })
        .and_then(|(target, _)| base.join(&target).ok())
}

/// `<url>; rel="next", <url2>; rel=prev` → [(url, next), (url2, prev)].
fn parse_link_header(value: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        let target = rest[open + 1..open + close].trim().to_owned();
        let after = &rest[open + close + 1..];
        let params_end = after.find('<').unwrap_or(after.len());
        let rel = after[..params_end]
            .split(';')
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("rel"))
            .map(|(_, v)| {
                v.trim()
                    .trim_end_matches(',')
                    .trim()
                    .trim_matches('"')
                    .to_owned()
            })
            .unwrap_or_default();
        out.push((target, rel));
        rest = &after[params_end..];
    }
    out
}

#[cfg(test)]
#[path = "unit_tests/tags.rs"]
mod tests;
