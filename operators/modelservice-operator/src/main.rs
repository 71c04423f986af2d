//! `modelservice-operator run|crds`: flags, logging, endpoints, leader election, the controller.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use kinfer_api::modelservice::ModelService;
use kinfer_operator::{
    CommonArgs, Endpoints, client, crds, run_with_leader_election, server, signal, telemetry,
};
use kinfer_state::metrics::Metrics;
use kube::CustomResourceExt;
use modelservice_operator::ModelServicePipeline;
use modelservice_operator::config::{self, OperatorConfig, Provider, Tracing};
use modelservice_operator::controller::{self, ControllerOptions};
use modelservice_operator::optional_crds;
use tokio::sync::watch;

/// The default leader-election Lease.
const LEASE: &str = "modelservice-operator-leader";

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

#[derive(Debug, clap::Args)]
#[allow(clippy::struct_excessive_bools)]
struct RunArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// vLLM image when `spec.engine.image` is unset.
    #[arg(long, default_value = config::DEFAULT_ENGINE_IMAGE)]
    default_engine_image: String,
    /// Endpoint Picker image when the spec names none.
    #[arg(long, default_value = config::DEFAULT_EPP_IMAGE)]
    default_epp_image: String,
    /// Routing sidecar image when `spec.routingProxy.image` is unset.
    #[arg(long, default_value = config::DEFAULT_ROUTING_PROXY_IMAGE)]
    default_routing_proxy_image: String,
    /// KitOps image that unpacks the ModelPack.
    #[arg(long, default_value = config::DEFAULT_KIT_IMAGE)]
    kit_image: String,
    /// Pull ModelPacks over plain HTTP (test registries only).
    #[arg(long)]
    kit_plain_http: bool,
    /// `sizeLimit` of the model and kit scratch volumes (e.g. `200Gi`); unbounded when absent.
    #[arg(long)]
    model_size_limit: Option<String>,
    /// Gateway implementation of the Endpoint Picker: istio, gke or none.
    #[arg(long, default_value = "istio", value_parser = parse_provider)]
    provider: Provider,
    /// Gateway of the default HTTPRoute; an empty value disables the default route.
    #[arg(long, default_value = config::DEFAULT_GATEWAY_NAME)]
    default_gateway_name: String,
    /// Namespace of the default Gateway.
    #[arg(long, default_value = config::DEFAULT_GATEWAY_NAMESPACE)]
    default_gateway_namespace: String,
    /// Request timeout of the HTTPRoutes (Gateway API duration); empty for none.
    #[arg(long, default_value = config::DEFAULT_REQUEST_TIMEOUT)]
    route_request_timeout: String,
    /// Endpoint Picker metrics behind authentication (token Secret and cluster RBAC).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    metrics_endpoint_auth: bool,
    /// Tracing in the Endpoint Picker and the routing sidecar.
    #[arg(long)]
    tracing_enabled: bool,
    /// OTLP endpoint.
    #[arg(long, default_value = "")]
    tracing_otel_endpoint: String,
    /// OpenTelemetry sampler.
    #[arg(long, default_value = "parentbased_traceidratio")]
    tracing_sampler: String,
    /// OpenTelemetry sampler argument.
    #[arg(long, default_value = "0.01")]
    tracing_sampler_arg: String,
    /// Extra Endpoint Picker flag `name=value` (repeatable).
    #[arg(long = "epp-flag", value_parser = parse_flag)]
    epp_flags: Vec<(String, String)>,
    /// File replacing the non-disaggregated plugins configuration.
    #[arg(long)]
    epp_plugins_file: Option<PathBuf>,
    /// File replacing the prefill/decode plugins configuration.
    #[arg(long)]
    epp_pd_plugins_file: Option<PathBuf>,
}

fn parse_provider(s: &str) -> Result<Provider, String> {
    s.parse()
        .map_err(|e: config::ParseProviderError| e.to_string())
}

fn parse_flag(s: &str) -> Result<(String, String), String> {
    config::parse_flag(s).map_err(|e| e.to_string())
}

fn read(path: Option<&PathBuf>) -> Result<Option<String>> {
    path.map(|p| std::fs::read_to_string(p).with_context(|| format!("read {}", p.display())))
        .transpose()
}

impl RunArgs {
    fn operator_config(&self) -> Result<OperatorConfig> {
        Ok(OperatorConfig {
            engine_image: self.default_engine_image.clone(),
            epp_image: self.default_epp_image.clone(),
            routing_proxy_image: self.default_routing_proxy_image.clone(),
            kit_image: self.kit_image.clone(),
            kit_plain_http: self.kit_plain_http,
            model_size_limit: self.model_size_limit.clone(),
            provider: self.provider,
            default_gateway_name: self.default_gateway_name.clone(),
            default_gateway_namespace: self.default_gateway_namespace.clone(),
            request_timeout: self.route_request_timeout.clone(),
            metrics_endpoint_auth: self.metrics_endpoint_auth,
            tracing: Tracing {
                enabled: self.tracing_enabled,
                endpoint: self.tracing_otel_endpoint.clone(),
                sampler: self.tracing_sampler.clone(),
                sampler_arg: self.tracing_sampler_arg.clone(),
            },
            epp_flags: self.epp_flags.iter().cloned().collect(),
            epp_plugins: read(self.epp_plugins_file.as_ref())?,
            epp_pd_plugins: read(self.epp_pd_plugins_file.as_ref())?,
        })
    }
}

async fn run(args: RunArgs) -> Result<()> {
    let common = &args.common;
    telemetry::init_tracing(common.log_format)?;
    let config = args.operator_config()?;
    let endpoints = Endpoints::new(Metrics::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    server::spawn(&common.admin_addrs(), &endpoints, &stop_rx).await?;

    let client = client::infer().await?;
    crds::require(
        &client,
        &[ModelService::crd_name()],
        "kubectl apply -k deploy/crds, or modelservice-operator crds | kubectl apply -f -",
    )
    .await?;
    let detected = optional_crds::detect(&client).await?;
    tracing::info!(crds = ?detected, "optional CRDs detected");
    let (crds_tx, crds_rx) = watch::channel(detected);
    tokio::spawn(optional_crds::watch(
        client.clone(),
        crds_tx,
        stop_rx.clone(),
    ));
    let pipeline = ModelServicePipeline::new(config, detected);
    let metrics = endpoints.metrics.clone();
    endpoints.set_ready();

    let options = ControllerOptions {
        namespaces: common.watch_namespaces.clone(),
        concurrency: common.concurrency,
    };
    let elector = common.leader_elector(&client, LEASE)?;
    let result = run_with_leader_election(elector, signal::termination(), |stop| {
        controller::run(client, pipeline, metrics, options, crds_rx, stop)
    })
    .await;
    stop_tx.send_replace(true);
    result.context("leading run")
}

#[tokio::main]
async fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Run(args) => run(*args).await,
        Command::Crds => {
            let yaml = kinfer_api::crds::to_yaml(&ModelService::crd())?;
            print!("---\n{yaml}");
            Ok(())
        }
    }
}
