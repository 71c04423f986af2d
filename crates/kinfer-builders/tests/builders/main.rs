//! Builder tests: every object validated against its schema (upstream CRDs in
//! `../shared/upstream-crds/`, our subset CRDs, k8s-openapi round trips), snapshotted from the
//! YAML inputs in `tests/inputs/`, and single-field asserts per behaviour.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::missing_panics_doc)]

mod common;

mod deployment;
mod discovery_job;
mod epp;
mod gateway;
mod kserve;
mod platform;
mod restricted;
mod subset;
mod zerfoo;
