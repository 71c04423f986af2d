//! Test support (feature `test-support`): a real OCI registry for tests, shared by this crate's
//! registry tests and the operators' scenario tests so there is one harness, not copies.
//!
//! - [`registry`]: Debian's `docker-registry` as a child process on `127.0.0.1:0`, without
//!   auth, with htpasswd (HTTP basic) or with a bearer-token realm.
//! - [`images`]: images built and pushed with `oci-client` (a config blob carrying labels, a
//!   tiny layer, an OCI manifest; image indexes).
//!
//! Test code: it panics on setup failures instead of returning errors, and is compiled only
//! with the feature (dev-dependencies enable it).
#![allow(clippy::expect_used, clippy::panic, clippy::missing_panics_doc)]

pub mod images;
pub mod registry;
