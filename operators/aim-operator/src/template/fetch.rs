//! Template fetch: everything the template depends on, and the discovery decision.
//!
//! Contract: reads only (the one side effect is reserving a discovery slot in the process-local
//! [`crate::context::DiscoverySlots`] when a Job is about to be created). Reads the runtime
//! config; the model (namespace templates: AIMModel, then AIMClusterModel; cluster templates:
//! AIMClusterModel); the Nodes' labels when the template needs a GPU (informer cache when
//! available); the discovery Job among the children and, when it succeeded and the template is
//! not discovered yet, its pod's log; the running discovery Jobs cluster-wide (cache or list by
//! label) to throttle at the configured cap. Errors are captured per item.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kinfer_api::aim::common::{ResolutionScope, ResolvedReference};
use kinfer_api::aim::template::AIMDiscoveryState;
use kinfer_api::aim::{AIMClusterModel, AIMModel, AIMModelSpec, AIMServiceTemplateSpecCommon};
use kinfer_builders::discovery_job::DiscoveryInput;
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use kinfer_select::gpu::ClusterGpus;
use kinfer_state::pipeline::Children;
use kinfer_state::{CategorizeIn, CategorizedError, Direction, ErrorCategory, FetchResult, Reason};
use kube::api::{ListParams, LogParams};
use kube::{Api, Client, ResourceExt};

use super::discovery::{self, Decision, HashInput, JobSeen};
use super::gpu::{self, GpuAvailability};
use super::parse;
use crate::context::Context;
use crate::runtime_config::resolve;

/// The labels every discovery Job carries (`app.kubernetes.io/{name,component}`).
pub const DISCOVERY_SELECTOR: &str =
    "app.kubernetes.io/name=aim-discovery,app.kubernetes.io/component=discovery";

/// The model a template resolved to.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRef {
    /// For `status.resolvedModel`.
    pub reference: ResolvedReference,
    /// The model's spec.
    pub spec: AIMModelSpec,
}

/// What the template's fetch step read and decided.
#[derive(Debug)]
pub struct Fetched {
    /// The runtime config.
    pub runtime_config: resolve::Fetched,
    /// The model.
    pub model: FetchResult<ModelRef, CategorizedError>,
    /// GPU availability (CPU-only when the template needs no GPU).
    pub gpu: Result<GpuAvailability, CategorizedError>,
    /// The discovery Job's input, when the model is resolved.
    pub job: Option<DiscoveryInput>,
    /// The discovery decision.
    pub decision: Decision,
    /// The bookkeeping for `status.discovery`.
    pub discovery: Option<AIMDiscoveryState>,
    /// Errors while observing discovery (Job, pods, log, active Jobs).
    pub discovery_errors: Vec<CategorizedError>,
    /// Running discovery Jobs cluster-wide, for messages.
    pub active_jobs: usize,
}

/// Everything fetch needs to know about the template.
#[derive(Debug, Clone, Copy)]
pub struct TemplateFacts<'a> {
    /// Name.
    pub name: &'a str,
    /// Namespace (`None` for cluster templates).
    pub namespace: Option<&'a str>,
    /// Spec.
    pub spec: &'a AIMServiceTemplateSpecCommon,
    /// `status.profile` is set.
    pub has_profile: bool,
    /// `status.discovery`.
    pub previous: Option<&'a AIMDiscoveryState>,
    /// The engine's field manager (the Job's `managed-by`).
    pub manager: &'a str,
}

async fn fetch_model(
    client: &Client,
    namespace: Option<&str>,
    name: &str,
) -> FetchResult<ModelRef, CategorizedError> {
    let up = |e: kube::Error| e.categorize_in(Direction::Upstream);
    if let Some(ns) = namespace
        && let Some(m) = Api::<AIMModel>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await
            .map_err(up)?
    {
        return Ok(Some(ModelRef {
            reference: ResolvedReference {
                kind: Some("AIMModel".into()),
                name: Some(name.to_owned()),
                namespace: Some(ns.to_owned()),
                scope: Some(ResolutionScope::Namespace),
                uid: m.uid(),
            },
            spec: m.spec,
        }));
    }
    Ok(Api::<AIMClusterModel>::all(client.clone())
        .get_opt(name)
        .await
        .map_err(up)?
        .map(|m| ModelRef {
            reference: ResolvedReference {
                kind: Some("AIMClusterModel".into()),
                name: Some(name.to_owned()),
                namespace: None,
                scope: Some(ResolutionScope::Cluster),
                uid: m.uid(),
            },
            spec: m.spec.0,
        }))
}

async fn node_labels(
    ctx: &Context,
    client: &Client,
) -> Result<Vec<BTreeMap<String, String>>, kube::Error> {
    if let Some(store) = &ctx.nodes
        && store.wait_until_ready().await.is_ok()
    {
        return Ok(store.state().iter().map(|n| n.labels().clone()).collect());
    }
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    Ok(nodes.items.iter().map(|n| n.labels().clone()).collect())
}

