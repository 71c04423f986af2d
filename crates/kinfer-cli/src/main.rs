//! `kinfer`: the front door to kinfer's operators.
//!
//! Subcommands arrive with their issues; this release has `crds`, `inspect image` and
//! `cluster`.
//! Exit codes: 0 success, 1 runtime failure, 2 usage error (clap's default).

mod cluster;
mod inspect;

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "kinfer",
    version,
    about = "Kubernetes operators for LLM inference serving"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print every CRD kinfer defines, as multi-document YAML (what `cargo xtask gen-crds`
    /// writes to deploy/crds).
    Crds,
    /// Run the in-process test cluster as a standalone API server on loopback, with a
    /// kubeconfig for kubectl and the operators, until ctrl-c or SIGTERM.
    Cluster(cluster::ClusterArgs),
    /// Read metadata from the outside world without touching a cluster.
    #[command(subcommand)]
    Inspect(InspectCommand),
}

#[derive(Subcommand, Debug)]
enum InspectCommand {
    /// Print the AIM metadata read from an image's labels, as YAML usable as
    /// `spec.imageMetadata`.
    Image(inspect::ImageArgs),
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kinfer: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Crds => {
            let yaml = kinfer_api::crds::all_yaml()?;
            std::io::stdout()
                .lock()
                .write_all(yaml.as_bytes())
                .context("writing to stdout")
        }
        Command::Cluster(args) => cluster::run(args),
        Command::Inspect(InspectCommand::Image(args)) => {
            let yaml = inspect::run(&args)?;
            std::io::stdout()
                .lock()
                .write_all(yaml.as_bytes())
                .context("writing to stdout")
        }
    }
}
