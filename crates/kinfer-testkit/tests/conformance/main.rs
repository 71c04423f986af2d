//! Conformance suite: one test per behaviour of the test cluster, through the real
//! `kube::Client`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    clippy::needless_pass_by_value
)]
#![recursion_limit = "256"]

mod apply;
mod common;
mod crud;
mod discovery;
mod entry;
mod faults;
mod lifecycle;
mod patch;
mod runtime;
mod scale;
mod schema;
mod secrets;
mod simulator;
mod watch;

/// The cluster the environment names (`KINFER_TEST_CLUSTER`, `KINFER_TEST_KUBECONFIG`; the
/// in-process one by default).
fn source() -> kinfer_testkit::Source {
    kinfer_testkit::Source::from_env().expect("KINFER_TEST_CLUSTER")
}
