//! Manifest digests, manifests and config blobs, over the project's own registry client
//! ([`crate::registry`]).
//!
//! Contract:
//! - Reads only manifests and the config blob; layers are never fetched.
//! - Manifests and image indexes are read within [`registry::MAX_MANIFEST_BYTES`]; a larger one
//!   is [`OciError::UnsupportedImage`]. The config blob is read within its declared size (at
//!   most `MAX_CONFIG_BYTES`, 8 MiB): the read stops as soon as the registry sends more, and a
//!   negative declared size is rejected. Both are [`OciError::UnsupportedImage`].
//! - What is fetched by digest (a platform manifest named by an index, a manifest asked for by
//!   digest, the config blob) must hash to it (sha256 or sha512), else the registry is not
//!   trusted: Infrastructure. A manifest fetched by tag is named by the hash of the bytes read.
//! - Image indexes resolve to the `linux/amd64` entry, else the first entry; an empty index and
//!   a manifest without a config (Docker schema 1, artifacts) are
//!   [`OciError::UnsupportedImage`].
//! - HTTPS always, except for the hosts listed as insecure (explicit opt-in), which use plain
//!   HTTP: decided once per API host by [`Transport::scheme`] (compared lower-cased like
//!   reference hosts).
//! - Requests carry the authorization [`registry::authorization`] finds for scope
//!   `repository:<name>:pull`.

use std::collections::BTreeMap;

use reqwest::header::{ACCEPT, HeaderValue};
use serde::Deserialize;
use sha2::Digest as _;

use crate::auth::Credentials;
use crate::error::OciError;
use crate::reference::ImageReference;
use crate::registry::{self, Auth, MAX_MANIFEST_BYTES, ReadError, Tokens, read_limited};

/// Config blobs are small JSON documents; anything larger is not an image config.
const MAX_CONFIG_BYTES: i64 = 8 * 1024 * 1024;

/// The manifest types asked for, image indexes included.
const MANIFEST_TYPES: &str = "application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.v2+json, \
    application/vnd.oci.image.index.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json";

/// The manifest and config of one image, as read from the registry.
#[derive(Debug)]
pub(crate) struct FetchedConfig {
    /// What the reference resolved to (the image index digest for multi-arch images).
    pub digest: String,
    /// The platform image manifest that was read.
    pub manifest_digest: String,
    /// The config's labels.
    pub labels: BTreeMap<String, String>,
}

/// Transport settings.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    /// Lower-cased, like the hosts of parsed references.
    insecure_registries: Vec<String>,
}

impl Transport {
    pub fn new(insecure_registries: &[String]) -> Self {
        Self {
            insecure_registries: insecure_registries
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    /// The one place that decides between HTTP and HTTPS for `host` (an API host).
    pub fn scheme(&self, host: &str) -> &'static str {
        if self.insecure_registries.iter().any(|h| h == host) {
            "http"
        } else {
            "https"
        }
    }
}

/// What reads an image: the HTTP client, the transport rules and the authorization cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Registry<'a> {
    pub http: &'a reqwest::Client,
    pub transport: &'a Transport,
    pub tokens: &'a Tokens,
}

/// One image's repository on one registry, with its authorization.
struct Repository<'a> {
    http: &'a reqwest::Client,
    base: String,
    auth: Auth,
    shown: String,
}

