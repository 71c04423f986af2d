//! Test support for CRD schemas: where the shared reference data lives, validation of objects
//! against a CRD's `openAPIV3Schema`, and a field-by-field comparison of two CRDs.
//!
//! Used by tests and the testkit (never at an operator's run time). The reference data in
//! `../shared/` is read by path, never copied into the project: [`shared_dir`] finds it, and
//! when it is absent a test says it skipped, except under CI (`CI` set), where the absence is
//! a failure.

mod compare;
mod shared;
mod validate;

pub use compare::{CompareOptions, Difference, FieldFacts, compare_crds, field_paths};
pub use shared::{load_yaml_documents, shared_dir, workspace_root};
pub use validate::{SchemaError, SchemaValidator};