/// Whether a Job finished: `Some(Ok(()))` succeeded, `Some(Err(why))` failed.
pub fn job_outcome(job: &Job) -> Option<Result<(), String>> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    for c in conditions.iter().filter(|c| c.status == "True") {
        match c.type_.as_str() {
            "Complete" => return Some(Ok(())),
            "Failed" => {
                let reason = c.reason.clone().unwrap_or_else(|| "JobFailed".into());
                let message = c.message.clone().unwrap_or_default();
                return Some(Err(if message.is_empty() {
                    reason
                } else {
                    format!("{reason}: {message}")
                }));
            }
            _ => {}
        }
    }
    None
}

/// (running, known) discovery Job keys.
async fn discovery_jobs(
    ctx: &Context,
    client: &Client,
) -> Result<(Vec<String>, Vec<String>), kube::Error> {
    let key = |j: &Job| format!("{}/{}", j.namespace().unwrap_or_default(), j.name_any());
    let split = |jobs: &[&Job]| {
        let running = jobs
            .iter()
            .filter(|j| job_outcome(j).is_none())
            .map(|j| key(j))
            .collect();
        let known = jobs.iter().map(|j| key(j)).collect();
        (running, known)
    };
    if let Some(store) = &ctx.jobs
        && store.wait_until_ready().await.is_ok()
    {
        let state = store.state();
        let jobs: Vec<&Job> = state.iter().map(AsRef::as_ref).collect();
        return Ok(split(&jobs));
    }
    let list = Api::<Job>::all(client.clone())
        .list(&ListParams::default().labels(DISCOVERY_SELECTOR))
        .await?;
    let jobs: Vec<&Job> = list.items.iter().collect();
    Ok(split(&jobs))
}

async fn read_log(
    client: &Client,
    namespace: &str,
    job: &str,
) -> Result<Option<String>, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let list = pods
        .list(&ListParams::default().labels(&format!("job-name={job}")))
        .await?;
    let Some(pod) = list
        .items
        .iter()
        .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
    else {
        return Ok(None);
    };
    let params = LogParams {
        container: Some("discovery".to_owned()),
        ..LogParams::default()
    };
    pods.logs(&pod.name_any(), &params).await.map(Some)
}

fn infra(e: &kube::Error, what: &str) -> CategorizedError {
    let mut c = e.categorize_in(Direction::Downstream);
    c.message = format!("{what}: {}", c.message);
    c
}

/// The discovery Job's input for a resolved model.
pub fn job_input(
    t: TemplateFacts<'_>,
    model: &ModelRef,
    job_namespace: &str,
) -> Result<DiscoveryInput, CategorizedError> {
    let invalid = |m: String| {
        CategorizedError::new(ErrorCategory::InvalidSpec, m)
            .with_reason(Reason::custom("InvalidDiscoveryJob"))
    };
    let gpu = t
        .spec
        .parameters
        .hardware
        .as_ref()
        .and_then(|h| h.gpu.as_ref());
    let mut secrets: Vec<String> = model
        .spec
        .image_pull_secrets
        .iter()
        .map(|s| s.name.clone())
        .collect();
    for s in &t.spec.image_pull_secrets {
        if !secrets.contains(&s.name) {
            secrets.push(s.name.clone());
        }
    }
    let env = if t.namespace.is_some() {
        t.spec
            .env
            .iter()
            .cloned()
            .map(k8s_openapi::api::core::v1::EnvVar::try_from)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(format!("spec.env: {e}")))?
    } else {
        Vec::new()
    };
    Ok(DiscoveryInput {
        template: Dns1123Subdomain::new(t.name).map_err(|e| invalid(e.to_string()))?,
        namespace: Dns1123Label::new(job_namespace).map_err(|e| invalid(e.to_string()))?,
        managed_by: t.manager.to_owned(),
        model: model.reference.name.clone().unwrap_or_default(),
        image: model.spec.image.clone(),
        service_account_name: t
            .spec
            .service_account_name
            .clone()
            .or_else(|| model.spec.service_account_name.clone()),
        image_pull_secrets: secrets,
        env,
        metric: t.spec.parameters.metric.clone(),
        precision: t.spec.parameters.precision.clone(),
        gpu_model: gpu.and_then(|g| g.model.clone()),
        gpu_count: gpu.and_then(|g| g.requests).map(i64::from),
        profile_id: t.spec.profile_id.clone(),
    })
}

