//! `kinfer demo [--examples DIR] [--set-gpus ...] [--timeout D]`: render of `examples/` with
//! a readable summary.
//!
//! Contract: renders every manifest under the examples directory (default: `./examples` when
//! it exists, else the repository's `examples/`) exactly as `kinfer render` would, with one
//! 8-GPU MI300X Node unless `--set-gpus` says otherwise (the AIM examples need a GPU to
//! select). stdout gets, per input (in apply order): its kind and name, whether it is Ready
//! and how long after the operators started it first was, its conditions (`type=status
//! reason`), and the tree of objects created for it (children by owner reference,
//! recursively); then the objects no input owns (e.g. cluster-wide RBAC), inputs no operator
//! in this build reconciles, and the `kinfer render` command that prints the full YAML.
//! An input that is not Ready says why in a word ([`crate::render::verdict`]): it needs a
//! registry (render is offline), it is in an error state, or it waits on a retry.
//! Exit codes as render's.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::progress::{Progress, human};
use crate::render::verdict::Verdict;
use crate::render::{self, ClusterOptions, Rendered};

/// Arguments of `kinfer demo`.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// The examples directory.
    #[arg(long = "examples", value_name = "DIR")]
    pub examples: Option<PathBuf>,
    #[command(flatten)]
    pub cluster: ClusterOptions,
}

/// The GPUs the demo adds unless `--set-gpus` is given.
pub const DEFAULT_GPUS: &str = "MI300X=8";

/// `--examples`, else the `examples/` directory of the current directory or of the nearest
/// ancestor holding one (run from anywhere in a checkout). The binary embeds no source path:
/// its image is the same whichever directory built it.
fn examples_dir(given: Option<&Path>) -> PathBuf {
    if let Some(dir) = given {
        return dir.to_path_buf();
    }
    std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            cwd.ancestors()
                .map(|d| d.join("examples"))
                .find(|d| d.is_dir())
        })
        .unwrap_or_else(|| PathBuf::from("examples"))
}

fn object_line(v: &Value) -> String {
    let ns = v["metadata"]["namespace"].as_str();
    let name = v["metadata"]["name"].as_str().unwrap_or_default();
    format!(
        "{} {} {}",
        v["apiVersion"].as_str().unwrap_or_default(),
        v["kind"].as_str().unwrap_or_default(),
        ns.map_or_else(|| name.to_owned(), |ns| format!("{ns}/{name}"))
    )
}

/// Whether `child` names `owner` (kind and name; same namespace unless the owner is cluster
/// scoped).
fn owned_by(child: &Value, owner: &Value) -> bool {
    let owner_ns = owner["metadata"]["namespace"].as_str();
    let same_ns = owner_ns.is_none() || owner_ns == child["metadata"]["namespace"].as_str();
    same_ns
        && child["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|o| o["kind"] == owner["kind"] && o["name"] == owner["metadata"]["name"])
}

fn tree(
    out: &mut String,
    owner: &Value,
    objects: &[Value],
    prefix: &str,
    shown: &mut BTreeSet<usize>,
) {
    let children: Vec<usize> = (0..objects.len())
        .filter(|&i| !shown.contains(&i) && owned_by(&objects[i], owner))
        .collect();
    shown.extend(children.iter().copied());
    for (n, &i) in children.iter().enumerate() {
        let last = n + 1 == children.len();
        let _ = writeln!(
            out,
            "{prefix}{} {}",
            if last { "└─" } else { "├─" },
            object_line(&objects[i])
        );
        let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
        tree(out, &objects[i], objects, &deeper, shown);
    }
}

fn conditions(v: &Value) -> Vec<String> {
    v["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}={} {}",
                c["type"].as_str().unwrap_or_default(),
                c["status"].as_str().unwrap_or_default(),
                c["reason"].as_str().unwrap_or_default()
            )
            .trim_end()
            .to_owned()
        })
        .collect()
}

