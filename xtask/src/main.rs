//! Project automation, run as `cargo xtask <command>`.
//!
//! - `gen-crds [--check]`: write one YAML per CRD to `deploy/crds/`, or fail when the committed
//!   files differ from what the types generate.
//! - `gen-docs [--check]`: write the API reference `docs/reference/*.md` from the CRD schemas,
//!   or fail when the committed pages differ.
//! - `ci`: the test command of the README and `.ci/run`.
//! - `bench [ARGS...]`: build `kinfer-bench` and the operators (release) and run the benchmarks.
//! - `image [--tag T] [--registry R] [--push] [--only BINARY]...`: the OCI images of the
//!   operators and of `kinfer` (docs/images.md).
//! - `control-plane --kubeconfig PATH [--audit-log PATH]`: run the real control plane of the
//!   tests until SIGTERM or SIGINT.

mod bench;
mod ci;
mod control_plane;
mod gen_crds;
mod gen_docs;
mod generated;
mod image;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "xtask", about = "kinfer project automation")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate deploy/crds/*.yaml from the kinfer-api types.
    GenCrds {
        /// Fail instead of writing when the committed files differ.
        #[arg(long)]
        check: bool,
    },
    /// Generate docs/reference/*.md from the CRD schemas.
    GenDocs {
        /// Fail instead of writing when the committed pages differ.
        #[arg(long)]
        check: bool,
    },
    /// Install missing test tools, check generated files, run every test.
    Ci,
    /// Build the benchmark harness and operators (release) and run the benchmarks; every
    /// argument goes to `kinfer-bench` (`--scenario`, `--n`, `--json`, `--help`, ...).
    Bench {
        /// Arguments for `kinfer-bench`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build the OCI images of the operators and of `kinfer` (static musl binaries, no
    /// container engine) into `target/images/<binary>/`, and push them with `--push`.
    Image(image::Args),
    /// Start the real control plane the tests use (etcd, kube-apiserver,
    /// kube-controller-manager), write its admin kubeconfig, print `ready`, run until SIGTERM
    /// or SIGINT.
    ControlPlane {
        /// Where to write the admin kubeconfig.
        #[arg(long)]
        kubeconfig: std::path::PathBuf,
        /// Where the API server writes its audit log (JSON lines, every request at the
        /// Metadata level); by default inside its run directory, removed on stop.
        #[arg(long)]
        audit_log: Option<std::path::PathBuf>,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::GenCrds { check } => gen_crds::run(check),
        Command::GenDocs { check } => gen_docs::run(check),
        Command::Ci => ci::run(&gen_crds::workspace_root()),
        Command::Bench { args } => bench::run(&gen_crds::workspace_root(), &args),
        Command::Image(args) => image::run(&gen_crds::workspace_root(), &args),
        Command::ControlPlane {
            kubeconfig,
            audit_log,
        } => control_plane::run(kubeconfig, audit_log),
    }
}
