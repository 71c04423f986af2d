//! AIM Jobs: the discovery dry-run of a template, and an artifact's check-size Job, cache PVC
//! and download Job (`artifact`).
//!
//! Contract (`../shared/reference/aim/NOTES.md` section c): the discovery Job is named with
//! upstream's formula ([`naming::aim::discovery_job_name`]: `discover-<template[:45]>-<8 hex>`
//! over model, image, service account, env, pull secrets, metric, precision, GPU and profile,
//! then the container's resources, which upstream does not set), so a changed input gives a
//! new Job (Jobs are immutable); labels `app.kubernetes.io/{name=aim-discovery,
//! component=discovery,managed-by}` and `aim.eai.amd.com/template` on Job and pod; no retries
//! (`backoffLimit: 0`, the controller backs off), `ttlSecondsAfterFinished: 60`,
//! `activeDeadlineSeconds` [`DISCOVERY_DEADLINE_SECONDS`] (a dry-run that hangs fails instead
//! of holding one of the cluster's discovery slots forever), restart
//! `Never`; pod user 65532 under the restricted context; container `discovery` running the
//! AIM image with `dry-run --format=json`, CPU and memory from [`resources`] (hashed into the
//! name after upstream's inputs: a Job's template is immutable); env in order: log levels CRITICAL, the template's
//! env, `AIM_METRIC`, `AIM_PRECISION`, `AIM_GPU_MODEL`, `AIM_GPU_COUNT`, `AIM_PROFILE_ID`.

mod artifact;
mod progress;
pub mod resources;

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, PodSpec, PodTemplateSpec, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

pub use artifact::{
    ArtifactInput, ArtifactJobs, DEFAULT_DOWNLOADER_IMAGE, DEFAULT_HEADROOM_PERCENT,
    artifact_objects, cache_size_gib,
};
pub use progress::{
    PROGRESS_COMPONENT, ProgressReporter, progress_name, progress_reporter, progress_rule,
};
pub use resources::JobResources;

use crate::env::{self, var};
use crate::error::Error;
use crate::kserve::AIM_LABEL_DOMAIN;
use crate::labels::StandardLabels;
use crate::meta::object_meta;
use crate::naming::{self, Dns1123Label, Dns1123Subdomain};
use crate::{pod, security};

/// How long a discovery Job may run, image pull included (AIM images are tens of GB), before
/// Kubernetes fails it with `DeadlineExceeded`.
pub const DISCOVERY_DEADLINE_SECONDS: i64 = 30 * 60;

/// The non-root user of AIM Job pods.
pub const JOB_USER: i64 = 65532;

/// A resolved template, for its discovery Job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryInput {
    /// The template.
    pub template: Dns1123Subdomain,
    /// Where the Job runs: the template's namespace, or the operator's for cluster templates.
    pub namespace: Dns1123Label,
    /// The operator (`app.kubernetes.io/managed-by`).
    pub managed_by: String,
    /// The model's name.
    pub model: String,
    /// The AIM image.
    pub image: String,
    /// The model's service account.
    #[serde(default)]
    pub service_account_name: Option<String>,
    /// The model's pull secrets.
    #[serde(default)]
    pub image_pull_secrets: Vec<String>,
    /// The template's env (none for cluster templates).
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// Metric.
    #[serde(default)]
    pub metric: Option<String>,
    /// Precision.
    #[serde(default)]
    pub precision: Option<String>,
    /// GPU model.
    #[serde(default)]
    pub gpu_model: Option<String>,
    /// GPU count.
    #[serde(default)]
    pub gpu_count: Option<i64>,
    /// Profile ID.
    #[serde(default)]
    pub profile_id: Option<String>,
    /// The container's CPU and memory; [`JobResources::default`]'s `discovery` when absent.
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
}

impl DiscoveryInput {
    /// The container's resources ([`Self::resources`], else the default).
    fn resources(&self) -> ResourceRequirements {
        self.resources
            .clone()
            .unwrap_or_else(|| JobResources::default().discovery)
    }

    /// What kinfer hashes into the name besides upstream's inputs: the resources (a Job's pod
    /// template is immutable: other resources need another Job, also for a Job an earlier
    /// operator created without them).
    fn kinfer_hash(resources: &ResourceRequirements) -> String {
        serde_json::to_string(resources).unwrap_or_default()
    }

