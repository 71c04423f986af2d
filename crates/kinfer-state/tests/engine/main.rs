//! The engine against the in-process test cluster (kinfer-testkit): a toy controller whose
//! `Toy` objects own one ConfigMap per entry of `spec.children` (plus optional shared and
//! workload children). Request counters on the server prove the zero-write property; fault
//! injection proves convergence.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)] // test helpers

mod common;
mod faults;
mod handover;
mod objects;
mod outdated;
mod ownership;
mod progress;
mod requeue;
mod status;
mod steady;
mod stores;
