//! `kinfer render -f PATH... [-o yaml|json] [--set-gpus MODEL=COUNT,...] [--timeout D]
//! [--settle D]`: the offline plan of what the operators create.
//!
//! Contract (ARCHITECTURE.md "The kinfer CLI"): read and check the inputs ([`input`],
//! [`apply`], [`validate`]); start the embedded cluster with every CRD ([`env`]); add the
//! `--set-gpus` Nodes ([`gpus`]); apply the inputs; start the three operators in-process
//! ([`operators`]) with the simulated AIM discovery log ([`aim_discovery`]) and an offline
//! image inspector; wait until settled ([`settle`]); print every input and every object an
//! operator wrote, cleaned and sorted ([`output`]); judge each input's status ([`verdict`]).
//! Invalid input exits with [`crate::exit::INVALID_INPUT`] before anything runs. `--timeout`
//! bounds the whole run (cluster start, apply, settle, output, stop): not settling by then
//! prints what there is, says what was pending, and exits with [`crate::exit::PENDING`]
//! ([`Pending`]); running out of time before the operators start prints nothing. Settled with
//! an input in an error state prints the plan and exits with [`crate::exit::INPUT_ERROR`]
//! ([`InputErrors`]). Nothing touches a real cluster or a registry.

pub mod aim_discovery;
pub mod apply;
pub mod env;
pub mod gpus;
pub mod input;
pub mod operators;
pub mod output;
pub mod settle;
pub mod validate;
pub mod verdict;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::Value;

use crate::progress::{Progress, human, parse_duration};
use apply::{Input, MANAGER};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Multi-document YAML.
    Yaml,
    /// One `v1` `List`.
    Json,
}

/// Arguments of `kinfer render`.
#[derive(clap::Args, Debug, Clone)]
pub struct RenderArgs {
    /// Manifest files or directories (walked recursively for .yaml, .yml, .json). Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    pub format: Format,
    #[command(flatten)]
    pub cluster: ClusterOptions,
}

/// Options shared by `render`, `demo` and `explain`.
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterOptions {
    /// Add one GPU Node per MODEL with COUNT GPUs, e.g. `MI300X=8,H100=2`.
    #[arg(long = "set-gpus", value_name = "MODEL=COUNT,...", value_delimiter = ',', value_parser = gpus::parse)]
    pub gpus: Vec<gpus::GpuRequest>,
    /// Give up waiting for the operators after this long (e.g. 30s, 2m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// How long the cluster must stay unchanged to count as settled.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub settle: Duration,
}

/// Not everything settled by the timeout. `kinfer` exits with [`crate::exit::PENDING`].
#[derive(Debug, Clone)]
pub struct Pending {
    /// How long render waited.
    pub waited: Duration,
    /// What was still pending.
    pub items: Vec<String>,
}