impl Repository<'_> {
    async fn open<'a>(
        registry: Registry<'a>,
        reference: &ImageReference,
        credentials: &Credentials,
    ) -> Result<Repository<'a>, OciError> {
        let host = reference.api_host();
        let shown = reference.to_string();
        let scope = format!("repository:{}:pull", reference.repository());
        let scheme = registry.transport.scheme(host);
        let target = registry::Target {
            scheme,
            host,
            scope: &scope,
            shown: &shown,
        };
        let auth =
            registry::authorization(registry.http, registry.tokens, target, credentials).await?;
        Ok(Repository {
            http: registry.http,
            base: format!("{scheme}://{host}/v2/{}", reference.repository()),
            auth,
            shown,
        })
    }

    fn url(&self, path: &str) -> Result<reqwest::Url, OciError> {
        reqwest::Url::parse(&format!("{}/{path}", self.base)).map_err(|e| OciError::Registry {
            reference: self.shown.clone(),
            status: None,
            message: format!("cannot build a registry URL: {e}"),
        })
    }

    /// `GET`s `path`, answering at most `limit` bytes; an answer other than 2xx is an error.
    async fn get(
        &self,
        path: &str,
        accept: Option<&'static str>,
        limit: usize,
    ) -> Result<Result<Vec<u8>, ReadError>, OciError> {
        let mut request = self.http.get(self.url(path)?);
        if let Some(accept) = accept {
            request = request.header(ACCEPT, HeaderValue::from_static(accept));
        }
        let response = registry::send(request, &self.auth, &self.shown).await?;
        let status = response.status();
        if !status.is_success() {
            let body = registry::error_body(response).await;
            return Err(OciError::from_status(&self.shown, status.as_u16(), &body));
        }
        tracing::trace!(image = %self.shown, %path, "reading");
        Ok(read_limited(response, limit).await)
    }

    /// The manifest (or index) `reference` names, within [`MAX_MANIFEST_BYTES`].
    async fn manifest(&self, reference: &str) -> Result<Vec<u8>, OciError> {
        match self
            .get(
                &format!("manifests/{reference}"),
                Some(MANIFEST_TYPES),
                MAX_MANIFEST_BYTES,
            )
            .await?
        {
            Ok(body) => Ok(body),
            Err(ReadError::TooLarge) => Err(OciError::UnsupportedImage {
                reference: self.shown.clone(),
                reason: format!("manifest is larger than {MAX_MANIFEST_BYTES} bytes"),
            }),
            Err(e) => Err(e.into_error(&self.shown, "manifest", MAX_MANIFEST_BYTES)),
        }
    }

    /// `digest` (from a manifest or an index) when it is a digest, before it goes into a URL:
    /// anything else (`../`, `?`, another algorithm) is refused.
    fn checked<'d>(
        &self,
        reference: &ImageReference,
        digest: &'d str,
    ) -> Result<&'d str, OciError> {
        match reference.with_digest(digest) {
            Ok(_) => Ok(digest),
            Err(e) => Err(OciError::UnsupportedImage {
                reference: self.shown.clone(),
                reason: format!("the manifest names an invalid digest: {e}"),
            }),
        }
    }

    /// Refuses `body` unless it hashes to `digest`.
    fn verify(&self, digest: &str, body: &[u8], what: &str) -> Result<(), OciError> {
        match digest_of(digest, body) {
            Some(d) if d == digest => Ok(()),
            _ => Err(OciError::Registry {
                reference: self.shown.clone(),
                status: None,
                message: format!("the registry sent a {what} that does not match its digest"),
            }),
        }
    }
}

/// `body`'s digest in the algorithm of `like` (`sha256:` or `sha512:`); `None` for another.
fn digest_of(like: &str, body: &[u8]) -> Option<String> {
    match like.split_once(':')?.0 {
        "sha256" => Some(format!(
            "sha256:{}",
            hex::encode(sha2::Sha256::digest(body))
        )),
        "sha512" => Some(format!(
            "sha512:{}",
            hex::encode(sha2::Sha512::digest(body))
        )),
        _ => None,
    }
}

fn sha256(body: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(body)))
}

/// What a manifest or an index says, as far as inspection needs it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    #[serde(default)]
    schema_version: Option<i64>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    manifests: Option<Vec<IndexEntry>>,
}

#[derive(Deserialize)]
struct Descriptor {
    digest: String,
    size: i64,
}

#[derive(Deserialize)]
struct IndexEntry {
    digest: String,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(Deserialize)]
struct Platform {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
}

fn document(body: &[u8], shown: &str) -> Result<Document, OciError> {
    let d: Document = serde_json::from_slice(body).map_err(|e| OciError::UnsupportedImage {
        reference: shown.to_owned(),
        reason: format!("manifest is not JSON: {e}"),
    })?;
    if d.schema_version != Some(2) {
        return Err(OciError::UnsupportedImage {
            reference: shown.to_owned(),
            reason: format!(
                "manifest schema version {} (only version 2 is supported)",
                d.schema_version
                    .map_or_else(|| "none".to_owned(), |v| v.to_string())
            ),
        });
    }
    Ok(d)
}

/// The `linux/amd64` entry of an index, else its first.
fn linux_amd64_or_first(entries: &[IndexEntry]) -> Option<&IndexEntry> {
    entries
        .iter()
        .find(|e| {
            e.platform
                .as_ref()
                .is_some_and(|p| p.os == "linux" && p.architecture == "amd64")
        })
        .or_else(|| entries.first())
}

/// The reference's tag, or its digest when it has one.
fn manifest_reference(reference: &ImageReference) -> String {
    reference
        .digest()
        .or(reference.tag())
        .unwrap_or("latest")
        .to_owned()
}

