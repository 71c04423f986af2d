//! The simulated output of AIM discovery and size-check Jobs under `kinfer render`.
//!
//! The log contract (what a discovery pod and a size-check pod print) has one home,
//! [`kinfer_testkit::simulator::aim`], shared with the benchmark harness; this module only
//! reads the model facts from render's input documents.

use std::collections::BTreeMap;

pub use kinfer_testkit::simulator::aim::{ModelFacts, install};

use super::input::Document;

/// Model facts by image, from the input AIMModels and AIMClusterModels.
pub fn models_by_image(docs: &[Document]) -> BTreeMap<String, ModelFacts> {
    kinfer_testkit::simulator::aim::models_by_image(docs.iter().map(|d| &d.value))
}
