//! The conformance suite (`tests/conformance`) against the real control plane: each behaviour
//! the in-process cluster promises, checked on a real kube-apiserver with etcd and the
//! controller manager. Each test works in a namespace of its own on the one control plane of
//! this binary. The suite's fault-injection, simulator and entry-point modules test
//! capabilities only the in-process cluster has and are not included; tests elsewhere that
//! need one say so and return (`common::skip_external`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    clippy::needless_pass_by_value
)]
#![recursion_limit = "256"]

#[path = "../conformance/apply.rs"]
mod apply;
#[path = "../conformance/common.rs"]
mod common;
#[path = "../conformance/crud.rs"]
mod crud;
#[path = "../conformance/discovery.rs"]
mod discovery;
#[path = "../conformance/lifecycle.rs"]
mod lifecycle;
#[path = "../conformance/patch.rs"]
mod patch;
#[path = "../conformance/runtime.rs"]
mod runtime;
#[path = "../conformance/scale.rs"]
mod scale;
#[path = "../conformance/schema.rs"]
mod schema;
#[path = "../conformance/secrets.rs"]
mod secrets;
#[path = "../conformance/watch.rs"]
mod watch;

/// Always the real control plane.
fn source() -> kinfer_testkit::Source {
    kinfer_testkit::Source::ControlPlane
}
