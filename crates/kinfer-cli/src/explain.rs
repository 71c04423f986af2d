//! `kinfer explain template -f PATH... --service NAMESPACE/NAME [--set-gpus ...]`: why the
//! AIM template selection for a service chose what it chose.
//!
//! Contract: renders the inputs exactly as `kinfer render` does (so generated templates exist
//! and carry their discovery status), then maps what the AIM objects say onto
//! [`kinfer_select`]'s inputs and prints [`kinfer_select::Selection::explain`] — the outcome,
//! the cluster's GPUs, and one row per candidate with the filter or rank that decided it and
//! any tie. The mapping (the aim-operator crate does not expose one yet):
//! - the service's model: `spec.model.name` (an AIMModel in the service's namespace, else an
//!   AIMClusterModel), or `spec.model.image` (the model, namespace first, whose `spec.image`
//!   is that image); inline custom models are not explained;
//! - candidates: the namespace's AIMServiceTemplates and every AIMClusterServiceTemplate whose
//!   `spec.modelName` is that model; status from `status.status`; profile type, metric and
//!   precision from the discovered `status.profile.metadata`, else the spec; GPU model and
//!   count from `status.resolvedHardware.gpu`, else `spec.hardware.gpu`;
//! - the request: `spec.overrides` (metric, precision, `hardware.gpu.model`,
//!   `hardware.gpu.requests`) and `spec.template.allowUnoptimized`;
//! - cluster GPUs: the GPUs [`kinfer_select::gpu::ClusterGpus`] identifies on the input Nodes
//!   and the `--set-gpus` Nodes.
//!
//! A service that pins `spec.template.name` is reported as such above the table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{Context, Result, anyhow, bail};
use kinfer_select::gpu::ClusterGpus;
use kinfer_select::{Candidate, Precision, Request, Scope, TemplateStatus};
use serde_json::Value;

use crate::progress::Progress;
use crate::render::{self, ClusterOptions, Rendered};

/// Arguments of `kinfer explain template`.
#[derive(clap::Args, Debug, Clone)]
pub struct TemplateArgs {
    /// Manifest files or directories (the service, its model, templates, Nodes). Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH", required = true)]
    pub paths: Vec<std::path::PathBuf>,
    /// The AIMService, as NAMESPACE/NAME.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub service: String,
    #[command(flatten)]
    pub cluster: ClusterOptions,
}

const AIM: &str = "aim.eai.amd.com/";

fn is(v: &Value, kind: &str) -> bool {
    v["kind"] == kind && v["apiVersion"].as_str().is_some_and(|a| a.starts_with(AIM))
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

/// The model a service uses: (namespaced?, name).
fn model_of(service: &Value, namespace: &str, objects: &[Value]) -> Result<(bool, String)> {
    let in_ns = |o: &&Value| o["metadata"]["namespace"] == namespace;
    if let Some(name) = str_at(service, &["spec", "model", "name"]) {
        let namespaced = objects
            .iter()
            .filter(in_ns)
            .any(|o| is(o, "AIMModel") && o["metadata"]["name"] == name);
        return Ok((namespaced, name.to_owned()));
    }
    if let Some(image) = str_at(service, &["spec", "model", "image"]) {
        let by_image = |kind: &str, ns_only: bool| {
            objects
                .iter()
                .filter(|o| !ns_only || in_ns(o))
                .find(|o| is(o, kind) && o["spec"]["image"] == image)
                .and_then(|o| o["metadata"]["name"].as_str())
                .map(str::to_owned)
        };
        if let Some(name) = by_image("AIMModel", true) {
            return Ok((true, name));
        }
        if let Some(name) = by_image("AIMClusterModel", false) {
            return Ok((false, name));
        }
        bail!(
            "no AIMModel in {namespace} or AIMClusterModel has spec.image {image}; add the model to the inputs"
        );
    }
    bail!("the service names no model by name or image (inline custom models are not explained)")
}

fn candidate(template: &Value, scope: Scope) -> Candidate {
    let status = str_at(template, &["status", "status"])
        .unwrap_or_default()
        .parse()
        .unwrap_or(TemplateStatus::Pending);
    let profile = &template["status"]["profile"]["metadata"];
    let profile_type = str_at(profile, &["type"])
        .or_else(|| str_at(template, &["spec", "type"]))
        .and_then(|t| t.parse().ok());
    let name = template["metadata"]["name"].as_str().unwrap_or_default();
    let mut c = Candidate::new(name)
        .scope(scope)
        .status(status)
        .profile(profile_type);
    let gpu = if template["status"]["resolvedHardware"]["gpu"].is_object() {
        &template["status"]["resolvedHardware"]["gpu"]
    } else {
        &template["spec"]["hardware"]["gpu"]
    };
    if gpu.is_object() {
        let count = gpu["requests"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0);
        c = c.gpu(gpu["model"].as_str().unwrap_or_default(), count);
    }
    if let Some(m) = str_at(profile, &["metric"]).or_else(|| str_at(template, &["spec", "metric"]))
    {
        c = c.metric(m);
    }
    if let Some(p) =
        str_at(profile, &["precision"]).or_else(|| str_at(template, &["spec", "precision"]))
    {
        c = c.precision(p);
    }
    c
}

fn request(service: &Value) -> Request {
    let o = &service["spec"]["overrides"];
    Request {
        metric: str_at(o, &["metric"]).and_then(kinfer_select::Metric::parse),
        precision: str_at(o, &["precision"]).and_then(Precision::parse),
        gpu_model: str_at(o, &["hardware", "gpu", "model"])
            .and_then(kinfer_select::gpu::GpuModel::new),
        gpu_count: o["hardware"]["gpu"]["requests"]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok()),
        allow_unoptimized: service["spec"]["template"]["allowUnoptimized"]
            .as_bool()
            .unwrap_or(false),
    }
}

