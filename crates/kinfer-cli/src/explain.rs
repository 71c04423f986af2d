//! `kinfer explain template -f PATH... --service NAMESPACE/NAME [--set-gpus ...]`: why the
//! AIM template selection for a service chose what it chose.
//!
//! Contract: renders the inputs exactly as `kinfer render` does (so generated templates exist
//! and carry their discovery status), then maps what the AIM objects say onto
//! [`kinfer_select`]'s inputs and prints [`kinfer_select::Selection::explain`] — the outcome,
//! the cluster's GPUs, and one row per candidate with the filter or rank that decided it and
//! any tie. The mapping:
//! - the service's model: `spec.model.name` (an AIMModel in the service's namespace, else an
//!   AIMClusterModel), or `spec.model.image` (the model, namespace first, whose `spec.image`
//!   is that image); inline custom models are not explained;
//! - candidates and request: the operator's own mapping
//!   ([`aim_operator::service::selection::selection_inputs`]) over the namespace's
//!   AIMServiceTemplates and every AIMClusterServiceTemplate (the model's templates, derived
//!   ones excluded), so the explanation cannot disagree with what the operator selects;
//! - cluster GPUs: the GPUs [`kinfer_select::gpu::ClusterGpus`] identifies on the input Nodes
//!   and the `--set-gpus` Nodes.
//!
//! A service that pins `spec.template.name` is reported as such above the table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use aim_operator::service::fetch::TemplateInfo;
use aim_operator::service::selection::selection_inputs;
use anyhow::{Context, Result, anyhow, bail};
use kinfer_api::aim::{AIMClusterServiceTemplate, AIMService, AIMServiceTemplate};
use kinfer_select::gpu::ClusterGpus;
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

/// The service and its namespace's and the cluster's templates, typed for the operator's
/// selection mapping ([`aim_operator::service::selection::selection_inputs`]). Objects that do
/// not decode are left out (the render step already reported them).
fn typed(
    service: &Value,
    namespace: &str,
    objects: &[Value],
) -> Result<(AIMService, Vec<TemplateInfo>)> {
    let svc: AIMService =
        serde_json::from_value(service.clone()).context("the AIMService does not decode")?;
    let mut templates: Vec<TemplateInfo> = objects
        .iter()
        .filter(|o| is(o, "AIMServiceTemplate") && o["metadata"]["namespace"] == namespace)
        .filter_map(|o| serde_json::from_value::<AIMServiceTemplate>(o.clone()).ok())
        .map(TemplateInfo::from)
        .collect();
    templates.extend(
        objects
            .iter()
            .filter(|o| is(o, "AIMClusterServiceTemplate"))
            .filter_map(|o| serde_json::from_value::<AIMClusterServiceTemplate>(o.clone()).ok())
            .map(TemplateInfo::from),
    );
    Ok((svc, templates))
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
    let (typed_svc, templates) = typed(svc, namespace, objects)?;
    let (_, candidates, request) = selection_inputs(&typed_svc, &model, &templates);
    let gpus = cluster_gpus(rendered, options).model_set();
    let selection = kinfer_select::select(&candidates, &request, &gpus);
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
