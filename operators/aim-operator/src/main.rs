//! `aim-operator`: flags, the start-up check, the controllers under leader election
//! ([`kinfer_operator::Process`], as the other operators), restarted when KServe or Gateway
//! API CRDs are installed or removed. Exits non-zero when the controllers cannot start or the
//! Lease is lost.

use std::sync::{Arc, Mutex, PoisonError};

use aim_operator::Settings;
use aim_operator::controllers::{self, Operator};
use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kinfer_builders::discovery_job::{JobResources, resources};
use kinfer_operator::{CommonArgs, CrdWatch, Process, signal, telemetry};

#[derive(Debug, Parser)]
#[command(
    name = "aim-operator",
    version,
    about = "Operator for AMD AIM (aim.eai.amd.com/v1alpha1)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the operator.
    Run(Box<RunArgs>),
    /// Print the AIM CRDs as YAML.
    Crds,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Discovery Jobs running at once, cluster-wide.
    #[arg(long, default_value_t = 10)]
    max_discovery_jobs: usize,
    /// Registries reached over plain HTTP (host[:port], repeatable).
    #[arg(long = "insecure-registry")]
    insecure_registries: Vec<String>,
    /// Seconds between rechecks of a model or model source that failed on a pull secret or a
    /// registry (Secrets are read by name, never listed or watched).
    #[arg(long, default_value_t = aim_operator::context::DEFAULT_EXTERNAL_RECHECK.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    recheck_interval_seconds: u64,
    /// Requests of the discovery Jobs' container, as `kubectl set resources` takes them
    /// (`cpu=250m,memory=512Mi`, the default); each flag replaces its whole list.
    #[arg(long, value_parser = resource_list)]
    discovery_job_requests: Option<ResourceList>,
    /// Limits of the discovery Jobs' container (default `cpu=1,memory=2Gi`).
    #[arg(long, value_parser = resource_list)]
    discovery_job_limits: Option<ResourceList>,
    /// Requests of the check-size Jobs' container (default `cpu=100m,memory=128Mi`).
    #[arg(long, value_parser = resource_list)]
    check_size_job_requests: Option<ResourceList>,
    /// Limits of the check-size Jobs' container (default `cpu=500m,memory=512Mi`).
    #[arg(long, value_parser = resource_list)]
    check_size_job_limits: Option<ResourceList>,
    /// Requests of the download Jobs' container (default `cpu=1,memory=2Gi`).
    #[arg(long, value_parser = resource_list)]
    download_job_requests: Option<ResourceList>,
    /// Limits of the download Jobs' container (default `cpu=4,memory=8Gi`).
    #[arg(long, value_parser = resource_list)]
    download_job_limits: Option<ResourceList>,
}

type ResourceList = std::collections::BTreeMap<String, Quantity>;

fn resource_list(text: &str) -> Result<ResourceList, String> {
    resources::parse_list(text).map_err(|e| e.to_string())
}

/// The Jobs' resources: the defaults, with each list the flags give instead.
fn job_resources(args: &RunArgs) -> Result<JobResources> {
    let mut jobs = JobResources::default();
    for (name, target, requests, limits) in [
        (
            "discovery",
            &mut jobs.discovery,
            &args.discovery_job_requests,
            &args.discovery_job_limits,
        ),
        (
            "check-size",
            &mut jobs.check_size,
            &args.check_size_job_requests,
            &args.check_size_job_limits,
        ),
        (
            "download",
            &mut jobs.download,
            &args.download_job_requests,
            &args.download_job_limits,
        ),
    ] {
        if let Some(r) = requests {
            target.requests = Some(r.clone());
        }
        if let Some(l) = limits {
            target.limits = Some(l.clone());
        }
        resources::check(target).with_context(|| format!("the {name} Jobs' resources"))?;
    }
    Ok(jobs)
}

async fn run(args: RunArgs) -> Result<()> {
    let jobs = job_resources(&args)?;
    let common = args.common;
    telemetry::init_tracing(common.log_format)?;
    if !common.watch_namespaces.is_empty() {
        bail!(
            "--watch-namespace is not supported by aim-operator yet: cluster-scoped kinds and discovery Jobs in the operator namespace need cluster-wide watches"
        );
    }
    controllers::install_crypto_provider();
    let client = controllers::client().await?;
    let process = Process::start(&common, &client).await?;
    aim_operator::startup::check(&client).await?;
    let mut settings = Settings::from_env();
    settings.concurrency = common.concurrency;
    settings.debounce = std::time::Duration::from_millis(common.debounce_ms);
    settings.discovery.max_active = args.max_discovery_jobs;
    settings.inspector.insecure_registries = args.insecure_registries;
    settings.external_recheck = std::time::Duration::from_secs(args.recheck_interval_seconds);
    settings.jobs = jobs;
    // KServe and Gateway API are optional: followed, and the controllers restart on a change.
    let crds = CrdWatch::start(
        &client,
        &aim_operator::startup::SERVING_CRDS,
        process.stopping(),
    )
    .await?;
    let metrics = process.metrics();
    let failed = Arc::new(Mutex::new(None));
    let failure = Arc::clone(&failed);
    // Controllers (and therefore writes) start only once this replica leads, on the client
    // behind the Lease's write fence.
    process
        .lead(
            &common,
            &client,
            "aim-operator-leader",
            signal::termination(),
            |controllers_client, stop| async move {
                let run = Operator::run_following(
                    controllers_client,
                    settings,
                    metrics,
                    crds.subscribe(),
                    stop,
                );
                if let Err(e) = run.await {
                    *failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                }
            },
        )
        .await?;
    let failed = failed.lock().unwrap_or_else(PoisonError::into_inner).take();
    match failed {
        Some(e) => Err(anyhow::Error::new(e).context("the controllers could not start")),
        None => Ok(()),
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Run(args) => run(*args).await,
        Command::Crds => {
            for crd in kinfer_api::aim::crds() {
                print!("---\n{}", kinfer_api::crds::to_yaml(&crd)?);
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    fn run_args(flags: &[&str]) -> RunArgs {
        let args = ["aim-operator", "run"].iter().chain(flags);
        match Cli::try_parse_from(args).unwrap().command {
            Command::Run(args) => *args,
            Command::Crds => panic!("run"),
        }
    }

    #[test]
    fn job_flags_replace_their_list_and_a_request_above_its_limit_stops_the_start() {
        let jobs =
            job_resources(&run_args(&["--download-job-limits", "cpu=8,memory=32Gi"])).unwrap();
        let limits = jobs.download.limits.unwrap();
        assert_eq!(limits["memory"].0, "32Gi");
        assert_eq!(
            jobs.download.requests,
            JobResources::default().download.requests
        );
        assert_eq!(jobs.discovery, JobResources::default().discovery);

        let err = job_resources(&run_args(&["--check-size-job-requests", "memory=1Gi"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("check-size"), "{err}");
        assert!(
            Cli::try_parse_from(["aim-operator", "run", "--discovery-job-limits", "cpu=much"])
                .is_err()
        );
    }
}
