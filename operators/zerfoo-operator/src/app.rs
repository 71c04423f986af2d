//! The operator as a library entry point: the `run` flags and [`run`], which the binary calls
//! with a client and its termination signal, and tests call in-process with a test cluster's
//! client and a channel.
//!
//! Contract of [`run`] (the process plumbing is [`kinfer_operator::Process`]'s): serves
//! `/metrics`, `/healthz` and `/readyz` on the common addresses; fails with an install hint
//! when the ZerfooInferenceService CRD is missing; follows whether Gateway API HTTPRoutes are
//! served ([`CrdWatch`]: the controllers restart when the CRD is installed or removed, see
//! [`controller::run_following_crds`]); marks itself ready; then runs the controllers (one
//! per watched namespace) while it leads (at once without `--leader-elect`) until `shutdown`
//! resolves: in-flight reconciles finish, the Lease is released, the endpoints stop, `Ok`.
//! Losing the Lease stops the controllers and returns the loss
//! ([`kinfer_operator::RunError::is_lost_leadership`]); the binary then exits non-zero.
//! Tracing is the caller's (it is process-global).

use std::future::Future;

use kinfer_builders::gateway::GatewayRef;
use kinfer_operator::{CommonArgs, CrdWatch, Process};
use kube::Client;

use crate::config::{DEFAULT_SERVER_IMAGE, GpuVendor, OperatorConfig, parse_gateway};
use crate::controller::{self, ControllerOptions};
use crate::reconciler::ZerfooPipeline;

/// The leader-election Lease unless `--leader-election-id` says otherwise.
pub const LEASE_NAME: &str = "zerfoo-operator-leader";

/// `zerfoo-operator run` flags: the common ones and the Zerfoo ones.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Flags every kinfer operator takes.
    #[command(flatten)]
    pub common: CommonArgs,
    /// GPU vendor: nvidia or amd.
    #[arg(long, default_value = "nvidia", value_parser = parse_vendor)]
    pub gpu_vendor: GpuVendor,
    /// GPU extended resource, overriding the vendor's (e.g. a MIG resource).
    #[arg(long)]
    pub gpu_resource: Option<String>,
    /// HPA average CPU utilisation target, percent.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(i32).range(1..=100))]
    pub cpu_target: i32,
    /// Gateway for weighted routes when a service sets no gatewayRef: [namespace/]name[:section].
    #[arg(long, value_parser = parse_gateway_arg)]
    pub default_gateway: Option<GatewayRef>,
    /// Model server image.
    #[arg(long, default_value = DEFAULT_SERVER_IMAGE)]
    pub server_image: String,
}

fn parse_vendor(s: &str) -> Result<GpuVendor, String> {
    s.parse()
        .map_err(|e: crate::config::ParseVendorError| e.to_string())
}

fn parse_gateway_arg(s: &str) -> Result<GatewayRef, String> {
    parse_gateway(s).map_err(|e| e.to_string())
}

impl RunArgs {
    /// The operator's settings from the flags.
    pub fn operator_config(&self) -> OperatorConfig {
        OperatorConfig {
            gpu_vendor: self.gpu_vendor,
            gpu_resource: self.gpu_resource.clone(),
            cpu_target: self.cpu_target,
            default_gateway: self.default_gateway.clone(),
            server_image: self.server_image.clone(),
        }
    }
}

/// Runs the operator until `shutdown`; see the module contract.
pub async fn run(
    args: RunArgs,
    client: Client,
    shutdown: impl Future<Output = ()>,
) -> Result<(), kinfer_operator::Error> {
    let common = &args.common;
    let process = Process::start(common, &client).await?;
    controller::check_crd(&client).await?;
    let optional =
        CrdWatch::start(&client, &[controller::HTTPROUTE_CRD], process.stopping()).await?;
    let pipeline = ZerfooPipeline::new(args.operator_config());
    let metrics = process.metrics();
    let options = ControllerOptions {
        namespaces: common.watch_namespaces.clone(),
        concurrency: common.concurrency,
        debounce: std::time::Duration::from_millis(common.debounce_ms),
        routes: true,
    };
    let crds = optional.subscribe();
    process
        .lead(common, &client, LEASE_NAME, shutdown, |client, stop| {
            controller::run_following_crds(client, pipeline, metrics, options, crds, stop)
        })
        .await?;
    optional.stopped().await;
    Ok(())
}
