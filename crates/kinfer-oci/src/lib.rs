//! OCI image inspection for kinfer.
//!
//! The AIM model catalog is driven by container images: an AIMModel's image carries its model
//! metadata and recommended deployments as config labels. This crate reads them without pulling
//! layers, and lists repository tags for the cluster model source catalog.
//!
//! - [`ImageReference`]: parse and normalise `[registry/]repository[:tag][@digest]` (Docker Hub
//!   defaults: `docker.io`, `library/`, API host `registry-1.docker.io`).
//! - [`credential_candidates`]: the registry credentials Kubernetes pull secrets hold for an
//!   image, most specific first ([`PullSecret`], `kubernetes.io/dockerconfigjson` or legacy
//!   `kubernetes.io/dockercfg`), with the kubelet's matching rules; [`credentials_for`] is the
//!   first of them. [`Inspector::inspect_with_secrets`] and [`Inspector::list_tags_with_secrets`]
//!   try each in turn, like the kubelet.
//! - [`Inspector::inspect`]: manifest (image indexes resolve to `linux/amd64`, else the first
//!   entry), then the config blob; the result is cached by digest, and tags are re-resolved after
//!   a TTL so a re-pushed tag is noticed; when that re-check hits an Infrastructure error the
//!   cached result is served. Label failures are cached by digest too. Time comes from an
//!   injectable [`Clock`].
//! - [`parse_image_metadata`]: `com.amd.aim.*` labels (falling back to `org.amd.silogen.*`) and
//!   `org.opencontainers.image.*` labels into [`kinfer_api::aim::ImageMetadata`]; Python-dict
//!   style `recommendedDeployments` are read with a real tokenizer.
//! - [`Inspector::list_tags`]: `/v2/<name>/tags/list`, following `Link` pagination.
//! - [`Inspector::list_repositories`]: a registry's `/v2/_catalog` (bearer-token challenge or
//!   basic auth, `Link` pagination), or Docker Hub's namespace repositories API for
//!   `docker.io` patterns such as `amdenterpriseai/aim-*`.
//! - [`InspectorConfig::offline`]: no registry is ever contacted; every call fails at once with
//!   [`OciError::Offline`] (what `kinfer render` uses).
//! - `test_support` (feature `test-support`): the real-registry harness (Debian's
//!   `docker-registry` as a child process, image pushing) shared by this crate's tests and the
//!   operators' scenario tests.
//! - [`OciError::category`]: every failure is Auth, NotFound, Infrastructure or InvalidSpec.
//!
//! # Resource limits
//!
//! What a registry sends is bounded where this crate reads it, on the project's own HTTP
//! client (no registry library in between): manifests and image indexes at 4 MiB, token
//! answers and error bodies at 64 KiB (only a short, sanitised excerpt of an error body reaches
//! an error message), config blobs at their declared size (at most 8 MiB), tag list pages at
//! 4 MiB and the tag list at [`InspectorConfig::max_tags`], labels at [`MAX_LABEL_BYTES`]
//! (256 KiB) in total — so the cache is bounded in bytes as well as entries — and every call
//! at [`InspectorConfig::timeout`]. Redirects never go from HTTPS to plain HTTP, and a
//! registry on HTTPS cannot send credentials to a token realm on plain HTTP. What is fetched
//! by digest is verified against it. Pull-secret host globs match in O(n·m).
//!
//! ```no_run
//! # async fn demo() -> Result<(), kinfer_oci::OciError> {
//! use kinfer_oci::{Credentials, ImageReference, Inspector, InspectorConfig};
//!
//! let inspector = Inspector::new(InspectorConfig::default())?;
//! let image = ImageReference::parse_spec("amdenterpriseai/aim-qwen-qwen3-32b:0.8.5")?;
//! let inspected = inspector.inspect(&image, &Credentials::Anonymous).await?;
//! println!("{} has {} labels", inspected.digest, inspected.labels().len());
//! # Ok(())
//! # }
//! ```

mod auth;
mod cache;
mod catalog;
mod client;
mod error;
mod inspector;
mod labels;
mod pydict;
mod reference;
mod registry;
mod tags;
#[cfg(feature = "test-support")]
pub mod test_support;

pub use auth::{
    Credentials, DOCKER_CFG, DOCKER_CONFIG_JSON, PullSecret, credential_candidates, credentials_for,
};
pub use cache::{Clock, ManualClock, SystemClock};
pub use catalog::DOCKER_HUB_API;
pub use error::{OciError, OciErrorCategory};
pub use inspector::{CachedEntries, InspectedImage, Inspector, InspectorConfig, MAX_LABEL_BYTES};
pub use kinfer_api::aim::ImageMetadata;
pub use labels::parse_image_metadata;
pub use pydict::{PyLiteralError, python_literal_to_json};
pub use reference::{DOCKER_HUB, DOCKER_HUB_API_HOST, ImageReference, ReferenceError};
pub use registry::ensure_crypto_provider;

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>(_: &T) {}

    #[test]
    #[allow(clippy::expect_used)]
    fn futures_are_send() {
        fn check_future<F: std::future::Future + Send>(_: F) {}
        let inspector = Inspector::new(InspectorConfig::default()).expect("inspector");
        assert_send_sync(&inspector);
        let r = ImageReference::parse("a/b").expect("reference");
        check_future(inspector.inspect(&r, &Credentials::Anonymous));
        check_future(inspector.inspect_with_secrets(&r, &[]));
        check_future(inspector.list_tags(&r, &Credentials::Anonymous));
        check_future(inspector.list_tags_with_secrets(&r, &[]));
        check_future(inspector.list_repositories("ghcr.io", "org/", &Credentials::Anonymous));
        check_future(inspector.list_repositories_with_secrets("ghcr.io", "org/", &[]));
    }

    #[test]
    fn parse_spec_is_invalid_spec() {
        let e = ImageReference::parse_spec("UPPER/Case:!").err();
        assert_eq!(e.map(|e| e.category()), Some(OciErrorCategory::InvalidSpec));
    }
}
