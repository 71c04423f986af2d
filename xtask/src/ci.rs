//! `cargo xtask ci`: the project's test command, exactly what `.ci/run` and the README run.
//!
//! 1. installs the system tools the tests need when missing (`scripts/install-test-deps.sh`);
//! 2. builds the real control plane the tests run against, or finds it in its cache
//!    (`scripts/build-k8s.sh`: etcd, kube-apiserver, kube-controller-manager and kubectl from
//!    the pins in `tools/k8s`, with Go), and hands its directory to the tests
//!    (`KINFER_K8S_BIN_DIR`), so a cold build shows as a step of its own;
//! 3. checks that `deploy/crds` and `docs/reference` match the types (`gen-crds --check`,
//!    `gen-docs --check`) and that the dependency tree holds a single kube and k8s-openapi;
//! 4. runs every test of the workspace.
//!
//! Formatting and clippy run in the GitHub workflow beside it; they are not repeated here so a
//! 2-core CI machine spends its time on tests.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

pub fn run(root: &Path) -> Result<()> {
    step(
        "installing test dependencies",
        Command::new("bash")
            .arg(root.join("scripts/install-test-deps.sh"))
            .current_dir(root),
    )?;
    let k8s = control_plane_binaries()?;
    crate::gen_crds::run(true)?;
    crate::gen_docs::run(true)?;
    single_kube(root)?;
    step(
        "running the workspace tests",
        Command::new(cargo())
            .args(["test", "--workspace", "--locked", "--no-fail-fast"])
            .env("KINFER_K8S_BIN_DIR", k8s)
            .current_dir(root),
    )
}

/// Builds (or finds) the control plane's binaries (`scripts/build-k8s.sh`, through the
/// harness the tests use); their directory.
fn control_plane_binaries() -> Result<std::path::PathBuf> {
    eprintln!("xtask: building or reusing the real control plane (scripts/build-k8s.sh)");
    let started = std::time::Instant::now();
    let dir = kinfer_testkit::control_plane::binaries::dir().context(
        "the real control plane is built with Go 1.26 from the Go module proxy \
         (docs/development.md)",
    )?;
    eprintln!(
        "xtask ci: control plane binaries in {} ({:.0} s)",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(dir)
}

/// Two kube or k8s-openapi versions in one tree means two incompatible sets of types (a
/// `gateway-api` upgrade that moved ahead of ours, say): fail early with the culprits.
fn single_kube(root: &Path) -> Result<()> {
    let output = Command::new(cargo())
        .args([
            "tree",
            "--workspace",
            "--duplicates",
            "--edges",
            "normal",
            "--depth",
            "0",
        ])
        .current_dir(root)
        .output()
        .context("running cargo tree")?;
    if !output.status.success() {
        bail!(
            "cargo tree failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let tree = String::from_utf8_lossy(&output.stdout);
    let duplicated: Vec<&str> = tree
        .lines()
        .filter(|line| {
            [
                "kube ",
                "kube-core ",
                "kube-client ",
                "kube-runtime ",
                "k8s-openapi ",
            ]
            .iter()
            .any(|name| line.starts_with(name))
        })
        .collect();
    if !duplicated.is_empty() {
        bail!("more than one version of: {}", duplicated.join(", "));
    }
    eprintln!("xtask ci: one kube, one k8s-openapi");
    Ok(())
}

pub(crate) fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

pub(crate) fn step(what: &str, command: &mut Command) -> Result<()> {
    eprintln!("xtask: {what}");
    let status = command
        .status()
        .with_context(|| format!("{what}: could not start {command:?}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
