//! Registry access through `oci-client`: manifest digests, manifests and config blobs.
//!
//! Contract:
//! - Reads only manifests and the config blob; layers are never fetched.
//! - Image indexes resolve to the `linux/amd64` entry, else the first entry.
//! - HTTPS always, except for the hosts listed as insecure (explicit opt-in), which use plain
//!   HTTP.
//! - One `oci-client` client per (API host, credential fingerprint): `oci-client` remembers the
//!   first credentials it sees per registry, so sharing one client across credentials would
//!   send the wrong ones. The pool is bounded; when full it is cleared.
//! - Every `oci-client` error is classified into [`OciError`] here.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use oci_client::Client;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::ImageIndexEntry;
use serde::Deserialize;

use crate::auth::Credentials;
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
    pub insecure_registries: Vec<String>,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
}

impl Transport {
    pub fn is_insecure(&self, host: &str) -> bool {
        self.insecure_registries.iter().any(|h| h == host)
    }

    pub fn scheme(&self, host: &str) -> &'static str {
        if self.is_insecure(host) {
            "http"
        } else {
            "https"
        }
    }
}

/// A pool of `oci-client` clients keyed by API host and credentials.
pub(crate) struct ClientPool {
    transport: Transport,
    clients: Mutex<HashMap<(String, String), Client>>,
}

impl std::fmt::Debug for ClientPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientPool")
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl ClientPool {
    pub fn new(transport: Transport) -> Self {
        Self {
            transport,
            clients: Mutex::new(HashMap::new()),
        }
    }

    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    pub fn client(&self, host: &str, credentials: &Credentials) -> Client {
        let key = (host.to_owned(), credentials.fingerprint());
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(client) = clients.get(&key) {
            return client.clone();
        }
        if clients.len() >= MAX_CLIENTS {
            clients.clear();
        }
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(self.transport.insecure_registries.clone()),
            platform_resolver: Some(Box::new(linux_amd64_or_first)),
            connect_timeout: Some(self.transport.connect_timeout),
            read_timeout: Some(self.transport.read_timeout),
            ..ClientConfig::default()
        };
        let client = Client::new(config);
        clients.insert(key, client.clone());
        client
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
    if manifest.config.size > MAX_CONFIG_BYTES {
        return Err(OciError::UnsupportedImage {
            reference: shown,
            reason: format!("config blob is {} bytes", manifest.config.size),
        });
    }
    let mut blob = Vec::new();
    client
        .pull_blob(&oci_ref, &manifest.config, &mut blob)
        .await
        .map_err(|e| OciError::from_distribution(&shown, e))?;
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