fn cluster_gpus(rendered: &Rendered, options: &ClusterOptions) -> ClusterGpus {
    let mut labels: Vec<BTreeMap<String, String>> = rendered
        .inputs
        .iter()
        .filter(|i| i.doc.kind() == "Node")
        .map(|i| {
            serde_json::from_value(i.doc.value["metadata"]["labels"].clone()).unwrap_or_default()
        })
        .collect();
    labels.extend(options.gpus.iter().map(|g| {
        serde_json::from_value(render::gpus::node(g)["metadata"]["labels"].clone())
            .unwrap_or_default()
    }));
    ClusterGpus::from_nodes(labels.iter())
}

/// The explanation text for `service` (`NAMESPACE/NAME`) in a rendered cluster.
pub fn explain(rendered: &Rendered, options: &ClusterOptions, service: &str) -> Result<String> {
    let (namespace, name) = service
        .split_once('/')
        .ok_or_else(|| anyhow!("--service {service:?}: expected NAMESPACE/NAME"))?;
    let objects = &rendered.objects;
    let svc = objects
        .iter()
        .find(|o| {
            is(o, "AIMService")
                && o["metadata"]["namespace"] == namespace
                && o["metadata"]["name"] == name
        })
        .ok_or_else(|| anyhow!("no AIMService {namespace}/{name} in the inputs"))?;
    let (namespaced_model, model) = model_of(svc, namespace, objects)?;
    let mut candidates: Vec<Candidate> = objects
        .iter()
        .filter(|o| {
            is(o, "AIMServiceTemplate")
                && o["metadata"]["namespace"] == namespace
                && o["spec"]["modelName"] == model.as_str()
        })
        .map(|t| candidate(t, Scope::Namespace))
        .collect();
    candidates.extend(
        objects
            .iter()
            .filter(|o| {
                is(o, "AIMClusterServiceTemplate") && o["spec"]["modelName"] == model.as_str()
            })
            .map(|t| candidate(t, Scope::Cluster)),
    );
    let gpus = cluster_gpus(rendered, options).model_set();
    let selection = kinfer_select::select(&candidates, &request(svc), &gpus);
    let mut out = format!(
        "AIMService {namespace}/{name}: model {} {model}\n",
        if namespaced_model {
            "AIMModel"
        } else {
            "AIMClusterModel"
        }
    );
    if let Some(pinned) = str_at(svc, &["spec", "template", "name"]) {
        let _ = writeln!(
            out,
            "spec.template.name pins {pinned}: the operator uses it without selection; the table shows what selection would do"
        );
    }
    out.push_str(&selection.explain());
    Ok(out)
}

/// `kinfer explain template`.
pub fn run(args: &TemplateArgs, progress: &Progress) -> Result<()> {
    let rendered = render::runtime()?
        .block_on(render::render(&args.paths, &args.cluster, progress))
        .context("rendering the inputs")?;
    if !rendered.outcome.settled {
        progress.warn(&format!(
            "not settled after --timeout; the templates' status may be incomplete: {}",
            rendered.outcome.pending.join("; ")
        ));
    }
    crate::print(&explain(&rendered, &args.cluster, &args.service)?)
}
