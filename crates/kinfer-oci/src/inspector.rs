//! The inspector: reference + credentials → digest, labels and AIM metadata, cached.
//!
//! Contract ([`Inspector::inspect`]):
//! - A digest reference is served from the digest cache, else fetched (manifest, then config
//!   blob) and cached forever (until evicted).
//! - A tag resolved less than `tag_ttl` ago is served from the cache with no registry request.
//! - A stale tag is re-resolved with one manifest `HEAD`; an unchanged digest is served from the
//!   cache, a changed one (a re-pushed tag) is fetched by digest.
//! - A tag never seen is fetched by tag directly (no extra `HEAD`).
//! - Cache entries are scoped by API host, repository and credential fingerprint.
//! - Failures are not cached; the whole call is bounded by `timeout`
//!   ([`OciError::Timeout`], Infrastructure).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kinfer_api::aim::ImageMetadata;

use crate::auth::{Credentials, PullSecret, credentials_for};
use crate::cache::{Clock, InspectionCache, Scope, SystemClock};
use crate::client::{self, ClientPool, Transport};
use crate::error::OciError;
use crate::labels::parse_image_metadata;
use crate::reference::ImageReference;
use crate::tags::{self, Paging};

/// Settings of an [`Inspector`].
#[derive(Debug, Clone)]
pub struct InspectorConfig {
    /// Registry API hosts (`host[:port]`, as in the reference) reached over plain HTTP instead of
    /// HTTPS. Empty by default: plain HTTP is an explicit opt-in.
    pub insecure_registries: Vec<String>,
    /// How long a tag → digest resolution is trusted before it is checked again.
    pub tag_ttl: Duration,
    /// Entries per cache map (tags, digests).
    pub cache_capacity: usize,
    /// Upper bound of one `inspect` or `list_tags` call.
    pub timeout: Duration,
    /// TCP connect timeout of each request.
    pub connect_timeout: Duration,
    /// Read timeout of each request.
    pub read_timeout: Duration,
    /// Tags requested per page by `list_tags`.
    pub tags_page_size: usize,
    /// Pages `list_tags` follows before giving up.
    pub max_tag_pages: usize,
}

impl Default for InspectorConfig {
    fn default() -> Self {
        Self {
            insecure_registries: Vec::new(),
            tag_ttl: Duration::from_mins(15),
            cache_capacity: 1024,
            timeout: Duration::from_mins(1),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            tags_page_size: 100,
            max_tag_pages: 1000,
        }
    }
}

/// What an inspection found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectedImage {
    /// The digest the reference resolves to: the image index digest for multi-arch images,
    /// the manifest digest otherwise. Pin deployments to this.
    pub digest: String,
    /// The digest of the platform image manifest that was read (`linux/amd64`, else the first
    /// entry of an index); equals `digest` for single-platform images.
    pub manifest_digest: String,
    /// The image config's labels, verbatim.
    pub labels: BTreeMap<String, String>,
    /// AIM and OCI metadata parsed from the labels.
    pub metadata: ImageMetadata,
}

/// Cache occupancy, see [`Inspector::cached_entries`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedEntries {
    /// Tag → digest resolutions.
    pub tags: usize,
    /// Inspected digests.
    pub digests: usize,
}

