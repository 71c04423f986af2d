//! Template selection that explains itself, and the GPU identity table.
//!
//! An AIMService that names no template gets one chosen among the model's candidate templates
//! (namespace AIMServiceTemplates and AIMClusterServiceTemplates). This crate makes that
//! choice as a pure function — no client, clock, randomness or I/O — and says why: every
//! candidate gets a [`Verdict`], and the [`Selection`] renders as a condition message or as the
//! table `kinfer explain template` prints.
//!
//! # Rules
//!
//! 1. Only Ready templates.
//! 2. Only `optimized` profiles unless the service sets `allowUnoptimized` (then preview and
//!    unoptimized are admitted and rank after optimized).
//! 3. The service's overrides (metric, precision, GPU model, GPU count) must match,
//!    case-insensitively, GPU names normalised ([`gpu::normalize`]).
//! 4. The template's GPU model must be present in the cluster; GPU-less templates pass.
//! 5. Rank, lower is better: namespace before cluster, profile type, GPU preference
//!    ([`Preferences`], default [`gpu::DEFAULT_GPU_PREFERENCE`]), latency before throughput,
//!    precision fp4, int4, fp8, int8, fp16, bf16, fp32. Unknown values rank last.
//! 6. A tie at the best rank is reported ([`Outcome::Ambiguous`]), never broken.
//!
//! The [`gpu`] module turns node labels into GPU models and VRAM from one table, normalises
//! model names, matches `minVram`, records how each model was identified, and builds the node
//! affinity that admits exactly the nodes identified as given models.
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeSet;
//! use kinfer_select::{Candidate, Outcome, Request, select};
//! use kinfer_select::gpu::GpuModel;
//!
//! let cluster: BTreeSet<GpuModel> = GpuModel::new("MI300X").into_iter().collect();
//! let candidates = [
//!     Candidate::new("qwen-mi300x-lat-fp8").gpu("MI300X", 1).metric("latency").precision("fp8"),
//!     Candidate::new("qwen-mi300x-thr-fp16").gpu("MI300X", 1).metric("throughput").precision("fp16"),
//!     Candidate::new("qwen-mi325x-lat-fp8").gpu("MI325X", 1).metric("latency").precision("fp8"),
//! ];
//! let selection = select(&candidates, &Request::default(), &cluster);
//!
//! assert_eq!(selection.chosen().map(|c| c.name.as_str()), Some("qwen-mi300x-lat-fp8"));
//! assert_eq!(selection.outcome.reason().to_string(), "Resolved");
//! let mi325x = selection.verdict_for("qwen-mi325x-lat-fp8").expect("a verdict per candidate");
//! assert_eq!(mi325x.verdict.to_string(), "RequiredGPUNotInCluster");
//! let thr = selection.verdict_for("qwen-mi300x-thr-fp16").expect("a verdict per candidate");
//! assert_eq!(thr.detail(), "metric throughput ranks after latency");
//! println!("{selection}"); // the `kinfer explain template` table
//! ```

#![cfg_attr(test, allow(clippy::expect_used))]

mod candidate;
mod error;
mod explain;
mod filter;
pub mod gpu;
mod rank;
mod select;
mod status;
mod verdict;

pub use candidate::{
    ABSENT, Candidate, Metric, NotReady, Precision, ProfileType, Request, Scope, TemplateStatus,
};
pub use error::Error;
pub use explain::{MAX_LISTED, OutcomeReason};
pub use rank::{Preferences, RankField, RankKey, UNKNOWN};
pub use select::{Outcome, Selection, select, select_with};
pub use verdict::{
    CandidateVerdict, Filter, OverrideField, OverrideMismatch, Reason, Rejection, Verdict,
};