/// The summary text; see the module contract.
pub fn summary(rendered: &Rendered, command: &str) -> String {
    let mut out = String::new();
    let objects = &rendered.objects;
    let mut shown: BTreeSet<usize> = BTreeSet::new();
    let input_objects: Vec<Option<usize>> = rendered
        .inputs
        .iter()
        .map(|input| {
            objects.iter().position(|o| {
                o["kind"] == input.doc.kind()
                    && o["metadata"]["name"] == input.doc.name()
                    && o["metadata"]["namespace"].as_str() == input.namespace()
            })
        })
        .collect();
    shown.extend(input_objects.iter().flatten().copied());
    for (n, input) in rendered.inputs.iter().enumerate() {
        let Some(i) = input_objects[n] else { continue };
        let object = &objects[i];
        let state = match render::settle::readiness(object) {
            Some(true) => {
                let after = rendered
                    .outcome
                    .ready_after
                    .get(&n)
                    .map(|d| format!(" after {}", human(*d)))
                    .unwrap_or_default();
                format!("Ready{after}")
            }
            Some(false) => match rendered.verdicts.get(&n) {
                Some(Verdict::Offline(_)) => {
                    "not Ready: needs a registry, and render is offline".to_owned()
                }
                Some(Verdict::Failed(_)) => "not Ready: error state".to_owned(),
                Some(Verdict::Retrying(_)) => "not Ready: waiting on a retry".to_owned(),
                _ => "not Ready".to_owned(),
            },
            None if object["status"].is_null() => {
                "no status: not reconciled in this build".to_owned()
            }
            None => "applied".to_owned(),
        };
        let _ = writeln!(out, "{}  [{state}]", input.display());
        let _ = writeln!(out, "   from {}", input.doc.file.display());
        let mut line = String::from("   conditions:");
        for c in conditions(object) {
            if line.len() + c.len() > 98 {
                let _ = writeln!(out, "{line}");
                line = String::from("              ");
            }
            line.push(' ');
            line.push_str(&c);
            line.push(',');
        }
        if line.ends_with(',') {
            line.pop();
            let _ = writeln!(out, "{line}");
        }
        tree(&mut out, object, objects, "   ", &mut shown);
        out.push('\n');
    }
    let rest: Vec<usize> = (0..objects.len()).filter(|i| !shown.contains(i)).collect();
    if !rest.is_empty() {
        let _ = writeln!(out, "Also created (owned by no input):");
        for i in rest {
            let _ = writeln!(out, "   {}", object_line(&objects[i]));
        }
        out.push('\n');
    }
    for item in &rendered.unreconciled {
        let _ = writeln!(
            out,
            "Not reconciled in this build (no operator for the kind yet): {item}"
        );
    }
    let _ = writeln!(
        out,
        "{} inputs, {} objects, settled in {}. Full YAML: {command}",
        rendered.inputs.len(),
        objects.len(),
        human(rendered.outcome.elapsed)
    );
    out
}

/// `kinfer demo`.
pub fn run(args: &DemoArgs, progress: &Progress) -> Result<()> {
    let dir = examples_dir(args.examples.as_deref());
    let mut options = args.cluster.clone();
    if options.gpus.is_empty() {
        options.gpus = vec![render::gpus::parse(DEFAULT_GPUS).map_err(anyhow::Error::msg)?];
    }
    let gpus: Vec<String> = options
        .gpus
        .iter()
        .map(|g| format!("{}={}", g.spec.model, g.count))
        .collect();
    let command = format!(
        "kinfer render -f {} --set-gpus {}",
        dir.display(),
        gpus.join(",")
    );
    progress.note(&format!("rendering {}", dir.display()));
    let rendered = render::runtime()?
        .block_on(render::render(
            std::slice::from_ref(&dir),
            &options,
            progress,
        ))
        .with_context(|| format!("rendering {}", dir.display()))?;
    crate::print(&summary(&rendered, &command))?;
    rendered.failure().map_or(Ok(()), Err)
}
