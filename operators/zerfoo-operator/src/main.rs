//! `zerfoo-operator run|crds`: parses flags, initialises tracing and the client, and hands
//! over to [`zerfoo_operator::app::run`] until SIGTERM.

use anyhow::{Result, bail};
use clap::{Parser, Subcommand};
use kinfer_api::zerfoo::ZerfooInferenceService;
use kinfer_operator::{client, signal, telemetry};
use kube::CustomResourceExt;
use zerfoo_operator::app::{self, RunArgs};

#[derive(Debug, Parser)]
#[command(
    name = "zerfoo-operator",
    version,
    about = "Operator for ZerfooInferenceService (zerfoo.feza.ai/v1)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the operator.
    Run(Box<RunArgs>),
    /// Print the ZerfooInferenceService CRD as YAML.
    Crds,
}

#[tokio::main]
async fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Run(args) => {
            telemetry::init_tracing(args.common.log_format)?;
            let client = client::infer().await?;
            match app::run(*args, client, signal::termination()).await {
                Err(kinfer_operator::Error::Run(e)) if e.is_lost_leadership() => {
                    bail!("{e}; exiting so a new process campaigns afresh")
                }
                result => Ok(result?),
            }
        }
        Command::Crds => {
            let yaml = kinfer_api::crds::to_yaml(&ZerfooInferenceService::crd())?;
            print!("---\n{yaml}");
            Ok(())
        }
    }
}
