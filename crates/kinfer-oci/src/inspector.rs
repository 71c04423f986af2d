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
//! - Labels over [`MAX_LABEL_BYTES`] in total are [`OciError::LabelsTooLarge`] (InvalidSpec);
//!   the labels are kept once, in `metadata.original_labels`.
//! - When that re-check fails with an Infrastructure error (registry down, 5xx, timeout of the
//!   request) and the tag's last digest is cached, the cached result is served with a warning
//!   and the tag stays stale; Auth and NotFound errors are returned, since they are answers.
//! - A label failure ([`OciError::InvalidLabel`], [`OciError::LabelsTooLarge`]) depends only
//!   on the image's content, so it is cached by digest like a success: a broken image is not
//!   downloaded again on every reconcile. Registry and transport failures are not cached.
//! - The whole call is bounded by `timeout` ([`OciError::Timeout`], Infrastructure).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kinfer_api::aim::ImageMetadata;

use crate::auth::{Credentials, PullSecret, credential_candidates};
use crate::cache::{Clock, InspectionCache, Scope, SystemClock};
use crate::client::{self, Registry, Transport};
use crate::error::{OciError, OciErrorCategory};
use crate::labels::parse_image_metadata;
use crate::reference::ImageReference;
use crate::registry::Tokens;
use crate::tags::{self, Paging};

/// Total bytes of label keys and values an inspection keeps (and caches). AIM images carry a
/// few KiB; the cache holds `cache_capacity` results, so this bounds it by bytes, too.
pub const MAX_LABEL_BYTES: usize = 256 * 1024;

fn label_bytes(labels: &BTreeMap<String, String>) -> usize {
    labels.iter().map(|(k, v)| k.len() + v.len()).sum()
}

/// Runs `call` with each candidate until one is not refused (anonymous when there are none).
async fn try_in_turn<'a, T, F, Fut>(candidates: &'a [Credentials], call: F) -> Result<T, OciError>
where
    F: Fn(&'a Credentials) -> Fut,
    Fut: Future<Output = Result<T, OciError>>,
{
    static ANONYMOUS: Credentials = Credentials::Anonymous;
    let Some((last, earlier)) = candidates.split_last() else {
        return call(&ANONYMOUS).await;
    };
    for (index, credentials) in earlier.iter().enumerate() {
        match call(credentials).await {
            Err(e) if e.category() == OciErrorCategory::Auth => {
                tracing::debug!(candidate = index, error = %e, "credentials refused; trying the next");
            }
            other => return other,
        }
    }
    call(last).await
}

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
    /// Tags (or repositories) requested per page by `list_tags` and `list_repositories`.
    pub tags_page_size: usize,
    /// Pages `list_tags` and `list_repositories` follow before giving up.
    pub max_tag_pages: usize,
    /// Distinct tags (or repositories) `list_tags` and `list_repositories` collect before
    /// giving up.
    pub max_tags: usize,
    /// Docker Hub's web API base URL, which lists a namespace's repositories
    /// ([`Inspector::list_repositories`]); tests point it at a local server.
    pub docker_hub_api: String,
    /// Never contact a registry: every inspection and listing fails at once with
    /// [`OciError::Offline`] (before credentials are even looked at). `kinfer render` runs the
    /// operators this way, so a plan never depends on the network.
    pub offline: bool,
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
            max_tags: 100_000,
            docker_hub_api: crate::catalog::DOCKER_HUB_API.to_owned(),
            offline: false,
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
    /// AIM and OCI metadata parsed from the labels; `metadata.original_labels` holds every
    /// label verbatim (the only copy, see [`Self::labels`]).
    pub metadata: ImageMetadata,
}

