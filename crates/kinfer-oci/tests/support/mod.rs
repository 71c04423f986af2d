//! Test harness: a real registry process, a counting proxy, and image builders.

pub mod images;
pub mod proxy;
pub mod registry;
