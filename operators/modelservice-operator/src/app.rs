//! The operator as a library entry point: the `run` flags and [`run`], which the binary calls
//! with a client and its termination signal, and tests call in-process with a test cluster's
//! client and a channel.
//!
//! Contract of [`run`] (the order of [`kinfer_operator::Process`]): serves `/metrics`,
//! `/healthz` and `/readyz` on the common addresses; reads the plugin files; fails with an
//! install hint when the ModelService CRD is missing; detects the optional CRDs and follows
//! them ([`kinfer_operator::CrdWatch`]); marks itself ready; then runs the controllers
//! ([`crate::controller::run`]) while it leads (at once without `--leader-elect`) until
//! `shutdown` resolves: in-flight reconciles finish, the Lease is released, the endpoints and
//! the CRD watch stop, `Ok`. Losing the Lease stops the controllers and returns the loss
//! ([`kinfer_operator::RunError::is_lost_leadership`]); the binary then exits non-zero.
//! Tracing is the caller's (it is process-global).

use std::future::Future;
use std::path::PathBuf;

use kinfer_api::modelservice::ModelService;
use kinfer_operator::{CommonArgs, ControllerOptions, CrdWatch, Process, crds};
use kube::{Client, CustomResourceExt};

use crate::config::{self, OperatorConfig, Provider, Tracing};
use crate::optional_crds::{self, OptionalCrds};
use crate::reconciler::ModelServicePipeline;

/// The leader-election Lease unless `--leader-election-id` says otherwise.
pub const LEASE_NAME: &str = "modelservice-operator-leader";

/// How to install the CRD, for the start-up error.
pub const INSTALL_HINT: &str =
    "`kubectl apply -k deploy/crds`, or `modelservice-operator crds | kubectl apply -f -`";

