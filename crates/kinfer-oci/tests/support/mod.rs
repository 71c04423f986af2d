//! Test harness: a real registry process, a token realm, a counting proxy, image builders and
//! fixtures. Each test binary uses part of it.
#![allow(dead_code, unused_imports)]

pub mod fixtures;
pub mod proxy;
pub mod token;

pub use kinfer_oci::test_support::{images, registry};
