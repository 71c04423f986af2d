//! Compatibility re-export: leader election now lives in [`kinfer_operator::leader`].
//!
//! `modelservice-operator` and `aim-operator` still name `zerfoo_operator::leader`; this
//! module goes away once they depend on `kinfer-operator` directly.

pub use kinfer_operator::leader::{Attempt, LeaderElector, LeaderError, LeaseSettings};
