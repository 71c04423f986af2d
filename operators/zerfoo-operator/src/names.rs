//! The children's names: upstream's `<name>-primary`, `<name>-canary`, `<name>-svc`,
//! `<name>-hpa`, plus kinfer's `<name>-route`. Their one home is
//! [`kinfer_builders::naming::zerfoo`]; re-exported here for the reconciler's steps.

pub use kinfer_builders::naming::zerfoo::{Names, names};
