//! `modelservice-operator run|crds`: tracing, the client, and [`modelservice_operator::app::run`]
//! until SIGTERM.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use kinfer_api::modelservice::ModelService;
use kinfer_operator::{client, signal, telemetry};
use kube::CustomResourceExt;
use modelservice_operator::app::{self, RunArgs};

#[derive(Debug, Parser)]
#[command(
    name = "modelservice-operator",
    version,
    about = "Operator for ModelService (model.otterscale.io/v1alpha1)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the operator.
    Run(Box<RunArgs>),
    /// Print the ModelService CRD as YAML.
    Crds,
}

#[tokio::main]
async fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Run(args) => {
            telemetry::init_tracing(args.common.log_format)?;
            let client = client::infer().await?;
            app::run(*args, client, signal::termination())
                .await
                .context("modelservice-operator")
        }
        Command::Crds => {
            let yaml = kinfer_api::crds::to_yaml(&ModelService::crd())?;
            print!("---\n{yaml}");
            Ok(())
        }
    }
}
