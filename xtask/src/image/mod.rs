//! `cargo xtask image [--tag T] [--registry R] [--push] [--only NAME]...`: the OCI images of the
//! operators and of `kinfer`, built without a container engine.
//!
//! 1. `cargo build --release --locked --target x86_64-unknown-linux-musl` of the four binaries:
//!    statically linked against musl, whose resolver reads `/etc/hosts` and
//!    `/etc/resolv.conf` itself (a static glibc binary would need NSS modules the image does not
//!    have). The cargo home and the target directory are remapped (`--remap-path-prefix`);
//!    cargo names the workspace's sources relative to the checkout; `SOURCE_DATE_EPOCH` is the
//!    commit's time.
//! 2. For each binary, the image of [`layout`]: a base layer (`/etc/passwd` and `/etc/group`
//!    with uid and gid 65532, the build machine's CA bundle, `/tmp`, `/home/nonroot`) and the
//!    binary's layer; no shell, no package manager; `User 65532:65532`; the
//!    `org.opencontainers.image.*` labels.
//! 3. Written as an OCI image layout under `target/images/<binary>/`; with `--push`, pushed to
//!    `<registry>/<binary>:<tag>` ([`push`]).
//!
//! The same commit and toolchain give the same digests, from any directory.

pub mod layer;
pub mod layout;
mod push;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::ci::{cargo, step};

/// The target every image binary is built for.
pub const TARGET: &str = "x86_64-unknown-linux-musl";

/// The binaries that get an image, with their package.
pub const BINARIES: [(&str, &str); 4] = [
    ("aim-operator", "aim-operator"),
    ("kinfer", "kinfer-cli"),
    ("modelservice-operator", "modelservice-operator"),
    ("zerfoo-operator", "zerfoo-operator"),
];

/// Options of `cargo xtask image`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The tag of every image (default: the workspace version).
    #[arg(long)]
    pub tag: Option<String>,
    /// The registry (`host[:port][/path]`) `--push` pushes to.
    #[arg(long, default_value = "ghcr.io/kinfer")]
    pub registry: String,
    /// Push each image to `<registry>/<binary>:<tag>` (credentials: `--username` and the
    /// `KINFER_REGISTRY_PASSWORD` environment variable, else anonymous).
    #[arg(long)]
    pub push: bool,
    /// Registry user name for `--push`.
    #[arg(long)]
    pub username: Option<String>,
    /// Reach the registry over plain HTTP (a local test registry).
    #[arg(long)]
    pub insecure: bool,
    /// Build only these binaries (repeatable; default: all four).
    #[arg(long = "only", value_name = "BINARY")]
    pub only: Vec<String>,
    /// Where the image layouts go (default: `<target dir>/images`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The checkout to build (default: this workspace).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
}

pub fn run(default_root: &Path, args: &Args) -> Result<()> {
    let root = &args
        .workspace
        .clone()
        .unwrap_or_else(|| default_root.to_owned());
    let selected: Vec<(&str, &str)> = BINARIES
        .iter()
        .copied()
        .filter(|(bin, _)| args.only.is_empty() || args.only.iter().any(|o| o == bin))
        .collect();
    if selected.is_empty() {
        bail!(
            "--only names no image binary (one of: {})",
            BINARIES.map(|(b, _)| b).join(", ")
        );
    }
    let epoch = commit_time(root)?;
    let revision = git(root, &["rev-parse", "HEAD"])?;
    let tag = args
        .tag
        .clone()
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned());
    let target_dir = target_dir(root);
    build_binaries(root, &target_dir, &selected, epoch)?;
    let ca_bundle = std::fs::read("/etc/ssl/certs/ca-certificates.crt").context(
        "reading the CA bundle /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates)",
    )?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| target_dir.join("images"));
    let mut built = Vec::new();
    for (bin, _) in &selected {
        let path = target_dir.join(TARGET).join("release").join(bin);
        let binary = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let image = layout::build(&layout::Spec {
            name: bin,
            binary: &binary,
            ca_bundle: &ca_bundle,
            epoch,
            tag: &tag,
            revision: &revision,
            source: env!("CARGO_PKG_REPOSITORY"),
            licenses: env!("CARGO_PKG_LICENSE"),
        })?;
        let dir = layout::write(&image, &out.join(bin), &tag)?;
        println!("{bin} {} {}", image.manifest_digest, dir.display());
        built.push(((*bin).to_owned(), image));
    }
    if args.push {
        push::all(args, &tag, &built)?;
    }
    Ok(())
}

/// The build's `--remap-path-prefix` flags and static linking. The checkout's own path needs
/// no remapping (cargo names workspace sources relative to it) and must not appear here: the
/// flags are part of every unit's fingerprint, so a path in them would rebuild every
/// dependency per checkout.
fn rustflags(target_dir: &Path) -> String {
    let cargo_home = std::env::var("CARGO_HOME").unwrap_or_else(|_| {
        std::env::var("HOME")
            .map(|h| format!("{h}/.cargo"))
            .unwrap_or_default()
    });
    let mut flags = vec!["-C target-feature=+crt-static".to_owned()];
    for (from, to) in [
        (cargo_home, "/cargo"),
        (target_dir.display().to_string(), "/target"),
    ] {
        if !from.is_empty() {
            flags.push(format!("--remap-path-prefix={from}={to}"));
        }
    }
    flags.join(" ")
}

fn build_binaries(
    root: &Path,
    target_dir: &Path,
    selected: &[(&str, &str)],
    epoch: u64,
) -> Result<()> {
    // The musl target, when rustup manages the toolchain (a no-op once installed).
    if Command::new("rustup").arg("--version").output().is_ok() {
        step(
            "adding the x86_64-unknown-linux-musl target",
            Command::new("rustup").args(["target", "add", TARGET]),
        )?;
    }
    // ring compiles C for the target: musl-gcc (Debian's musl-tools).
    step(
        "installing musl-gcc when missing",
        Command::new("bash")
            .arg(root.join("scripts/install-test-deps.sh"))
            .arg("musl-gcc"),
    )?;
    let mut cmd = Command::new(cargo());
    cmd.args(["build", "--release", "--locked", "--target", TARGET])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", target_dir)
        .env("RUSTFLAGS", rustflags(target_dir))
        .env("SOURCE_DATE_EPOCH", epoch.to_string())
        .env("CC_x86_64_unknown_linux_musl", "musl-gcc")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    for (bin, package) in selected {
        cmd.args(["-p", package, "--bin", bin]);
    }
    step("building the static binaries", &mut cmd)
}

/// The target directory: `CARGO_TARGET_DIR`, else `<root>/target`.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// `SOURCE_DATE_EPOCH` when set, else the time of the checked-out commit.
fn commit_time(root: &Path) -> Result<u64> {
    if let Ok(epoch) = std::env::var("SOURCE_DATE_EPOCH") {
        return epoch.parse().context("SOURCE_DATE_EPOCH is not a number");
    }
    git(root, &["log", "-1", "--format=%ct"])?
        .parse()
        .context("the commit time")
}

fn git(root: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .context("running git")?;
    if !out.status.success() {
        bail!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
