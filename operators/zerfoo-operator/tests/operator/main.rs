//! Scenario tests of the Zerfoo operator against the in-process test cluster (kinfer-testkit)
//! with its workload simulator: upstream's ten cases re-expressed, plus the behaviour upstream
//! lacked. One binary, one module per theme; every test starts its own cluster.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers

mod autoscaling;
mod cache;
mod canary;
mod common;
mod reliability;
mod run;
mod upstream;
mod validation;
mod watches;
