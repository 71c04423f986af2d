//! # kinfer-bench
//!
//! The harness behind `cargo xtask bench`: it starts the test cluster (kinfer-testkit, with
//! the workload simulator) in its own process, runs a real operator binary (release build)
//! against it as a child process, creates N custom resources, and measures time to
//! convergence, API requests by verb per CR, writes during forced resyncs and after a
//! restart, reconcile latency from the operator's own histograms, and the operator's resident
//! memory from `/proc/<pid>/status`.
//!
//! The harness reads and creates objects in-process ([`kinfer_testkit::TestCluster::objects`],
//! [`kinfer_testkit::TestCluster::create_object`]), so the cluster's request counters hold the
//! operator's requests only.
//!
//! Modules: [`scenario`] (what each operator is given and what convergence means),
//! [`conflicts`] (409s as notes),
//! [`operator`] (the child process), [`rss`] (memory), [`prom`] (scraping and histogram
//! quantiles), [`report`] (the table and JSON), [`run`] (the phases of one scenario).
//!
//! The fault-matrix and bad-input suites live in `tests/` and run the operators in-process.

pub mod conflicts;
pub mod operator;
pub mod prom;
pub mod report;
pub mod rss;
pub mod run;
pub mod scenario;
