//! OCI image inspection for kinfer.
//!
//! The AIM model catalog is driven by container images: an AIMModel's image carries its model
//! metadata and recommended deployments as config labels. This crate reads them without pulling
//! layers, and lists repository tags for the cluster model source catalog.
//!
//! - [`ImageReference`]: parse and normalise `[registry/]repository[:tag][@digest]` (Docker Hub
//!   defaults: `docker.io`, `library/`, API host `registry-1.docker.io`).
//! - [`credentials_for`]: pick registry credentials from Kubernetes pull secrets
//!   ([`PullSecret`], `kubernetes.io/dockerconfigjson` or legacy `kubernetes.io/dockercfg`).
//! - [`Inspector::inspect`]: manifest (image indexes resolve to `linux/amd64`, else the first
//!   entry), then the config blob; the result is cached by digest, and tags are re-resolved after
//!   a TTL so a re-pushed tag is noticed. Time comes from an injectable [`Clock`].
//! - [`parse_image_metadata`]: `com.amd.aim.*` labels (falling back to `org.amd.silogen.*`) and
//!   `org.opencontainers.image.*` labels into [`kinfer_api::aim::ImageMetadata`]; Python-dict
//!   style `recommendedDeployments` are read with a real tokenizer.
//! - [`Inspector::list_tags`]: `/v2/<name>/tags/list`, following `Link` pagination.
//! - [`OciError::category`]: every failure is Auth, NotFound, Infrastructure or InvalidSpec.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kinfer_oci::OciError> {
//! use kinfer_oci::{Credentials, ImageReference, Inspector, InspectorConfig};
//!
//! let inspector = Inspector::new(InspectorConfig::default())?;
//! let image = ImageReference::parse_spec("amdenterpriseai/aim-qwen-qwen3-32b:0.8.5")?;
//! let inspected = inspector.inspect(&image, &Credentials::Anonymous).await?;
//! println!("{} has {} labels", inspected.digest, inspected.labels.len());
//! # Ok(())
//! # }
//! ```

mod auth;
mod cache;
mod client;
mod error;
mod inspector;
mod labels;
mod pydict;
mod reference;
mod tags;

pub use auth::{Credentials, DOCKER_CFG, DOCKER_CONFIG_JSON, PullSecret, credentials_for};
pub use cache::{Clock, ManualClock, SystemClock};
pub use error::{OciError, OciErrorCategory};
pub use inspector::{CachedEntries, InspectedImage, Inspector, InspectorConfig};
pub use kinfer_api::aim::ImageMetadata;
pub use labels::parse_image_metadata;
pub use pydict::{PyLiteralError, python_literal_to_json};
pub use reference::{DOCKER_HUB, DOCKER_HUB_API_HOST, ImageReference, ReferenceError};

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>(_: &T) {}

    #[test]
    fn futures_are_send() {
        fn check_future<F: std::future::Future + Send>(_: F) {}
        let Ok(inspector) = Inspector::new(InspectorConfig::default()) else {
            return;
        };
        assert_send_sync(&inspector);
        let Ok(r) = ImageReference::parse("a/b") else {
            return;
        };
        check_future(inspector.inspect(&r, &Credentials::Anonymous));
        check_future(inspector.list_tags(&r, &Credentials::Anonymous));
    }

    #[test]
    fn parse_spec_is_invalid_spec() {
        let e = ImageReference::parse_spec("UPPER/Case:!").err();
        assert_eq!(e.map(|e| e.category()), Some(OciErrorCategory::InvalidSpec));
    }
}
