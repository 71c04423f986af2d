//! Template fetch: everything the template depends on, and the discovery decision.
//!
//! Contract: reads only (the one side effect is reserving a discovery slot in the process-local
//! [`crate::context::DiscoverySlots`] when a Job is about to be created, which happens only
//! when every upstream dependency is resolved, i.e. when the engine will plan and apply it, and
//! releasing it once the template's Job is no longer running).
//! Reads the runtime config; the model (namespace templates: AIMModel, then AIMClusterModel;
//! cluster templates: AIMClusterModel; from the informer caches, [`crate::informers`], a miss
//! confirmed with the API server: no model event wakes a template); the Nodes' labels when
//! the template needs a GPU (informer cache when available); the discovery Job among the children; while it runs, its
//! pod's container states (a pod that cannot pull its image or build its container config
//! fails the attempt at once); when it succeeded and the template is not discovered yet, its
//! pod's log (at most [`MAX_LOG_BYTES`]); the running discovery Jobs cluster-wide (cache or
//! list by label) to throttle at the configured cap. Informer caches are waited for at most
//! [`CACHE_WAIT`], then the API server is asked. Errors are captured per item; a discovery
//! Job that could not be read is [`JobSeen::Unreadable`], never taken for a running one (a
//! discovered template keeps its profile through the error).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

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
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::discovery::{self, Decision, JobSeen};
use super::gpu::{self, GpuAvailability};
use super::parse;
use crate::context::Context;
use crate::informers::{CacheSlot, Informers};
use crate::runtime_config::resolve;

/// The labels every discovery Job carries (`app.kubernetes.io/{name,component}`).
pub const DISCOVERY_SELECTOR: &str =
    "app.kubernetes.io/name=aim-discovery,app.kubernetes.io/component=discovery";

/// The most of a discovery pod's log that is read: the JSON profile is a few KiB; a longer log
/// is cut here and then fails to parse (an invalid-output attempt), never fills memory.
pub const MAX_LOG_BYTES: i64 = 1024 * 1024;

pub use crate::informers::CACHE_WAIT;

/// Container waiting reasons that mean the discovery pod will not start without a change (a
/// fixed image, secret or config map): the attempt fails at once instead of holding a slot.
const STUCK_REASONS: &[&str] = &[
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

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
    /// The UID of the discovery Job of the current name, when it exists.
    pub job_uid: Option<String>,
    /// The template's status as re-read from the API server when the cached copy had no
    /// profile (`None`: the cached copy is current enough). Compose must read the previous
    /// profile, sources, affinity and counted Job from the same status fetch decided on: a
    /// stale cached copy would drop a profile just written.
    pub fresh_status: Option<kinfer_api::aim::AIMServiceTemplateStatus>,
    /// The AIMTemplateCache of the template's name read by name, when caching is enabled and
    /// no such cache is among the template's children (a user's cache, or the template's own
    /// one not yet in the watch cache).
    pub cache_by_name: Option<kinfer_api::aim::AIMTemplateCache>,
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
    /// `status.discoveryJob.uid`: the Job whose attempt was counted last.
    pub counted_uid: Option<&'a str>,
    /// The engine's field manager (the Job's `managed-by`).
    pub manager: &'a str,
}

