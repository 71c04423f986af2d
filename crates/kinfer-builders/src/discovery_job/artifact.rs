//! An AIM artifact's check-size Job, cache PVC and download Job (NOTES.md rows 21-22).
//!
//! Contract: names `<artifact>-check-size-<h>`, `<artifact>-cache-<h>` and
//! `<artifact>-download-<h>`, where `h` is upstream's 8-hex hash of the artifact's UID
//! ([`naming::aim::artifact_child_name`]), so an adopted artifact keeps its claim; the PVC is
//! ReadWriteMany, sized `ceil(bytes × (1 + headroom/100) / GiB)` Gi with at least 1Gi (10%
//! headroom by default; an overflowing size is an [`Error::Input`]) and never resized by the
//! builder's caller; both Jobs run as one identity (UID/GID/fsGroup 1000 by default, the
//! cache's owner); the download Job mounts the claim at `/cache` and an `emptyDir` at `/tmp`
//! (`HOME` and `TMPDIR` point there: its root filesystem is read-only and `kubectl` writes
//! `$HOME/.kube`), retries twice and is removed 600s after it finishes. Both containers get
//! CPU and memory ([`super::resources`]). Both pods carry the
//! input's `imagePullSecrets` (the artifact's). The download pod runs as the artifact's
//! progress ServiceAccount with its token mounted ([`super::progress`], built apart by
//! [`super::progress_reporter`]); the check-size pod mounts no token.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Container, EnvVar, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PodSpec, Volume, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};

use super::JobResources;
use super::progress::progress_name;
use super::{JobShape, job};
use crate::env::{self, var};
use crate::error::Error;
use crate::meta::{Parent, object_meta};
use crate::naming::{self, Dns1123Label};
use crate::security::PodIdentity;
use crate::{kserve::APP, pod, security};

/// The downloader image when none is configured.
pub const DEFAULT_DOWNLOADER_IMAGE: &str = "ghcr.io/silogen/aim-artifact-downloader:0.2.0";
/// PVC headroom over the model size, in percent (the runtime config's default, one home).
pub const DEFAULT_HEADROOM_PERCENT: u64 =
    kinfer_api::aim::common::DEFAULT_PVC_HEADROOM_PERCENT.unsigned_abs() as u64;
const GIB: u128 = 1 << 30;

/// A resolved AIMArtifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactInput {
    /// The AIMArtifact.
    pub parent: Parent,
    /// The AIMArtifact's UID (upstream hashes it into its children's names).
    pub uid: String,
    /// Who the Jobs run as; UID/GID/fsGroup 1000 when absent.
    #[serde(default)]
    pub pod_identity: PodIdentity,
    /// `hf://org/model` or `s3://bucket/path`.
    pub source_uri: String,
    /// Model size in bytes; `None` until the check-size Job reported it.
    #[serde(default)]
    pub size_bytes: Option<u64>,
    /// Storage class of the PVC.
    #[serde(default)]
    pub storage_class: Option<String>,
    /// Headroom percent; [`DEFAULT_HEADROOM_PERCENT`] when absent.
    #[serde(default)]
    pub headroom_percent: Option<u64>,
    /// Downloader image; [`DEFAULT_DOWNLOADER_IMAGE`] when absent.
    #[serde(default)]
    pub downloader_image: Option<String>,
    /// Runtime-config env, then the artifact's env (by name, later wins).
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// Secrets for pulling the downloader image (the artifact's `spec.imagePullSecrets`),
    /// on both pods.
    #[serde(default)]
    pub image_pull_secrets: Vec<String>,
    /// CPU and memory of the check-size and download containers; [`JobResources::default`]'s
    /// when absent.
    #[serde(default)]
    pub resources: Option<JobResources>,
}

/// What to create for an artifact at its current stage.
#[derive(Debug, Clone, PartialEq)]
pub enum ArtifactJobs {
    /// The size is unknown: measure it.
    CheckSize(Box<Job>),
    /// The size is known: the claim and the Job that fills it.
    Download {
        /// The cache PVC.
        claim: Box<PersistentVolumeClaim>,
        /// The download Job.
        job: Box<Job>,
    },
}

/// The PVC size in GiB for `bytes` with `headroom_percent`: rounded up, at least 1; an
/// [`Error::Input`] when the headroom overflows.
pub fn cache_size_gib(bytes: u64, headroom_percent: u64) -> Result<u64, Error> {
    let overflow = || Error::Input {
        field: "headroomPercent",
        reason: format!("{headroom_percent}% headroom over {bytes} bytes overflows"),
    };
    let factor = headroom_percent.checked_add(100).ok_or_else(overflow)?;
    let padded = u128::from(bytes)
        .checked_mul(u128::from(factor))
        .ok_or_else(overflow)?;
    let gib = padded.div_ceil(100 * GIB).max(1);
    u64::try_from(gib).map_err(|_| overflow())
}