impl fmt::Display for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not settled after {} (raise --timeout?); still pending:",
            human(self.waited)
        )?;
        for item in &self.items {
            write!(f, "\n  {item}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Pending {}

/// Settled, but inputs are in an error state. `kinfer` exits with
/// [`crate::exit::INPUT_ERROR`].
#[derive(Debug, Clone)]
pub struct InputErrors(pub Vec<String>);

impl fmt::Display for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rendered, but inputs are in an error state (see their status):"
        )?;
        for item in &self.0 {
            write!(f, "\n  {item}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InputErrors {}

/// The result of a render.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The applied inputs, in apply order.
    pub inputs: Vec<Input>,
    /// Every printed object, cleaned and sorted.
    pub objects: Vec<Value>,
    /// The wait.
    pub outcome: settle::Outcome,
    /// Inputs of kinfer kinds that no operator in this build reconciles.
    pub unreconciled: Vec<String>,
    /// Input index → what its status says ([`verdict::judge`]), for reconciled inputs.
    pub verdicts: BTreeMap<usize, verdict::Verdict>,
}

impl Rendered {
    /// The exit-code error of this render: [`Pending`] when not settled, else [`InputErrors`]
    /// when an input is in an error state, else none.
    pub fn failure(&self) -> Option<anyhow::Error> {
        if !self.outcome.settled {
            return Some(
                Pending {
                    waited: self.outcome.elapsed,
                    items: self.outcome.pending.clone(),
                }
                .into(),
            );
        }
        let failed: Vec<String> = self
            .verdicts
            .iter()
            .filter_map(|(&n, v)| match v {
                verdict::Verdict::Failed(why) => {
                    Some(format!("{}: {why}", self.inputs[n].display()))
                }
                _ => None,
            })
            .collect();
        (!failed.is_empty()).then(|| InputErrors(failed).into())
    }

    /// Warns about inputs render could not evaluate without a registry.
    pub fn warn_offline(&self, progress: &Progress) {
        for (&n, v) in &self.verdicts {
            if let verdict::Verdict::Offline(why) = v {
                let input = &self.inputs[n];
                let hint = if matches!(input.doc.kind(), "AIMModel" | "AIMClusterModel") {
                    "give spec.imageMetadata (`kinfer inspect image REF` prints it) to render it"
                } else {
                    "it can only be tried on a cluster"
                };
                progress.warn(&format!(
                    "{}: render does not contact registries, so this input cannot become Ready here; {hint} ({why})",
                    input.display()
                ));
            }
        }
    }
}

/// The time left until `deadline` runs `work`, else [`Pending`] naming `step`.
async fn bounded<T>(
    deadline: Instant,
    started: Instant,
    step: &str,
    work: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout_at(deadline.into(), work).await {
        Ok(result) => result,
        Err(_) => Err(Pending {
            waited: started.elapsed(),
            items: vec![format!("{step} did not finish")],
        }
        .into()),
    }
}

async fn add_gpu_nodes(client: &kube::Client, requests: &[gpus::GpuRequest]) -> Result<()> {
    let resource = kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::Node>(&());
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    for request in requests {
        let node = gpus::node(request);
        let object: DynamicObject = serde_json::from_value(node.clone())?;
        let name = object.metadata.name.clone().unwrap_or_default();
        let post = PostParams {
            dry_run: false,
            field_manager: Some(MANAGER.to_owned()),
        };
        api.create(&post, &object)
            .await
            .with_context(|| format!("adding GPU node {name}"))?;
        let params = PatchParams {
            field_manager: Some(MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let status = serde_json::json!({ "status": node["status"] });
        api.patch_status(&name, &params, &Patch::Merge(&status))
            .await
            .with_context(|| format!("writing the status of GPU node {name}"))?;
    }
    Ok(())
}

/// How much of `--timeout` is kept for collecting the output and stopping the operators.
fn reserve(timeout: Duration) -> Duration {
    (timeout / 10).min(Duration::from_secs(5))
}

/// Renders `paths`; see the module contract. Errors are [`input::InvalidInput`],
/// [`input::InvalidInputs`], [`Pending`] (out of time before the operators settled) or runtime
/// failures; a settle timeout is reported in the outcome.
pub async fn render(
    paths: &[PathBuf],
    options: &ClusterOptions,
    progress: &Progress,
) -> Result<Rendered> {
    let begun = Instant::now();
    let deadline = begun + options.timeout;
    let docs = input::read(paths)?;
    progress.note(&format!("read {} documents", docs.len()));
    let env = bounded(
        deadline,
        begun,
        "starting the embedded cluster",
        env::Env::start(),
    )
    .await?;
    progress.note(&format!(
        "embedded cluster serving on {}",
        env.cluster.url()
    ));
    aim_discovery::install(&env.cluster, aim_discovery::models_by_image(&docs));
    let inputs = bounded(deadline, begun, "applying the inputs", async {
        add_gpu_nodes(&env.client, &options.gpus).await?;
        apply::apply(&env, docs, &[operators::AIM_SYSTEM_NAMESPACE]).await
    })
    .await?;
    progress.note(&format!("applied {} inputs", inputs.len()));

    let unreconciled: Vec<String> = inputs
        .iter()
        .filter(|i| {
            operators::not_yet_reconciled(validate::group_of(i.doc.api_version()), i.doc.kind())
        })
        .map(Input::display)
        .collect();
    for item in &unreconciled {
        progress.warn(&format!(
            "{item}: no operator in this build reconciles this kind yet; it is printed as applied, without status"
        ));
    }

    let started = Instant::now();
    let running = bounded(
        deadline,
        begun,
        "starting the operators",
        operators::Operators::start(&env.client),
    )
    .await?;
    progress.note("operators started; waiting until nothing is left to reconcile");
    let outcome = settle::wait(
        &env.cluster,
        &env.client,
        &inputs,
        options.settle,
        deadline
            .checked_sub(reserve(options.timeout))
            .unwrap_or(deadline),
        started,
        progress,
    )
    .await?;
    let objects = bounded(
        deadline,
        begun,
        "collecting the output",
        output::collect(&env, &inputs),
    )
    .await?;
    if tokio::time::timeout_at(deadline.into(), running.stop())
        .await
        .is_err()
    {
        tracing::debug!("operators did not stop before --timeout");
    }
    progress.note(&format!(
        "{} after {}: {} objects",
        if outcome.settled {
            "settled"
        } else {
            "timed out"
        },
        human(outcome.elapsed),
        objects.len()
    ));
    let verdicts = settle::tracked(&inputs)
        .into_iter()
        .filter_map(|n| {
            let object = objects
                .iter()
                .find(|o| output::is_object_of(o, &inputs[n]))?;
            Some((n, verdict::judge(object)))
        })
        .collect();
    let rendered = Rendered {
        inputs,
        objects,
        outcome,
        unreconciled,
        verdicts,
    };
    rendered.warn_offline(progress);
    Ok(rendered)
}

/// A multi-thread runtime on two workers (the CI machines have two cores).
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// `kinfer render`.
pub fn run(args: &RenderArgs, progress: &Progress) -> Result<()> {
    let rendered = runtime()?.block_on(render(&args.paths, &args.cluster, progress))?;
    let text = match args.format {
        Format::Yaml => output::to_yaml(&rendered.objects)?,
        Format::Json => output::to_json(&rendered.objects)?,
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing to stdout")?;
    rendered.failure().map_or(Ok(()), Err)
}