/// Why the operator could not run.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The shared plumbing failed (flags, endpoints, CRDs, leader election).
    #[error(transparent)]
    Operator(#[from] kinfer_operator::Error),
    /// `--model-size-limit` is not a quantity.
    #[error(transparent)]
    SizeLimit(#[from] config::ParseSizeLimitError),
    /// A plugins file could not be read.
    #[error("read {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl From<kinfer_operator::CrdError> for AppError {
    fn from(e: kinfer_operator::CrdError) -> Self {
        Self::Operator(e.into())
    }
}

impl From<kinfer_operator::ServerError> for AppError {
    fn from(e: kinfer_operator::ServerError) -> Self {
        Self::Operator(e.into())
    }
}

/// `modelservice-operator run` flags: the common ones and the ModelService ones.
#[derive(Debug, Clone, clap::Args)]
#[allow(clippy::struct_excessive_bools)]
pub struct RunArgs {
    /// Flags every kinfer operator takes.
    #[command(flatten)]
    pub common: CommonArgs,
    /// vLLM image when `spec.engine.image` is unset.
    #[arg(long, default_value = config::DEFAULT_ENGINE_IMAGE)]
    pub default_engine_image: String,
    /// Endpoint Picker image when the spec names none.
    #[arg(long, default_value = config::DEFAULT_EPP_IMAGE)]
    pub default_epp_image: String,
    /// Routing sidecar image when `spec.routingProxy.image` is unset.
    #[arg(long, default_value = config::DEFAULT_ROUTING_PROXY_IMAGE)]
    pub default_routing_proxy_image: String,
    /// KitOps image that unpacks the ModelPack.
    #[arg(long, default_value = config::DEFAULT_KIT_IMAGE)]
    pub kit_image: String,
    /// Pull ModelPacks over plain HTTP (test registries only).
    #[arg(long)]
    pub kit_plain_http: bool,
    /// `sizeLimit` of the model and kit scratch volumes; an empty value leaves them unbounded.
    #[arg(long, default_value = config::DEFAULT_MODEL_SIZE_LIMIT, value_parser = check_size_limit)]
    pub model_size_limit: String,
    /// Gateway implementation of the Endpoint Picker: istio, gke or none.
    #[arg(long, default_value = "istio", value_parser = parse_provider)]
    pub provider: Provider,
    /// Gateway of the default HTTPRoute; an empty value disables the default route.
    #[arg(long, default_value = config::DEFAULT_GATEWAY_NAME)]
    pub default_gateway_name: String,
    /// Namespace of the default Gateway.
    #[arg(long, default_value = config::DEFAULT_GATEWAY_NAMESPACE)]
    pub default_gateway_namespace: String,
    /// Request timeout of the HTTPRoutes (Gateway API duration); empty for none.
    #[arg(long, default_value = config::DEFAULT_REQUEST_TIMEOUT)]
    pub route_request_timeout: String,
    /// Endpoint Picker metrics behind authentication (token Secret and cluster RBAC).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics_endpoint_auth: bool,
    /// Tracing in the Endpoint Picker and the routing sidecar.
    #[arg(long)]
    pub tracing_enabled: bool,
    /// OTLP endpoint.
    #[arg(long, default_value = "")]
    pub tracing_otel_endpoint: String,
    /// OpenTelemetry sampler.
    #[arg(long, default_value = "parentbased_traceidratio")]
    pub tracing_sampler: String,
    /// OpenTelemetry sampler argument.
    #[arg(long, default_value = "0.01")]
    pub tracing_sampler_arg: String,
    /// Extra Endpoint Picker flag `name=value` (repeatable).
    #[arg(long = "epp-flag", value_parser = parse_flag)]
    pub epp_flags: Vec<(String, String)>,
    /// File replacing the non-disaggregated plugins configuration.
    #[arg(long)]
    pub epp_plugins_file: Option<PathBuf>,
    /// File replacing the prefill/decode plugins configuration.
    #[arg(long)]
    pub epp_pd_plugins_file: Option<PathBuf>,
    /// Seconds between rechecks of the Endpoint Picker token Secrets (Secrets are not watched,
    /// so the operator needs no cluster-wide list/watch of Secrets).
    #[arg(long, default_value_t = config::DEFAULT_RECHECK_INTERVAL.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub recheck_interval_seconds: u64,
    /// User, group and volume group of engine and Endpoint Picker pods (non-root), or `image`
    /// to set none and run as the image's or the platform's user (OpenShift's restricted SCC
    /// assigns one).
    #[arg(long, default_value = "65532", value_parser = config::parse_pod_user)]
    pub pod_user: config::PodUser,
}

fn parse_provider(s: &str) -> Result<Provider, String> {
    s.parse()
        .map_err(|e: config::ParseProviderError| e.to_string())
}

fn check_size_limit(s: &str) -> Result<String, String> {
    config::parse_size_limit(s)
        .map(Option::unwrap_or_default)
        .map_err(|e| e.to_string())
}

fn parse_flag(s: &str) -> Result<(String, String), String> {
    config::parse_flag(s).map_err(|e| e.to_string())
}

fn read(path: Option<&PathBuf>) -> Result<Option<String>, AppError> {
    path.map(|p| {
        std::fs::read_to_string(p).map_err(|source| AppError::ReadFile {
            path: p.clone(),
            source,
        })
    })
    .transpose()
}

impl RunArgs {
    /// The operator's settings from the flags (reads the plugin files).
    pub fn operator_config(&self) -> Result<OperatorConfig, AppError> {
        Ok(OperatorConfig {
            engine_image: self.default_engine_image.clone(),
            epp_image: self.default_epp_image.clone(),
            routing_proxy_image: self.default_routing_proxy_image.clone(),
            kit_image: self.kit_image.clone(),
            kit_plain_http: self.kit_plain_http,
            model_size_limit: config::parse_size_limit(&self.model_size_limit)?,
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
            recheck_interval: std::time::Duration::from_secs(self.recheck_interval_seconds),
            pod_identity: self.pod_user.0,
        })
    }
}

/// Runs the operator until `shutdown`; see the module contract.
pub async fn run(
    args: RunArgs,
    client: Client,
    shutdown: impl Future<Output = ()>,
) -> Result<(), AppError> {
    let common = &args.common;
    let process = Process::start(common, &client).await?;
    let config = args.operator_config()?;
    crds::require(&client, &[ModelService::crd_name()], INSTALL_HINT).await?;
    let optional = CrdWatch::start(&client, &optional_crds::NAMES, process.stopping()).await?;
    // The configuration only: `controller::run` builds each engine's pipeline for the set the
    // CRD watch reports (at start and on every change).
    let pipeline = ModelServicePipeline::new(config, OptionalCrds::default());
    let metrics = process.metrics();
    let options = ControllerOptions::from_args(common);
    let changes = optional.subscribe();
    process
        .lead(common, &client, LEASE_NAME, shutdown, |client, stop| {
            crate::controller::run(client, pipeline, metrics, options, changes, stop)
        })
        .await?;
    optional.stopped().await;
    Ok(())
}
