//! AIMRuntimeConfig / AIMClusterRuntimeConfig.
//!
//! - [`merge`]: the namespace config merged over the cluster config, field by field, with the
//!   deprecated fields migrated (pure).
//! - [`resolve`]: what every other controller does with a `runtimeConfigName`: fetch both
//!   scopes, merge, and report a `RuntimeConfig` upstream component (missing non-default name:
//!   MissingUpstream, `ConfigValid=False/ReferenceNotFound`).
//! - [`pipeline`]: the configs' own controller, which reports whether a config is valid.

pub mod merge;
pub mod pipeline;
pub mod resolve;

pub use pipeline::{RuntimeConfigKind, RuntimeConfigPipeline};
pub use resolve::{DEFAULT_NAME, Resolved};