impl InspectedImage {
    /// The image config's labels, verbatim.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.metadata.original_labels
    }
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
    transport: Transport,
    tokens: Tokens,
    http: reqwest::Client,
    cache: Mutex<InspectionCache<Cached>>,
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
        let http = crate::registry::http_client(config.connect_timeout, config.read_timeout)
            .map_err(|e| OciError::from_reqwest("(client setup)", &e))?;
        let transport = Transport::new(&config.insecure_registries);
        let cache = Mutex::new(InspectionCache::new(config.cache_capacity, config.tag_ttl));
        Ok(Self {
            config,
            transport,
            tokens: Tokens::default(),
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
        self.online(&reference.to_string())?;
        self.bounded(
            reference.to_string(),
            self.inspect_unbounded(reference, credentials),
        )
        .await
    }

    /// Inspects `reference` with the credentials `secrets` hold for its registry: each
    /// [`credential_candidates`] entry in turn until the registry accepts one (an Auth error
    /// moves on to the next; any other result is returned at once), like the kubelet. Anonymous
    /// when none match; the last Auth error when every candidate is refused.
    pub async fn inspect_with_secrets(
        &self,
        reference: &ImageReference,
        secrets: &[PullSecret],
    ) -> Result<InspectedImage, OciError> {
        self.online(&reference.to_string())?;
        let candidates = credential_candidates(reference, secrets)?;
        try_in_turn(&candidates, |c| self.inspect(reference, c)).await
    }

    /// [`Self::list_tags`] with the credentials `secrets` hold, tried in turn like
    /// [`Self::inspect_with_secrets`].
    pub async fn list_tags_with_secrets(
        &self,
        repository: &ImageReference,
        secrets: &[PullSecret],
    ) -> Result<Vec<String>, OciError> {
        self.online(&repository.name())?;
        let candidates = credential_candidates(repository, secrets)?;
        try_in_turn(&candidates, |c| self.list_tags(repository, c)).await
    }

    /// Lists the tags of `repository`'s repository (its tag and digest are ignored), following
    /// the registry's pagination.
    pub async fn list_tags(
        &self,
        repository: &ImageReference,
        credentials: &Credentials,
    ) -> Result<Vec<String>, OciError> {
        self.online(&repository.name())?;
        self.bounded(
            repository.name(),
            tags::list_tags(
                (&self.http, &self.transport, &self.tokens),
                repository,
                credentials,
                self.paging(),
            ),
        )
        .await
    }

    /// How many tag resolutions and inspected digests are cached (for metrics).
    pub fn cached_entries(&self) -> CachedEntries {
        let (tags, digests) = self.cache().sizes();
        CachedEntries { tags, digests }
    }

    /// Lists the repositories of `registry` (as written in references: `ghcr.io`,
    /// `127.0.0.1:5000`, `docker.io`) that a pattern with the literal `prefix` may match: the
    /// registry's `/v2/_catalog`, or for Docker Hub the repositories of the prefix's namespace
    /// (see [`crate::catalog`] for auth, pagination and limits). The caller filters by pattern.
    pub async fn list_repositories(
        &self,
        registry: &str,
        prefix: &str,
        credentials: &Credentials,
    ) -> Result<Vec<String>, OciError> {
        self.online(registry)?;
        let target = crate::catalog::Target {
            registry,
            prefix,
            hub_api: &self.config.docker_hub_api,
        };
        self.bounded(
            registry.to_owned(),
            crate::catalog::list_repositories(
                &self.http,
                &self.transport,
                target,
                credentials,
                self.paging(),
            ),
        )
        .await
    }

    /// [`Self::list_repositories`] with the credentials `secrets` hold for `registry`, tried in
    /// turn like [`Self::inspect_with_secrets`].
    pub async fn list_repositories_with_secrets(
        &self,
        registry: &str,
        prefix: &str,
        secrets: &[PullSecret],
    ) -> Result<Vec<String>, OciError> {
        self.online(registry)?;
        let probe = ImageReference::parse(&format!("{registry}/catalog")).map_err(|e| {
            OciError::InvalidReference {
                reference: registry.to_owned(),
                source: e,
            }
        })?;
        let candidates = credential_candidates(&probe, secrets)?;
        try_in_turn(&candidates, |c| self.list_repositories(registry, prefix, c)).await
    }

    fn paging(&self) -> Paging {
        Paging {
            page_size: self.config.tags_page_size,
            max_pages: self.config.max_tag_pages,
            max_tags: self.config.max_tags,
        }
    }

    /// [`OciError::Offline`] when the inspector must not contact registries.
    fn online(&self, target: &str) -> Result<(), OciError> {
        if self.config.offline {
            return Err(OciError::Offline {
                reference: target.to_owned(),
            });
        }
        Ok(())
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
        let client = self.registry();
        let served = |cached: Cached| cached.map_err(|f| f.into_error(reference));

        if let Some(digest) = reference.digest() {
            if let Some(hit) = self.cache().by_digest(&scope, digest) {
                tracing::debug!(image = %reference, "digest cache hit");
                return served(hit);
            }
            return self
                .fetch(client, reference, credentials, &scope, None)
                .await;
        }

        let tag = reference.tag().unwrap_or("latest");
        let now = self.clock.now();
        let known = self.cache().lookup_tag(&scope, tag, now);
        let Some(known) = known else {
            tracing::debug!(image = %reference, "tag not cached; fetching");
            return self
                .fetch(client, reference, credentials, &scope, Some(tag))
                .await;
        };
        if known.fresh
            && let Some(hit) = self.cache().by_digest(&scope, &known.digest)
        {
            tracing::debug!(image = %reference, digest = %known.digest, "tag cache hit");
            return served(hit);
        }

        let digest = match client::resolve_digest(client, reference, credentials).await {
            Ok(digest) => digest,
            Err(e) if e.category() == OciErrorCategory::Infrastructure => {
                // The registry is unreachable, not saying "no": what the tag pointed at last is
                // a better answer than failing the reconcile. The tag stays stale, so the next
                // call checks again.
                let Some(stale) = self.cache().by_digest(&scope, &known.digest) else {
                    return Err(e);
                };
                tracing::warn!(image = %reference, digest = %known.digest, error = %e, "cannot re-check tag; serving the cached result");
                return served(stale);
            }
            Err(e) => return Err(e),
        };
        let cached = self.cache().by_digest(&scope, &digest);
        if let Some(hit) = cached {
            tracing::debug!(image = %reference, %digest, "tag re-resolved to a cached digest");
            self.cache()
                .store_tag(&scope, tag, &digest, self.clock.now());
            return served(hit);
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
        self.fetch(client, &pinned, credentials, &scope, Some(tag))
            .await
    }

    /// Fetches and parses; a result that depends only on the image's content (the metadata, or
    /// a label failure) is cached under its digest.
    async fn fetch(
        &self,
        client: Registry<'_>,
        reference: &ImageReference,
        credentials: &Credentials,
        scope: &Scope,
        tag: Option<&str>,
    ) -> Result<InspectedImage, OciError> {
        let fetched = client::fetch_config(client, reference, credentials).await?;
        let result = interpret(&fetched.labels).map(|metadata| InspectedImage {
            digest: fetched.digest.clone(),
            manifest_digest: fetched.manifest_digest,
            metadata,
        });
        match &result {
            Ok(image) => {
                tracing::debug!(image = %reference, digest = %image.digest, labels = image.labels().len(), "inspected image");
            }
            Err(failure) => {
                tracing::debug!(image = %reference, digest = %fetched.digest, ?failure, "image labels rejected");
            }
        }
        let now = self.clock.now();
        let mut cache = self.cache();
        cache.store_digest(scope, &fetched.digest, result.clone(), now);
        if let Some(tag) = tag {
            cache.store_tag(scope, tag, &fetched.digest, now);
        }
        drop(cache);
        result.map_err(|f| f.into_error(reference))
    }

    fn registry(&self) -> Registry<'_> {
        Registry {
            http: &self.http,
            transport: &self.transport,
            tokens: &self.tokens,
        }
    }

    fn cache(&self) -> MutexGuard<'_, InspectionCache<Cached>> {
        crate::cache::lock(&self.cache)
    }
}

