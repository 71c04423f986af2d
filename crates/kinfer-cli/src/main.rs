//! `kinfer`: the front door to kinfer's operators.
//!
//! Subcommands: `render` (the offline plan of what the operators create), `demo` (render of
//! `examples/` with a summary), `explain template` (why a template was or was not chosen),
//! `crds`, `cluster`, `inspect image`. Exit codes are [`exit`]'s; progress goes to stderr
//! ([`progress`]) unless `--quiet`; logs of the in-process operators are off unless
//! `RUST_LOG` asks for them.

mod cluster;
mod demo;
mod exit;
mod explain;
mod inspect;
mod progress;
mod render;

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "kinfer",
    version,
    about = "Kubernetes operators for LLM inference serving",
    after_help = exit::HELP
)]
struct Cli {
    /// No progress or warnings on stderr (errors are still printed).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print what the operators would create for the given manifests, offline: an embedded
    /// API server runs the three operators and a workload simulator until nothing is left to
    /// reconcile.
    #[command(after_help = exit::HELP)]
    Render(render::RenderArgs),
    /// Render `examples/` and print a readable summary: the objects created per input, their
    /// conditions and timing.
    #[command(after_help = exit::HELP)]
    Demo(demo::DemoArgs),
    /// Explain a decision of an operator.
    #[command(subcommand)]
    Explain(ExplainCommand),
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
enum ExplainCommand {
    /// Which AIM templates were candidates for a service, which filter removed each, the
    /// preference order and ties.
    #[command(after_help = exit::HELP)]
    Template(explain::TemplateArgs),
}

#[derive(Subcommand, Debug)]
enum InspectCommand {
    /// Print the AIM metadata read from an image's labels, as YAML usable as
    /// `spec.imageMetadata`.
    Image(inspect::ImageArgs),
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::from(exit::SUCCESS),
        Err(error) => {
            eprintln!("kinfer: {error:#}");
            ExitCode::from(exit::code_for(&error))
        }
    }
}

fn print(text: &str) -> Result<()> {
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing to stdout")
}

fn run(cli: Cli) -> Result<()> {
    let progress = progress::Progress::new(cli.quiet);
    match cli.command {
        Command::Render(args) => render::run(&args, &progress),
        Command::Demo(args) => demo::run(&args, &progress),
        Command::Explain(ExplainCommand::Template(args)) => explain::run(&args, &progress),
        Command::Crds => print(&kinfer_api::crds::all_yaml()?),
        Command::Cluster(args) => cluster::run(args),
        Command::Inspect(InspectCommand::Image(args)) => print(&inspect::run(&args)?),
    }
}
