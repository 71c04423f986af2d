//! Compatibility re-export: the admin server now lives in [`kinfer_operator::server`].
//!
//! `modelservice-operator` and `aim-operator` still name `zerfoo_operator::server`; this
//! module goes away once they depend on `kinfer-operator` directly.

pub use kinfer_operator::server::{Endpoints, ServerError, bind, serve};