    /// What the name hashes: upstream's inputs, then `kinfer` ([`Self::kinfer_hash`]).
    fn hash<'a>(&'a self, kinfer: &'a str) -> naming::aim::DiscoveryHash<'a> {
        naming::aim::DiscoveryHash {
            model: &self.model,
            image: &self.image,
            service_account: self.service_account_name.as_deref().unwrap_or_default(),
            env: &self.env,
            image_pull_secrets: &self.image_pull_secrets,
            metric: self.metric.as_deref().unwrap_or_default(),
            precision: self.precision.as_deref().unwrap_or_default(),
            gpu: (self.gpu_model.is_some() || self.gpu_count.is_some()).then(|| {
                (
                    self.gpu_model.as_deref().unwrap_or_default(),
                    self.gpu_count.unwrap_or_default(),
                )
            }),
            profile_id: self.profile_id.as_deref().unwrap_or_default(),
            kinfer,
        }
    }
}

/// The label every AIM Job and its pods carry for the template: the raw name, as upstream
/// (sanitised only when it is not a label value, which upstream could not have created).
pub fn template_label(template: &str) -> (String, String) {
    let value = if naming::is_label_value(template) {
        template.to_owned()
    } else {
        naming::sanitize_label_value(template)
    };
    (format!("{AIM_LABEL_DOMAIN}/template"), value)
}

/// The discovery Job; see the module contract.
pub fn discovery_job(input: &DiscoveryInput) -> Result<Job, Error> {
    let resources = input.resources();
    let kinfer = DiscoveryInput::kinfer_hash(&resources);
    let name = naming::aim::discovery_job_name(input.template.as_str(), input.hash(&kinfer))?;
    let standard = StandardLabels::new(
        "aim-discovery",
        input.template.as_str(),
        "discovery",
        &input.managed_by,
    );
    let (key, value) = template_label(input.template.as_str());
    let mut labels = standard.all();
    labels.insert(key.clone(), value.clone());
    let pod_labels = BTreeMap::from([(key, value)]);

    let optional = |name: &str, v: &Option<String>| -> Vec<EnvVar> {
        v.iter().map(|v| var(name, v.clone())).collect()
    };
    let env = env::merge(&[
        &[
            var("AIM_LOG_LEVEL_ROOT", "CRITICAL"),
            var("AIM_LOG_LEVEL", "CRITICAL"),
        ],
        &input.env,
        &optional("AIM_METRIC", &input.metric),
        &optional("AIM_PRECISION", &input.precision),
        &optional("AIM_GPU_MODEL", &input.gpu_model),
        &optional("AIM_GPU_COUNT", &input.gpu_count.map(|c| c.to_string())),
        &optional("AIM_PROFILE_ID", &input.profile_id),
    ]);
    let container = Container {
        name: "discovery".to_owned(),
        image: Some(input.image.clone()),
        args: Some(vec!["dry-run".to_owned(), "--format=json".to_owned()]),
        env: Some(env),
        resources: Some(resources),
        security_context: Some(security::container(false)),
        ..Container::default()
    };
    Ok(job(
        name.as_str(),
        input.namespace.as_str(),
        labels,
        pod_labels,
        JobShape {
            backoff_limit: 0,
            ttl_seconds: 60,
            active_deadline_seconds: Some(DISCOVERY_DEADLINE_SECONDS),
        },
        PodSpec {
            containers: vec![container],
            restart_policy: Some("Never".to_owned()),
            service_account_name: input.service_account_name.clone(),
            // The dry run only prints its profile: no API token.
            automount_service_account_token: Some(false),
            image_pull_secrets: pod::pull_secrets(&input.image_pull_secrets),
            security_context: Some(security::pod(Some(JOB_USER), None)),
            ..PodSpec::default()
        },
    ))
}

/// Retry and cleanup of a Job.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobShape {
    pub backoff_limit: i32,
    pub ttl_seconds: i32,
    /// `activeDeadlineSeconds`; `None` for Jobs whose length depends on the data (downloads).
    pub active_deadline_seconds: Option<i64>,
}

pub(crate) fn job(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    pod_labels: BTreeMap<String, String>,
    shape: JobShape,
    spec: PodSpec,
) -> Job {
    Job {
        metadata: object_meta(name, Some(namespace), labels, BTreeMap::new()),
        spec: Some(JobSpec {
            backoff_limit: Some(shape.backoff_limit),
            active_deadline_seconds: shape.active_deadline_seconds,
            ttl_seconds_after_finished: Some(shape.ttl_seconds),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(spec),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}