/// `name` from `slot`'s informer cache, else (a miss, or no ready cache) from the API server.
/// Templates are not triggered by their model's watch, so a miss is confirmed: a cache that has
/// not caught up with a model created just before the template must not leave the template
/// `ModelNotFound` (user-fixable: nothing would reconcile it again).
async fn read_model<K>(
    slot: &CacheSlot<K>,
    api: Api<K>,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<K>, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + 'static,
{
    match Informers::get(slot, namespace, name).await {
        Some(Some(cached)) => Ok(Some(Arc::unwrap_or_clone(cached))),
        _ => api.get_opt(name).await,
    }
}

/// The template's model (namespace model first for namespace templates); see [`read_model`].
async fn fetch_model(
    ctx: &Context,
    client: &Client,
    namespace: Option<&str>,
    name: &str,
) -> FetchResult<ModelRef, CategorizedError> {
    // A name no object can have is never put into a request path: the template's validation
    // names the field.
    if !kinfer_builders::naming::is_dns1123_subdomain(name) {
        return Ok(None);
    }
    let up = |e: kube::Error| e.categorize_in(Direction::Upstream);
    if let Some(ns) = namespace {
        let api = Api::<AIMModel>::namespaced(client.clone(), ns);
        let model = read_model(&ctx.informers.models, api, Some(ns), name)
            .await
            .map_err(up)?;
        if let Some(m) = model {
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
    }
    let api = Api::<AIMClusterModel>::all(client.clone());
    let model = read_model(&ctx.informers.cluster_models, api, None, name)
        .await
        .map_err(up)?;
    Ok(model.map(|m| ModelRef {
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
        && crate::informers::ready(store).await
    {
        return Ok(store.state().iter().map(|n| n.labels().clone()).collect());
    }
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    Ok(nodes.items.iter().map(|n| n.labels().clone()).collect())
}

/// Why a running discovery pod cannot start, from its container states (`None`: it may).
pub fn stuck_reason(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref())
        .find_map(|w| {
            let reason = w.reason.as_deref()?;
            STUCK_REASONS.contains(&reason).then(|| {
                match w
                    .message
                    .as_deref()
                    .map(str::trim)
                    .filter(|m| !m.is_empty())
                {
                    Some(m) => format!("{reason}: {m}"),
                    None => reason.to_owned(),
                }
            })
        })
}

/// The pods of discovery Job `job`.
async fn job_pods(client: &Client, namespace: &str, job: &str) -> Result<Vec<Pod>, kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    Ok(pods
        .list(&ListParams::default().labels(&format!("job-name={job}")))
        .await?
        .items)
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

/// How long after its creation a discovery Job may hold a slot: its deadline, plus the time
/// Kubernetes takes to fail it.
pub const SLOT_HOLD_LIMIT: std::time::Duration = std::time::Duration::from_secs(
    kinfer_builders::discovery_job::DISCOVERY_DEADLINE_SECONDS.unsigned_abs() + 5 * 60,
);

/// Whether `job` holds a discovery slot at `now`: it runs (no Complete or Failed condition), a
/// template of the AIM group controls it (the selector's labels alone are anyone's to set, in
/// any namespace; a dependent of a template that is gone is garbage collected), and it was
/// created less than [`SLOT_HOLD_LIMIT`] ago (a suspended Job never ends on its own).
pub fn holds_slot(job: &Job, now: k8s_openapi::jiff::Timestamp) -> bool {
    let by_template = job.owner_references().iter().any(|o| {
        o.controller == Some(true)
            && o.api_version
                .starts_with(&format!("{}/", kinfer_api::aim::GROUP))
            && matches!(
                o.kind.as_str(),
                "AIMServiceTemplate" | "AIMClusterServiceTemplate"
            )
    });
    let recent = job
        .metadata
        .creation_timestamp
        .as_ref()
        .is_some_and(|t| kinfer_state::clock::elapsed(t.0, now) < SLOT_HOLD_LIMIT);
    job_outcome(job).is_none() && by_template && recent
}

/// (running, known) discovery Job keys: running are those that hold a slot ([`holds_slot`]).
async fn discovery_jobs(
    ctx: &Context,
    client: &Client,
) -> Result<(Vec<String>, Vec<String>), kube::Error> {
    let key = |j: &Job| format!("{}/{}", j.namespace().unwrap_or_default(), j.name_any());
    let now = ctx.now();
    let split = |jobs: &[&Job]| {
        let running = jobs
            .iter()
            .filter(|j| holds_slot(j, now))
            .map(|j| key(j))
            .collect();
        let known = jobs.iter().map(|j| key(j)).collect();
        (running, known)
    };
    if let Some(store) = &ctx.jobs
        && crate::informers::ready(store).await
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
    let list = job_pods(client, namespace, job).await?;
    let Some(pod) = list
        .iter()
        .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
    else {
        return Ok(None);
    };
    let params = LogParams {
        container: Some("discovery".to_owned()),
        limit_bytes: Some(MAX_LOG_BYTES),
        ..LogParams::default()
    };
    Api::<Pod>::namespaced(client.clone(), namespace)
        .logs(&pod.name_any(), &params)
        .await
        .map(Some)
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
    resources: &k8s_openapi::api::core::v1::ResourceRequirements,
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
        resources: Some(resources.clone()),
    })
}

/// Reads and decides; see the module contract.
pub async fn fetch(
    ctx: &Context,
    client: &Client,
    t: TemplateFacts<'_>,
    children: &Children,
) -> Fetched {
    let runtime_config = resolve::read(
        ctx,
        client,
        t.namespace,
        t.spec.runtime_config_name.as_deref(),
    )
    .await;
    let model = fetch_model(ctx, client, t.namespace, &t.spec.model_name).await;
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
        Ok(Some(m)) => match job_input(t, m, job_namespace, &ctx.settings.jobs.discovery) {
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
    let hash = job.as_ref().map(discovery::spec_hash);
    let gpu_available = gpu.as_ref().is_ok_and(GpuAvailability::is_available);
    let inline = !t.spec.model_sources.is_empty();
    let same_hash = t.previous.and_then(|p| p.spec_hash.as_deref()) == hash.as_deref();
    // The plan is blocked while the runtime config does not resolve: no Job is wanted then.
    let upstream_ok = resolve::resolve(&runtime_config).0.errors.is_empty();
    let mut seen = JobSeen::Absent;
    let mut job_uid = None;
    if let Some(name) = &job_name
        && gpu_available
        && !inline
    {
        match children.fetch::<Job>(Some(job_namespace), name) {
            Ok(Some(j)) => {
                job_uid.clone_from(&j.metadata.uid);
                seen = match job_outcome(&j) {
                    None => match job_pods(client, job_namespace, name).await {
                        Ok(pods) => pods
                            .iter()
                            .find_map(stuck_reason)
                            .map_or(JobSeen::Running, JobSeen::Stuck),
                        Err(e) => {
                            discovery_errors.push(infra(&e, "read discovery pods"));
                            JobSeen::Running
                        }
                    },
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
                seen = JobSeen::Unreadable;
            }
        }
    }
    let now = ctx.now();
    let (mut decision, mut bookkeeping) = discovery::decide(discovery::Inputs {
        model_ok: job_name.is_some(),
        upstream_ok,
        gpu_available,
        inline,
        has_profile: t.has_profile,
        previous: t.previous,
        hash: hash.as_deref(),
        job: seen,
        job_uid: job_uid.as_deref(),
        counted_uid: t.counted_uid,
        now,
        settings: &ctx.settings.discovery,
    });
    if let Some(name) = &job_name
        && !matches!(decision, Decision::Create | Decision::Running)
    {
        // This template's Job is not running (finished, failed, dropped or not wanted): it
        // holds no slot, even if the cache never saw it come and go.
        ctx.slots.release(&format!("{job_namespace}/{name}"));
    }
    if decision == Decision::Create
        && let Some(name) = &job_name
    {
        match discovery_jobs(ctx, client).await {
            Ok((running, known)) => {
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
        job_uid,
        fresh_status: None,
        cache_by_name: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: serde_json::Value) -> Pod {
        let mut pod = serde_json::json!({"metadata": {"name": "p"}});
        pod["status"] = status;
        serde_json::from_value(pod).unwrap()
    }

    #[test]
    fn pods_that_cannot_start_are_stuck() {
        let waiting = |reason: &str, message: &str| {
            pod(
                serde_json::json!({"phase": "Pending", "containerStatuses": [{
                "name": "discovery", "image": "i", "imageID": "", "ready": false,
                "restartCount": 0,
                "state": {"waiting": {"reason": reason, "message": message}}}]}),
            )
        };
        assert_eq!(
            stuck_reason(&waiting("ImagePullBackOff", "back-off pulling i")),
            Some("ImagePullBackOff: back-off pulling i".into())
        );
        assert_eq!(
            stuck_reason(&waiting("CreateContainerConfigError", " ")),
            Some("CreateContainerConfigError".into())
        );
        assert_eq!(stuck_reason(&waiting("ContainerCreating", "")), None);
        assert_eq!(
            stuck_reason(&pod(serde_json::json!({"phase": "Running"}))),
            None
        );
        let init = pod(
            serde_json::json!({"phase": "Pending", "initContainerStatuses": [{
            "name": "init", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ErrImagePull"}}}]}),
        );
        assert_eq!(stuck_reason(&init), Some("ErrImagePull".into()));
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    fn job(owner: Option<&str>, created: &str, condition: Option<&str>) -> Job {
        let mut j = serde_json::json!({"metadata": {"name": "j", "creationTimestamp": created}});
        if let Some(kind) = owner {
            j["metadata"]["ownerReferences"] = serde_json::json!([{
                "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": kind, "name": "t",
                "uid": "u", "controller": true}]);
        }
        if let Some(t) = condition {
            j["status"] = serde_json::json!({"conditions": [{"type": t, "status": "True"}]});
        }
        serde_json::from_value(j).unwrap()
    }

    #[test]
    fn only_a_recent_running_job_a_template_controls_holds_a_slot() {
        let now: k8s_openapi::jiff::Timestamp = "2026-01-01T12:00:00Z".parse().unwrap();
        let recent = "2026-01-01T11:50:00Z";
        assert!(holds_slot(
            &job(Some("AIMServiceTemplate"), recent, None),
            now
        ));
        assert!(holds_slot(
            &job(Some("AIMClusterServiceTemplate"), recent, None),
            now
        ));
        assert!(!holds_slot(&job(None, recent, None), now), "labels alone");
        assert!(!holds_slot(&job(Some("Deployment"), recent, None), now));
        assert!(!holds_slot(
            &job(Some("AIMServiceTemplate"), recent, Some("Complete")),
            now
        ));
        let stale = "2026-01-01T11:00:00Z";
        assert!(
            !holds_slot(&job(Some("AIMServiceTemplate"), stale, None), now),
            "past its deadline and the grace after it"
        );
    }
}