/// Reads image labels from registries, with a digest cache and tag TTL. Cheap to share: every
/// method takes `&self`.
pub struct Inspector {
    config: InspectorConfig,
    pool: ClientPool,
    http: reqwest::Client,
    cache: Mutex<InspectionCache<InspectedImage>>,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for Inspector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inspector")
            .field("config", &self.config)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl Inspector {
    /// An inspector on the system clock.
    pub fn new(config: InspectorConfig) -> Result<Self, OciError> {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    /// An inspector on the given clock (tests move a [`crate::ManualClock`] past the TTL).
    pub fn with_clock(config: InspectorConfig, clock: Arc<dyn Clock>) -> Result<Self, OciError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .user_agent(concat!("kinfer-oci/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| OciError::from_reqwest("(client setup)", &e))?;
        let pool = ClientPool::new(Transport {
            insecure_registries: config.insecure_registries.clone(),
            connect_timeout: config.connect_timeout,
            read_timeout: config.read_timeout,
        });
        let cache = Mutex::new(InspectionCache::new(config.cache_capacity, config.tag_ttl));
        Ok(Self {
            config,
            pool,
            http,
            cache,
            clock,
        })
    }

    /// Inspects `reference` with `credentials`.
    pub async fn inspect(
        &self,
        reference: &ImageReference,
        credentials: &Credentials,
    ) -> Result<InspectedImage, OciError> {
        self.bounded(
            reference.to_string(),
            self.inspect_unbounded(reference, credentials),
        )
        .await
    }

    /// Inspects `reference` with the credentials `secrets` hold for its registry (anonymous
    /// when none match).
    pub async fn inspect_with_secrets(
        &self,
        reference: &ImageReference,
        secrets: &[PullSecret],
    ) -> Result<InspectedImage, OciError> {
        let credentials = credentials_for(reference, secrets)?;
        self.inspect(reference, &credentials).await
    }

    /// Lists the tags of `repository`'s repository (its tag and digest are ignored), following
    /// the registry's pagination.
    pub async fn list_tags(
        &self,
        repository: &ImageReference,
        credentials: &Credentials,
    ) -> Result<Vec<String>, OciError> {
        let paging = Paging {
            page_size: self.config.tags_page_size,
            max_pages: self.config.max_tag_pages,
        };
        self.bounded(
            repository.name(),
            tags::list_tags(&self.http, &self.pool, repository, credentials, paging),
        )
        .await
    }

    /// How many tag resolutions and inspected digests are cached (for metrics).
    pub fn cached_entries(&self) -> CachedEntries {
        let (tags, digests) = self.cache().sizes();
        CachedEntries { tags, digests }
    }

    async fn bounded<T>(
        &self,
        shown: String,
        work: impl Future<Output = Result<T, OciError>>,
    ) -> Result<T, OciError> {
        match tokio::time::timeout(self.config.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(OciError::Timeout {
                reference: shown,
                after: self.config.timeout,
            }),
        }
    }

    async fn inspect_unbounded(
        &self,
        reference: &ImageReference,
        credentials: &Credentials,
    ) -> Result<InspectedImage, OciError> {
        let scope = Scope {
            host: reference.api_host().to_owned(),
            repository: reference.repository().to_owned(),
            credentials: credentials.fingerprint(),
        };
        let client = self.pool.client(reference.api_host(), credentials);

        if let Some(digest) = reference.digest() {
            if let Some(hit) = self.cache().by_digest(&scope, digest) {
                tracing::debug!(image = %reference, "digest cache hit");
                return Ok(hit);
            }
            return self
                .fetch(&client, reference, credentials, &scope, None)
                .await;
        }

        let tag = reference.tag().unwrap_or("latest");
        let now = self.clock.now();
        let known = self.cache().lookup_tag(&scope, tag, now);
        let Some(known) = known else {
            tracing::debug!(image = %reference, "tag not cached; fetching");
            return self
                .fetch(&client, reference, credentials, &scope, Some(tag))
                .await;
        };
        if known.fresh
            && let Some(hit) = self.cache().by_digest(&scope, &known.digest)
        {
            tracing::debug!(image = %reference, digest = %known.digest, "tag cache hit");
            return Ok(hit);
        }

        let digest = client::resolve_digest(&client, reference, credentials).await?;
        let cached = self.cache().by_digest(&scope, &digest);
        if let Some(hit) = cached {
            tracing::debug!(image = %reference, %digest, "tag re-resolved to a cached digest");
            self.cache()
                .store_tag(&scope, tag, &digest, self.clock.now());
            return Ok(hit);
        }
        if digest != known.digest {
            tracing::info!(image = %reference, old = %known.digest, new = %digest, "tag now points at another image");
        }
        let pinned = reference
            .with_digest(&digest)
            .map_err(|e| OciError::Registry {
                reference: reference.to_string(),
                status: None,
                message: format!("registry returned an invalid digest: {e}"),
            })?;
        self.fetch(&client, &pinned, credentials, &scope, Some(tag))
            .await
    }

    async fn fetch(
        &self,
        client: &oci_client::Client,
        reference: &ImageReference,
        credentials: &Credentials,
        scope: &Scope,
        tag: Option<&str>,
    ) -> Result<InspectedImage, OciError> {
        let fetched = client::fetch_config(client, reference, credentials).await?;
        let metadata = parse_image_metadata(&fetched.labels)?;
        let image = InspectedImage {
            digest: fetched.digest,
            manifest_digest: fetched.manifest_digest,
            labels: fetched.labels,
            metadata,
        };
        tracing::debug!(image = %reference, digest = %image.digest, labels = image.labels.len(), "inspected image");
        let now = self.clock.now();
        let mut cache = self.cache();
        cache.store_digest(scope, &image.digest, image.clone(), now);
        if let Some(tag) = tag {
            cache.store_tag(scope, tag, &image.digest, now);
        }
        Ok(image)
    }

    fn cache(&self) -> MutexGuard<'_, InspectionCache<InspectedImage>> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