/// Resolves the reference's current digest with a manifest `HEAD` (the hash of a `GET` when
/// the registry sends no usable digest header); a reference pinned by digest is its digest.
pub(crate) async fn resolve_digest(
    registry: Registry<'_>,
    reference: &ImageReference,
    credentials: &Credentials,
) -> Result<String, OciError> {
    if let Some(pinned) = reference.digest() {
        return Ok(pinned.to_owned());
    }
    let repo = Repository::open(registry, reference, credentials).await?;
    let name = manifest_reference(reference);
    let request = repo
        .http
        .head(repo.url(&format!("manifests/{name}"))?)
        .header(ACCEPT, HeaderValue::from_static(MANIFEST_TYPES));
    let response = registry::send(request, &repo.auth, &repo.shown).await?;
    let status = response.status();
    if !status.is_success() {
        return Err(OciError::from_status(&repo.shown, status.as_u16(), ""));
    }
    let header = response
        .headers()
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
        .filter(|d| reference.with_digest(d).is_ok())
        .map(str::to_owned);
    if let Some(digest) = header {
        return Ok(digest);
    }
    let body = repo.manifest(&name).await?;
    Ok(sha256(&body))
}

/// Reads the manifest (resolving an index) and the config blob's labels.
pub(crate) async fn fetch_config(
    registry: Registry<'_>,
    reference: &ImageReference,
    credentials: &Credentials,
) -> Result<FetchedConfig, OciError> {
    let repo = Repository::open(registry, reference, credentials).await?;
    let shown = repo.shown.clone();
    let body = repo.manifest(&manifest_reference(reference)).await?;
    let first_digest = match reference.digest() {
        Some(d) => {
            repo.verify(d, &body, "manifest")?;
            d.to_owned()
        }
        None => sha256(&body),
    };
    let first = document(&body, &shown)?;
    let (manifest, manifest_digest, index_digest) = match first.manifests {
        Some(entries) => {
            let entry =
                linux_amd64_or_first(&entries).ok_or_else(|| OciError::UnsupportedImage {
                    reference: shown.clone(),
                    reason: "image index has no manifests".to_owned(),
                })?;
            let digest = repo.checked(reference, &entry.digest)?;
            let body = repo.manifest(digest).await?;
            repo.verify(digest, &body, "platform manifest")?;
            let manifest = document(&body, &shown)?;
            (manifest, entry.digest.clone(), Some(first_digest))
        }
        None => (first, first_digest, None),
    };
    let config = manifest.config.ok_or_else(|| OciError::UnsupportedImage {
        reference: shown.clone(),
        reason: "manifest has no config (not a container image)".to_owned(),
    })?;
    let limit = config_limit(config.size).map_err(|reason| OciError::UnsupportedImage {
        reference: shown.clone(),
        reason,
    })?;
    let config_digest = repo.checked(reference, &config.digest)?;
    let blob = match repo
        .get(&format!("blobs/{config_digest}"), None, limit)
        .await?
    {
        Ok(blob) => blob,
        Err(ReadError::TooLarge) => {
            return Err(OciError::UnsupportedImage {
                reference: shown,
                reason: format!(
                    "config blob is larger than {limit} bytes (declared {} bytes)",
                    config.size
                ),
            });
        }
        Err(e) => return Err(e.into_error(&shown, "config blob", limit)),
    };
    repo.verify(&config.digest, &blob, "config blob")?;
    let labels = config_labels(&blob).map_err(|reason| OciError::UnsupportedImage {
        reference: shown,
        reason,
    })?;
    Ok(FetchedConfig {
        digest: index_digest.unwrap_or_else(|| manifest_digest.clone()),
        manifest_digest,
        labels,
    })
}

/// How many bytes of the config blob may be read: its declared size, at most
/// [`MAX_CONFIG_BYTES`]. A negative size is a broken manifest.
pub(crate) fn config_limit(declared: i64) -> Result<usize, String> {
    if declared < 0 {
        return Err(format!(
            "manifest declares a negative config size ({declared})"
        ));
    }
    if declared > MAX_CONFIG_BYTES {
        return Err(format!(
            "config blob is {declared} bytes (the limit is {MAX_CONFIG_BYTES})"
        ));
    }
    usize::try_from(declared).map_err(|_| format!("config blob is {declared} bytes"))
}

/// The `config.Labels` of an image config blob (`null` and missing mean none).
pub(crate) fn config_labels(blob: &[u8]) -> Result<BTreeMap<String, String>, String> {
    #[derive(Deserialize)]
    struct ImageConfig {
        #[serde(default)]
        config: Option<ContainerConfig>,
    }
    #[derive(Deserialize)]
    struct ContainerConfig {
        #[serde(default, rename = "Labels")]
        labels: Option<BTreeMap<String, String>>,
    }
    let config: ImageConfig = serde_json::from_slice(blob)
        .map_err(|e| format!("config blob is not an image config: {e}"))?;
    Ok(config.config.and_then(|c| c.labels).unwrap_or_default())
}

#[cfg(test)]
#[path = "unit_tests/client.rs"]
mod tests;