/// A digest's cached outcome: the inspection, or why its labels were rejected (content
/// addressed too, so it never changes either).
type Cached = Result<InspectedImage, LabelFailure>;

/// A label failure, kept without the reference so one cache entry serves every name of it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelFailure {
    Invalid { label: String, reason: String },
    TooLarge { bytes: usize },
}

impl LabelFailure {
    fn into_error(self, reference: &ImageReference) -> OciError {
        match self {
            Self::Invalid { label, reason } => OciError::InvalidLabel { label, reason },
            Self::TooLarge { bytes } => OciError::LabelsTooLarge {
                reference: reference.to_string(),
                bytes,
                limit: MAX_LABEL_BYTES,
            },
        }
    }
}

/// The size limit, then the metadata.
fn interpret(labels: &BTreeMap<String, String>) -> Result<ImageMetadata, LabelFailure> {
    let bytes = label_bytes(labels);
    if bytes > MAX_LABEL_BYTES {
        return Err(LabelFailure::TooLarge { bytes });
    }
    parse_image_metadata(labels).map_err(|e| match e {
        OciError::InvalidLabel { label, reason } => LabelFailure::Invalid { label, reason },
        other => LabelFailure::Invalid {
            label: String::new(),
            reason: other.to_string(),
        },
    })
}

#[cfg(test)]
#[path = "unit_tests/inspector.rs"]
mod tests;
