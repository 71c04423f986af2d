//! GPU identity: which GPU a node has, how much memory it carries, what a template's GPU name
//! means, and which nodes a GPU model maps to.
//!
//! Contract: all facts come from one table, [`table`] ([`GPUS`], [`VENDORS`],
//! [`DEFAULT_GPU_PREFERENCE`]); the functions here only read it. Everything is pure: labels in,
//! values out.
//!
//! - [`GpuModel`]: a normalised model name ([`normalize`]).
//! - [`identify_node`]: one node's labels → models, VRAM and the [`Evidence`] (label as
//!   written) that named each model ([`labels`] holds the rules).
//! - [`ClusterGpus`]: every node → models present, how each was identified, `minVram`
//!   matching, and [`ClusterGpus::node_affinity`], the affinity that admits exactly the nodes
//!   identified as given models.
//! - [`device_ids`]: a model → its PCI device IDs.
//! - [`parse_quantity`]: a `minVram` quantity in bytes.

pub mod affinity;
pub mod cluster;
pub mod labels;
pub mod model;
pub mod node;
pub mod table;
pub mod vram;

pub use affinity::{NodeAffinity, Operator, Requirement, SelectorTerm, device_ids};
pub use cluster::{ClusterGpu, ClusterGpus};
pub use labels::{Basis, Evidence};
pub use model::{GpuModel, normalize};
pub use node::{NodeGpu, identify_node};
pub use table::{DEFAULT_GPU_PREFERENCE, GPUS, GpuSpec, VENDORS, Vendor, VendorSpec};
pub use vram::{ByteSize, Vram, VramSource};

/// A `minVram` quantity in bytes: kinfer-api's one quantity parser, exact and rounding up.
pub use kinfer_api::quantity::parse_bytes as parse_quantity;
