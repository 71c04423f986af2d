//! Registry access through `oci-client`: manifest digests, manifests and config blobs.
//!
//! Contract:
//! - Reads only manifests and the config blob; layers are never fetched.
//! - The config blob is read into a buffer capped at its declared size (at most
//!   `MAX_CONFIG_BYTES`, 8 MiB): the read stops as soon as the registry sends more, and a
//!   negative declared size is rejected. Both are [`OciError::UnsupportedImage`].
//! - Image indexes resolve to the `linux/amd64` entry, else the first entry.
//! - HTTPS always, except for the hosts listed as insecure (explicit opt-in), which use plain
//!   HTTP.
//! - One `oci-client` client per (API host, credential fingerprint): `oci-client` remembers the
//!   first credentials it sees per registry, so sharing one client across credentials would
//!   send the wrong ones. The pool is bounded; when full the least recently used client goes.
//! - HTTP or HTTPS per API host is decided once, by [`Transport::scheme`] (plain HTTP only for
//!   the configured insecure registries, compared lower-cased like reference hosts).
//! - Every `oci-client` error is classified into [`OciError`] here.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use oci_client::Client;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::ImageIndexEntry;
use serde::Deserialize;

use crate::auth::{Credentials, Fingerprint};
use crate::cache::{Lru, lock};
use crate::error::OciError;
use crate::reference::ImageReference;

const MAX_CLIENTS: usize = 64;
/// Config blobs are small JSON documents; anything larger is not an image config.
const MAX_CONFIG_BYTES: i64 = 8 * 1024 * 1024;

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

/// Transport settings shared by every pooled client.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    /// Lower-cased, like the hosts of parsed references.
    insecure_registries: Vec<String>,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
}

impl Transport {
    pub fn new(
        insecure_registries: &[String],
        connect_timeout: Duration,
        read_timeout: Duration,
    ) -> Self {
        Self {
            insecure_registries: insecure_registries
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect(),
            connect_timeout,
            read_timeout,
        }
    }

    /// The one place that decides between HTTP and HTTPS for `host` (an API host): the pooled
    /// `oci-client` clients are per host and get this scheme as their protocol, and tag listing
    /// builds its URLs with it.
    pub fn scheme(&self, host: &str) -> &'static str {
        if self.insecure_registries.iter().any(|h| h == host) {
            "http"
        } else {
            "https"
        }
    }

    fn protocol(&self, host: &str) -> ClientProtocol {
        match self.scheme(host) {
            "http" => ClientProtocol::Http,
            _ => ClientProtocol::Https,
        }
    }
}

/// A pool of `oci-client` clients keyed by API host and credentials.
pub(crate) struct ClientPool {
    transport: Transport,
    clients: Mutex<Lru<(String, Fingerprint), Client>>,
}

impl std::fmt::Debug for ClientPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientPool")
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

/// Installs ring as rustls's process-wide crypto provider unless one is installed already.
///
/// reqwest and oci-client are built without a provider of their own (the workspace keeps a
/// single TLS provider, the ring one kube uses) and read the process default when a client is
/// built. Installing is idempotent: a second call, or a provider installed by the binary, wins.
pub fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err means another thread installed one first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

impl ClientPool {
    pub fn new(transport: Transport) -> Self {
        ensure_crypto_provider();
        Self {
            transport,
            clients: Mutex::new(Lru::new(MAX_CLIENTS)),
        }
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The pooled client for (`host`, `credentials`); when the pool is full the least recently
    /// used client is dropped (its in-flight requests keep their own handle).
    pub fn client(&self, host: &str, credentials: &Credentials) -> Client {
        let key = (host.to_owned(), credentials.fingerprint());
        let mut clients = lock(&self.clients);
        if let Some(client) = clients.get_value(&key) {
            return client.clone();
        }
        let config = ClientConfig {
            protocol: self.transport.protocol(host),
            platform_resolver: Some(Box::new(linux_amd64_or_first)),
            connect_timeout: Some(self.transport.connect_timeout),
            read_timeout: Some(self.transport.read_timeout),
            ..ClientConfig::default()
        };
        let client = Client::new(config);
        clients.insert(key, client.clone(), Instant::now());
        client
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.clients).len()
    }
}

/// `linux/amd64`, else the first entry of the index.
fn linux_amd64_or_first(entries: &[ImageIndexEntry]) -> Option<String> {
    oci_client::client::linux_amd64_resolver(entries)
        .or_else(|| entries.first().map(|e| e.digest.clone()))
}

/// Resolves the reference's current digest with a manifest `HEAD` (a `GET` when the registry
/// sends no digest header).
pub(crate) async fn resolve_digest(
    client: &Client,
    reference: &ImageReference,
    credentials: &Credentials,
) -> Result<String, OciError> {
    let shown = reference.to_string();
    client
        .fetch_manifest_digest(&reference.to_oci(), &credentials.to_oci())
        .await
        .map_err(|e| OciError::from_distribution(&shown, e))
}

/// Reads the manifest (resolving an index) and the config blob's labels.
pub(crate) async fn fetch_config(
    client: &Client,
    reference: &ImageReference,
    credentials: &Credentials,
) -> Result<FetchedConfig, OciError> {
    let shown = reference.to_string();
    let oci_ref = reference.to_oci();
    let (manifest, manifest_digest, index_digest) = client
        .pull_image_manifest_and_list_digest(&oci_ref, &credentials.to_oci())
        .await
        .map_err(|e| OciError::from_distribution(&shown, e))?;
    let limit =
        config_limit(manifest.config.size).map_err(|reason| OciError::UnsupportedImage {
            reference: shown.clone(),
            reason,
        })?;
    let mut blob = LimitedBuffer::new(limit);
    let pulled = client
        .pull_blob(&oci_ref, &manifest.config, &mut blob)
        .await;
    if blob.overflowed {
        return Err(OciError::UnsupportedImage {
            reference: shown,
            reason: format!(
                "config blob is larger than {limit} bytes (declared {} bytes)",
                manifest.config.size
            ),
        });
    }
    pulled.map_err(|e| OciError::from_distribution(&shown, e))?;
    let blob = blob.bytes;
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

/// An in-memory sink that refuses to grow past `limit`: the write fails as soon as the
/// registry sends more than allowed, so an oversized or endless blob is never buffered.
#[derive(Debug)]
pub(crate) struct LimitedBuffer {
    pub bytes: Vec<u8>,
    pub limit: usize,
    pub overflowed: bool,
}

impl LimitedBuffer {
    pub fn new(limit: usize) -> Self {
        Self {
            bytes: Vec::new(),
            limit,
            overflowed: false,
        }
    }

    fn push(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.limit - self.bytes.len() {
            self.overflowed = true;
            return Err(std::io::Error::other("blob exceeds its size limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
}

impl tokio::io::AsyncWrite for LimitedBuffer {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(self.get_mut().push(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
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