/// The discovery spec hash of a template and its model.
pub fn hash_of(t: &AIMServiceTemplateSpecCommon, image: &str) -> String {
    let gpu = t.parameters.hardware.as_ref().and_then(|h| h.gpu.as_ref());
    discovery::spec_hash(HashInput {
        model: &t.model_name,
        image,
        metric: t.parameters.metric.as_deref().unwrap_or_default(),
        precision: t.parameters.precision.as_deref().unwrap_or_default(),
        gpu_model: gpu.and_then(|g| g.model.as_deref()).unwrap_or_default(),
        gpu_count: i64::from(gpu.and_then(|g| g.requests).unwrap_or_default()),
        profile_id: t.profile_id.as_deref().unwrap_or_default(),
    })
}

/// Reads and decides; see the module contract.
pub async fn fetch(
    ctx: &Context,
    client: &Client,
    t: TemplateFacts<'_>,
    children: &Children,
) -> Fetched {
    let runtime_config =
        resolve::fetch(client, t.namespace, t.spec.runtime_config_name.as_deref()).await;
    let model = fetch_model(client, t.namespace, &t.spec.model_name).await;
    let hardware = t.spec.parameters.hardware.as_ref();
    let gpu = if hardware.and_then(|h| h.gpu.as_ref()).is_some() {
        node_labels(ctx, client)
            .await
            .map(|nodes| gpu::availability(hardware, &ClusterGpus::from_nodes(&nodes)))
            .map_err(|e| infra(&e, "list nodes"))
    } else {
        Ok(GpuAvailability::CpuOnly)
    };
    let job_namespace = t.namespace.unwrap_or(&ctx.settings.system_namespace);
    let mut discovery_errors = Vec::new();
    let job = match &model {
        Ok(Some(m)) => match job_input(t, m, job_namespace) {
            Ok(j) => Some(j),
            Err(e) => {
                discovery_errors.push(e);
                None
            }
        },
        _ => None,
    };
    let built = job
        .as_ref()
        .map(kinfer_builders::discovery_job::discovery_job)
        .transpose();
    let job_name = match built {
        Ok(j) => j.map(|j| j.name_any()),
        Err(e) => {
            discovery_errors.push(
                CategorizedError::new(ErrorCategory::InvalidSpec, e.to_string())
                    .with_reason(Reason::custom("InvalidDiscoveryJob")),
            );
            None
        }
    };
    let hash = match &model {
        Ok(Some(m)) => hash_of(t.spec, &m.spec.image),
        _ => String::new(),
    };
    let gpu_available = gpu.as_ref().is_ok_and(GpuAvailability::is_available);
    let inline = !t.spec.model_sources.is_empty();
    let same_hash = t.previous.and_then(|p| p.spec_hash.as_deref()) == Some(hash.as_str());
    let mut seen = JobSeen::Absent;
    if let Some(name) = &job_name
        && gpu_available
        && !inline
    {
        match children.fetch::<Job>(Some(job_namespace), name) {
            Ok(Some(j)) => {
                seen = match job_outcome(&j) {
                    None => JobSeen::Running,
                    Some(Err(why)) => JobSeen::Failed(why),
                    Some(Ok(())) if t.has_profile && same_hash => JobSeen::Absent,
                    Some(Ok(())) => match read_log(client, job_namespace, name).await {
                        Ok(Some(log)) => JobSeen::Succeeded(parse::parse(&log)),
                        Ok(None) => JobSeen::Running,
                        Err(e) => {
                            discovery_errors.push(infra(&e, "read discovery log"));
                            JobSeen::Running
                        }
                    },
                };
            }
            Ok(None) => {}
            Err(e) => {
                discovery_errors.push(e);
                seen = JobSeen::Running;
            }
        }
    }
    let now = ctx.now();
    let (mut decision, mut bookkeeping) = discovery::decide(discovery::Inputs {
        model_ok: job_name.is_some(),
        gpu_available,
        inline,
        has_profile: t.has_profile,
        previous: t.previous,
        hash: &hash,
        job: seen,
        now,
        settings: &ctx.settings.discovery,
    });
    let mut active = 0;
    if decision == Decision::Create
        && let Some(name) = &job_name
    {
        match discovery_jobs(ctx, client).await {
            Ok((running, known)) => {
                active = running.len();
                let key = format!("{job_namespace}/{name}");
                let s = &ctx.settings.discovery;
                if !ctx.slots.try_reserve(
                    &key,
                    &running,
                    &known,
                    s.max_active,
                    now,
                    s.reservation_ttl,
                ) {
                    decision = Decision::Throttled;
                    bookkeeping = t.previous.cloned();
                }
            }
            Err(e) => {
                discovery_errors.push(infra(&e, "count discovery jobs"));
                decision = Decision::Throttled;
                bookkeeping = t.previous.cloned();
            }
        }
    }
    Fetched {
        runtime_config,
        model,
        gpu,
        job,
        decision,
        discovery: bookkeeping,
        discovery_errors,
        active_jobs: active,
    }
}
