//! Test images built and pushed with `oci-client`: a config blob with labels, a tiny layer and
//! an OCI image manifest; image indexes for the multi-arch cases.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde_json::json;
use sha2::{Digest as _, Sha256};

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";
const CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const LAYER: &str = "application/vnd.oci.image.layer.v1.tar";

/// `sha256:<hex>` of `data`.
pub fn sha256(data: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(data)))
}

/// Pushes test content to one registry host (plain HTTP).
#[allow(missing_debug_implementations)] // oci-client's Client is not Debug
pub struct Pusher {
    client: Client,
    host: String,
    auth: RegistryAuth,
    sizes: Mutex<HashMap<String, usize>>,
}

impl Pusher {
    /// Anonymous.
    pub fn new(host: &str) -> Self {
        Self::with_auth(host, RegistryAuth::Anonymous)
    }

    /// With `auth`.
    pub fn with_auth(host: &str, auth: RegistryAuth) -> Self {
        crate::ensure_crypto_provider();
        let client = Client::new(ClientConfig {
            protocol: ClientProtocol::Http,
            ..ClientConfig::default()
        });
        Self {
            client,
            host: host.to_owned(),
            auth,
            sizes: Mutex::new(HashMap::new()),
        }
    }

    fn tag_ref(&self, repo: &str, tag: &str) -> Reference {
        Reference::with_tag(self.host.clone(), repo.to_owned(), tag.to_owned())
    }

    /// Pushes an image whose config carries `labels`, tagged `tag` (or untagged with `None`,
    /// addressed by digest). Returns the manifest digest.
    pub async fn push_image(
        &self,
        repo: &str,
        tag: Option<&str>,
        labels: &BTreeMap<String, String>,
        arch: &str,
    ) -> String {
        let config = serde_json::to_vec(&json!({
            "architecture": arch,
            "os": "linux",
            "config": { "Labels": labels },
            "rootfs": { "type": "layers", "diff_ids": [] },
        }))
        .expect("config JSON");
        self.push_raw_image(repo, tag, &config, arch).await
    }

    /// Like [`Self::push_image`] with an arbitrary config blob.
    pub async fn push_raw_image(
        &self,
        repo: &str,
        tag: Option<&str>,
        config: &[u8],
        layer_seed: &str,
    ) -> String {
        let size = i64::try_from(config.len()).expect("config size");
        self.push_declaring_config_size(repo, tag, config, layer_seed, size)
            .await
    }

    /// Like [`Self::push_raw_image`], with the manifest declaring `declared` as the config
    /// blob's size (a hostile or broken manifest).
    pub async fn push_declaring_config_size(
        &self,
        repo: &str,
        tag: Option<&str>,
        config: &[u8],
        layer_seed: &str,
        declared: i64,
    ) -> String {
        let layer = format!("kinfer test layer {repo} {layer_seed}").into_bytes();
        let (layer_digest, config_digest) = (sha256(&layer), sha256(config));
        let blob_ref = self.tag_ref(repo, "unused");
        self.client
            .store_auth_if_needed(&self.host, &self.auth)
            .await;
        self.client
            .push_blob(&blob_ref, layer.clone(), &layer_digest)
            .await
            .expect("push layer");
        self.client
            .push_blob(&blob_ref, config.to_vec(), &config_digest)
            .await
            .expect("push config");
        let manifest = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": { "mediaType": CONFIG, "digest": config_digest, "size": declared },
            "layers": [{ "mediaType": LAYER, "digest": layer_digest, "size": layer.len() }],
        }))
        .expect("manifest JSON");
        self.push_manifest(repo, tag, manifest, MANIFEST).await
    }

    /// Pushes an image index over `entries` (manifest digest, architecture), in that order.
    pub async fn push_index(&self, repo: &str, tag: &str, entries: &[(String, &str)]) -> String {
        let manifests: Vec<_> = entries
            .iter()
            .map(|(digest, arch)| {
                json!({
                    "mediaType": MANIFEST,
                    "digest": digest,
                    "size": self.manifest_size(digest),
                    "platform": { "architecture": arch, "os": "linux" },
                })
            })
            .collect();
        let index = serde_json::to_vec(&json!({
            "schemaVersion": 2,
            "mediaType": INDEX,
            "manifests": manifests,
        }))
        .expect("index JSON");
        self.push_manifest(repo, Some(tag), index, INDEX).await
    }

    fn manifest_size(&self, digest: &str) -> usize {
        self.sizes.lock().expect("sizes")[digest]
    }

    async fn push_manifest(
        &self,
        repo: &str,
        tag: Option<&str>,
        body: Vec<u8>,
        media_type: &'static str,
    ) -> String {
        let digest = sha256(&body);
        self.sizes
            .lock()
            .expect("sizes")
            .insert(digest.clone(), body.len());
        let reference = match tag {
            Some(tag) => self.tag_ref(repo, tag),
            None => Reference::with_digest(self.host.clone(), repo.to_owned(), digest.clone()),
        };
        self.client
            .push_manifest_raw(
                &reference,
                body,
                reqwest::header::HeaderValue::from_static(media_type),
            )
            .await
            .expect("push manifest");
        digest
    }
}

/// Labels from pairs.
pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
