//! AMD AIM Engine kinds, `aim.eai.amd.com/v1alpha1`.
//!
//! Typed custom resources compatible with the CRDs of upstream aim-engine (v0.2, commit
//! `9223504d74b0`): every spec field, default, enum, bound and CEL rule of upstream's schema is
//! reproduced, so an upstream manifest deserialises into these types and validates against the
//! CRDs [`crds`] returns. The one deliberate widening is [`AIMServiceState`], which also allows
//! `NotAvailable` (upstream's service status enum omits a value its operator derives). The one
//! narrowing is kube-derive's: `spec` is required at the root (upstream leaves it optional),
//! so the API server never stores an object these types cannot deserialise.
//!
//! - Models: [`AIMModel`], [`AIMClusterModel`] (image catalog entries; [`ImageMetadata`] is
//!   what their image labels are parsed into).
//! - Templates: [`AIMServiceTemplate`], [`AIMClusterServiceTemplate`].
//! - Services: [`AIMService`].
//! - Configuration: [`AIMRuntimeConfig`], [`AIMClusterRuntimeConfig`].
//! - Caching: [`AIMTemplateCache`], [`AIMArtifact`].
//! - Catalog sync: [`AIMClusterModelSource`].
//!
//! Shapes used by several kinds live in [`common`]; env vars are the crate-wide [`EnvVar`]
//! ([`crate::env`]), shared with ModelService. [`legacy`] reads kaiwo's `aim.silogen.ai`
//! AIMService and migrates it. Rules a schema cannot express are checked by the
//! [`Validate`] implementations of every kind.

pub mod artifact;
pub mod autoscaling;
pub mod common;
pub mod image_metadata;
pub mod legacy;
pub mod model;
pub mod model_source;
pub mod runtime_config;
pub mod schema_ext;
pub mod service;
pub mod template;
pub mod template_cache;
mod validate;

#[cfg(test)]
mod tests;

pub use artifact::{AIMArtifact, AIMArtifactSpec, AIMArtifactStatus};
pub use common::{
    AIMCpuRequirements, AIMGpuRequirements, AIMHardwareRequirements, AIMModelSource,
    AIMRuntimeParameters, AIMRuntimeRoutingConfig, AIMStatus, AIMStorageConfig, CachingMode,
    GatewayParentReference, ResolutionScope, ResolvedReference, TemplateScope,
};
pub use image_metadata::{ImageMetadata, ModelMetadata, OciMetadata, RecommendedDeployment};
pub use legacy::{LegacyAimService, LegacyAimServiceSpec, migrate};
pub use model::{AIMClusterModel, AIMClusterModelSpec, AIMModel, AIMModelSpec, AIMModelStatus};
pub use model_source::{
    AIMClusterModelSource, AIMClusterModelSourceSpec, AIMClusterModelSourceStatus,
};
pub use runtime_config::{
    AIMClusterRuntimeConfig, AIMClusterRuntimeConfigSpec, AIMRuntimeConfig, AIMRuntimeConfigSpec,
    AIMRuntimeConfigStatus,
};
pub use service::{AIMService, AIMServiceSpec, AIMServiceState, AIMServiceStatus};
pub use template::{
    AIMClusterServiceTemplate, AIMClusterServiceTemplateSpec, AIMServiceTemplate,
    AIMServiceTemplateSpec, AIMServiceTemplateSpecCommon, AIMServiceTemplateStatus,
};
pub use template_cache::{AIMTemplateCache, AIMTemplateCacheSpec, AIMTemplateCacheStatus};

pub use crate::env::{EnvVar, EnvVarSource, FileKeySelector};
pub use crate::validation::Validate;
pub use validate::shown;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// The API group of every AIM kind.
pub const GROUP: &str = "aim.eai.amd.com";

/// The API version of every AIM kind.
pub const VERSION: &str = "v1alpha1";

/// The CRDs of every AIM kind.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        AIMArtifact::crd(),
        AIMClusterModel::crd(),
        AIMClusterModelSource::crd(),
        AIMClusterRuntimeConfig::crd(),
        AIMClusterServiceTemplate::crd(),
        AIMModel::crd(),
        AIMRuntimeConfig::crd(),
        AIMService::crd(),
        AIMServiceTemplate::crd(),
        AIMTemplateCache::crd(),
    ]
}
