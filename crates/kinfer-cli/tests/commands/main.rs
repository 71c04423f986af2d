//! `kinfer render`, `demo` and `explain template` run as a user runs them: the built binary,
//! its stdout, stderr and exit code.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod demo;
mod examples;
mod explain;
mod invalid;
mod outcomes;
mod render;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The repository's examples directory.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Runs `kinfer` with `args` (quiet) and returns its output.
pub fn kinfer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kinfer"))
        .arg("--quiet")
        .args(args)
        .output()
        .expect("kinfer runs")
}

/// Runs `kinfer` and fails the test unless it exits 0; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = kinfer(args);
    assert!(
        out.status.success(),
        "kinfer {args:?} exited {:?}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// The documents of a multi-document YAML stream.
pub fn yaml_documents(text: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).expect("render prints YAML");
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

/// A temporary file with `text`, unique to this test process and `name`.
pub fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("kinfer-cli-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("write temp file");
    path
}