fn name(input: &ArtifactInput, stage: &str) -> Result<Dns1123Label, Error> {
    Ok(naming::aim::artifact_child_name(
        input.parent.name.as_str(),
        &input.uid,
        stage,
    )?)
}

/// The objects of the artifact's current stage; see the module contract.
pub fn artifact_objects(input: &ArtifactInput) -> Result<ArtifactJobs, Error> {
    let parent = &input.parent;
    let ns = parent.namespace.as_str();
    let image = input
        .downloader_image
        .clone()
        .unwrap_or_else(|| DEFAULT_DOWNLOADER_IMAGE.to_owned());
    let resources = input.resources.clone().unwrap_or_default();
    let Some(bytes) = input.size_bytes.filter(|b| *b > 0) else {
        let labels = parent.labels(APP, "check-size");
        let container = Container {
            name: "check-size".to_owned(),
            image: Some(image),
            command: Some(vec!["/check-size.sh".to_owned(), input.source_uri.clone()]),
            env: Some(input.env.clone()),
            resources: Some(resources.check_size),
            security_context: Some(security::container(false)),
            ..Container::default()
        };
        return Ok(ArtifactJobs::CheckSize(Box::new(job(
            name(input, "check-size")?.as_str(),
            ns,
            labels.all(),
            labels.selector(),
            JobShape {
                backoff_limit: 0,
                ttl_seconds: 600,
                active_deadline_seconds: None,
            },
            PodSpec {
                containers: vec![container],
                restart_policy: Some("Never".to_owned()),
                security_context: Some(security::pod_as(input.pod_identity)),
                // It talks to no API server.
                automount_service_account_token: Some(false),
                image_pull_secrets: pod::pull_secrets(&input.image_pull_secrets),
                ..PodSpec::default()
            },
        ))));
    };
    let gib = cache_size_gib(
        bytes,
        input.headroom_percent.unwrap_or(DEFAULT_HEADROOM_PERCENT),
    )?;
    let claim_name = name(input, "cache")?;
    let cache_labels = parent.labels(APP, "cache");
    let claim = PersistentVolumeClaim {
        metadata: object_meta(
            claim_name.as_str(),
            Some(ns),
            cache_labels.all(),
            BTreeMap::new(),
        ),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteMany".to_owned()]),
            storage_class_name: input.storage_class.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_owned(),
                    Quantity(format!("{gib}Gi")),
                )])),
                limits: None,
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    };
    let base = [
        var("AIM_DOWNLOADER_PROTOCOL", "XET,HF_TRANSFER"),
        var("EXPECTED_SIZE_BYTES", bytes.to_string()),
        var("MOUNT_PATH", "/cache"),
        var("TARGET_DIR", "/cache"),
        var("STALL_TIMEOUT", "120"),
        var("HF_HOME", "/tmp/.hf"),
        var("HOME", pod::TMP_DIR),
        var("TMPDIR", pod::TMP_DIR),
        var("ARTIFACT_NAME", parent.name.as_str()),
        var("ARTIFACT_NAMESPACE", ns),
    ];
    let container = Container {
        name: "download".to_owned(),
        image: Some(image),
        args: Some(vec![input.source_uri.clone()]),
        env: Some(env::merge(&[&base, &input.env])),
        volume_mounts: Some(vec![
            pod::mount("cache", "/cache", false),
            pod::mount("tmp", pod::TMP_DIR, false),
        ]),
        resources: Some(resources.download),
        security_context: Some(security::container(true)),
        ..Container::default()
    };
    let labels = parent.labels(APP, "download");
    let reporter_name = progress_name(parent.name.as_str(), &input.uid)?;
    let job = job(
        name(input, "download")?.as_str(),
        ns,
        labels.all(),
        labels.selector(),
        JobShape {
            backoff_limit: 2,
            ttl_seconds: 600,
            active_deadline_seconds: None,
        },
        PodSpec {
            containers: vec![container],
            restart_policy: Some("Never".to_owned()),
            security_context: Some(security::pod_as(input.pod_identity)),
            service_account_name: Some(reporter_name.to_string()),
            automount_service_account_token: Some(true),
            image_pull_secrets: pod::pull_secrets(&input.image_pull_secrets),
            volumes: Some(vec![
                Volume {
                    name: "cache".to_owned(),
                    persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                        claim_name: claim_name.to_string(),
                        read_only: None,
                    }),
                    ..Volume::default()
                },
                pod::scratch_volume("tmp", None),
            ]),
            ..PodSpec::default()
        },
    );
    Ok(ArtifactJobs::Download {
        claim: Box::new(claim),
        job: Box::new(job),
    })
}
