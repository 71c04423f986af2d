//! Model fetch: the runtime config and the image metadata.
//!
//! Contract: reads only. The metadata comes from `spec.imageMetadata` (never contacting the
//! registry), is skipped for custom models and when `discovery.extractMetadata=false` (which
//! keeps what status recorded earlier: disabling extraction never prunes templates), and is
//! otherwise read from the registry through the shared [`kinfer_oci::Inspector`] with the
//! model's pull secrets (namespace of the model, operator namespace for cluster models). The
//! inspector caches by digest and re-resolves the tag after its TTL, so a re-pushed tag is
//! noticed (NOTES section g #5). An infrastructure failure with metadata already in status
//! keeps that metadata (reported in the message) instead of degrading the model.

use kinfer_api::aim::{AIMModelSpec, ImageMetadata};
use kinfer_oci::{ImageReference, OciError};
use kinfer_state::{CategorizedError, ErrorCategory, Reason};
use kube::Client;

use crate::context::Context;
use crate::runtime_config::resolve;

/// Where the metadata came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Metadata {
    /// `spec.imageMetadata`.
    Spec(ImageMetadata),
    /// A custom model (`spec.modelSources`): no image metadata needed.
    Custom,
    /// `spec.discovery.extractMetadata=false`: the registry is not read; metadata read before
    /// (in status) is kept, so the templates it implied are not pruned.
    Disabled(Option<ImageMetadata>),
    /// Read from the registry.
    Inspected {
        /// The metadata.
        metadata: ImageMetadata,
        /// The digest the tag resolved to.
        digest: String,
    },
    /// The registry is unreachable; the metadata already in status is kept.
    Stale {
        /// The previous metadata.
        metadata: ImageMetadata,
        /// Why the re-check failed.
        error: String,
    },
    /// Reading failed.
    Failed(CategorizedError),
}

/// What the model's fetch step read.
#[derive(Debug)]
pub struct Fetched {
    /// The runtime config.
    pub runtime_config: resolve::Fetched,
    /// The image metadata.
    pub metadata: Metadata,
}

/// A precise condition reason for a registry error.
pub fn oci_reason(e: &OciError) -> Reason {
    Reason::custom(match e {
        OciError::InvalidReference { .. } => "InvalidImageReference",
        OciError::InvalidPullSecret { .. } => "InvalidPullSecret",
        OciError::InvalidLabel { .. } => "InvalidImageLabel",
        OciError::LabelsTooLarge { .. } => "ImageLabelsTooLarge",
        OciError::UnsupportedImage { .. } => "UnsupportedImage",
        OciError::Unauthorized { .. } => "ImageAuthFailure",
        OciError::NotFound { .. } => "ImageNotFound",
        OciError::Offline { .. } => "RegistryOffline",
        _ => "RegistryUnavailable",
    })
}

/// A registry error, categorised with its precise reason.
pub fn oci_error(e: &OciError) -> CategorizedError {
    CategorizedError::from_error(e).with_reason(oci_reason(e))
}

/// Reads the model's dependencies.
pub async fn fetch(
    ctx: &Context,
    client: &Client,
    spec: &AIMModelSpec,
    namespace: Option<&str>,
    previous: Option<&ImageMetadata>,
) -> Fetched {
    let runtime_config =
        resolve::read(ctx, client, namespace, spec.runtime_config_name.as_deref()).await;
    let metadata = metadata(ctx, client, spec, namespace, previous).await;
    Fetched {
        runtime_config,
        metadata,
    }
}

async fn metadata(
    ctx: &Context,
    client: &Client,
    spec: &AIMModelSpec,
    namespace: Option<&str>,
    previous: Option<&ImageMetadata>,
) -> Metadata {
    if let Some(m) = &spec.image_metadata {
        return Metadata::Spec(m.clone());
    }
    if !spec.model_sources.is_empty() {
        return Metadata::Custom;
    }
    if spec.discovery.as_ref().is_some_and(|d| !d.extract_metadata) {
        return Metadata::Disabled(previous.cloned());
    }
    let reference = match ImageReference::parse_spec(spec.image.trim()) {
        Ok(r) => r,
        Err(e) => return Metadata::Failed(oci_error(&e)),
    };
    let secrets_ns = namespace.unwrap_or(&ctx.settings.system_namespace);
    let secrets = match crate::secrets::fetch(client, secrets_ns, &spec.image_pull_secrets).await {
        Ok(s) => s,
        Err(e) => return Metadata::Failed(e),
    };
    match ctx
        .inspector
        .inspect_with_secrets(&reference, &secrets)
        .await
    {
        Ok(image) => Metadata::Inspected {
            metadata: image.metadata,
            digest: image.digest,
        },
        Err(e) => {
            let error = oci_error(&e);
            match previous {
                Some(prev) if error.category == ErrorCategory::Infrastructure => Metadata::Stale {
                    metadata: prev.clone(),
                    error: error.message,
                },
                _ => Metadata::Failed(error),
            }
        }
    }
}
