//! KServe objects for AIM: a ServingRuntime (namespace template) or ClusterServingRuntime
//! (cluster template) per template, and an InferenceService per AIMService referencing it.
//!
//! Contract:
//! - the runtime carries what the template fixes: the AIM image, port 8000 `http`, GPU
//!   resources for the template's GPU count with the per-GPU CPU/memory defaults, `/dev/shm`,
//!   startup/readiness/liveness probes on `/health`, GPU node affinity, restricted container
//!   security context; model format `aim` version `1`; KServe's storage initializer off (AIM
//!   downloads itself);
//! - the InferenceService carries what the service adds: the env merged by name in AIM's order
//!   (`../shared/reference/aim/NOTES.md` row 15, `AIM_ENGINE_ARGS` deep-merged, sorted by
//!   name), final resources (defaults < template < service), cache volume mounts, the
//!   restricted pod security context, replicas, and the runtime's name;
//! - the InferenceService name is aim-engine's, byte for byte
//!   ([`naming::aim::inference_service_name`]: `<svc>-<8 hex of the namespace>` within KServe's
//!   `<isvc>-predictor-<namespace>` hostname label); AIM label values use upstream's
//!   `SanitizeLabelValue` ([`naming::aim::aim_label_value`]);
//! - the predictor pod runs as an explicit identity ([`security::PodIdentity`], default
//!   UID/GID/fsGroup 1000 like AIM's downloader), so `runAsNonRoot` holds for images without a
//!   numeric `USER` and the cache PVC the downloader wrote is readable;
//! - resources merge per name (defaults < template < service); an extended resource's request
//!   and limit are aligned after the merge, with a [`Warning`]; GPU counts whose per-GPU
//!   defaults overflow are an [`Error::Input`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EnvVar, NodeSelector, PersistentVolumeClaimVolumeSource, ResourceRequirements,
    Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kinfer_api::kserve::{
    ClusterServingRuntime, ClusterServingRuntimeSpec, InferenceService, InferenceServiceSpec,
    ModelFormat, ModelSpec, PredictorSpec, RuntimeSpec, ServingRuntime, ServingRuntimeSpec,
    StorageHelper, SupportedModelFormat,
};
use serde::{Deserialize, Serialize};

use crate::env::{self, var};
use crate::error::{Error, Warning};
use crate::labels::StandardLabels;
use crate::meta::{Parent, non_empty_vec, object_meta};
use crate::naming::aim::aim_label_value;
use crate::naming::{self, Dns1123Label, Dns1123Subdomain};
use crate::security::PodIdentity;
use crate::{pod, resources, security};

/// The model format AIM runtimes declare and InferenceServices request.
pub const MODEL_FORMAT: &str = "aim";
/// Its version.
pub const MODEL_FORMAT_VERSION: &str = "1";
/// The container KServe merges the model into.
pub const CONTAINER: &str = "kserve-container";
/// The AIM HTTP port.
pub const PORT: i32 = 8000;
/// Where AIM looks for cached models.
pub const CACHE_PATH: &str = "/workspace/cache";
/// KServe's autoscaler-class annotation.
pub const AUTOSCALER_CLASS: &str = "serving.kserve.io/autoscalerClass";
/// AIM's label domain.
pub const AIM_LABEL_DOMAIN: &str = "aim.eai.amd.com";
/// `app.kubernetes.io/name` of the AIM objects.
pub const APP: &str = "aim";

/// A template's GPU need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Gpu {
    /// GPUs per replica.
    pub count: i64,
    /// The extended resource; AMD's (`amd.com/gpu`, from `kinfer_api::accelerator`) when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
}

impl Gpu {
    fn resource(&self) -> &str {
        self.resource_name
            .as_deref()
            .unwrap_or(kinfer_api::accelerator::AMD_GPU)
    }
}

/// A resolved AIM template, for its serving runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeInput {
    /// The template's name (the runtime gets the same name).
    pub template: Dns1123Subdomain,
    /// The operator.
    pub managed_by: String,
    /// The model's name (a label).
    pub model: String,
    /// The AIM image.
    pub image: String,
    /// Pull secrets for the image.
    #[serde(default)]
    pub image_pull_secrets: Vec<String>,
    /// GPUs; `None` for a CPU-only template.
    #[serde(default)]
    pub gpu: Option<Gpu>,
    /// Required node affinity resolved from the GPU's device IDs
    /// ([`pod::gpu_affinity`] of `kinfer_select`'s result).
    #[serde(default)]
    pub node_affinity: Option<NodeSelector>,
    /// `/dev/shm` size; [`pod::DEFAULT_SHM_SIZE`] when absent.
    #[serde(default)]
    pub shm_size: Option<String>,
}

/// Per-GPU defaults: requests CPU 4 and memory 32Gi, limit memory 48Gi, times the GPU count,
/// plus the GPUs themselves. A count whose products overflow is an [`Error::Input`].
pub fn default_resources(gpu: Option<&Gpu>) -> Result<ResourceRequirements, Error> {
    let Some(gpu) = gpu.filter(|g| g.count > 0) else {
        return Ok(ResourceRequirements::default());
    };
    let n = gpu.count;
    let times = |per: i64| {
        per.checked_mul(n).ok_or_else(|| Error::Input {
            field: "gpu.count",
            reason: format!("{n} GPUs overflow the per-GPU resource defaults"),
        })
    };
    let count = n.to_string();
    Ok(ResourceRequirements {
        requests: Some(resources::list(&[
            ("cpu", times(4)?.to_string()),
            ("memory", format!("{}Gi", times(32)?)),
            (gpu.resource(), count.clone()),
        ])),
        limits: Some(resources::list(&[
            ("memory", format!("{}Gi", times(48)?)),
            (gpu.resource(), count),
        ])),
        claims: None,
    })
}

fn runtime_labels(input: &RuntimeInput) -> BTreeMap<String, String> {
    let mut labels =
        StandardLabels::new(APP, input.template.as_str(), "runtime", &input.managed_by).all();
    if let Some(model) = aim_label_value(&input.model) {
        labels.insert(format!("{AIM_LABEL_DOMAIN}/model"), model);
    }
    labels
}

fn runtime_spec(input: &RuntimeInput) -> Result<RuntimeSpec, Error> {
    let port = IntOrString::String("http".to_owned());
    let (startup, readiness, liveness) = pod::engine_probes("/health", &port);
    let container = Container {
        name: CONTAINER.to_owned(),
        image: Some(input.image.clone()),
        ports: Some(vec![pod::tcp_port("http", PORT)]),
        env: Some(vec![var("VLLM_ENABLE_METRICS", "true")]),
        resources: Some(default_resources(input.gpu.as_ref())?),
        volume_mounts: Some(vec![pod::shm_mount()]),
        startup_probe: Some(startup),
        readiness_probe: Some(readiness),
        liveness_probe: Some(liveness),
        // AIM writes caches and compiled kernels under its home: not read-only.
        security_context: Some(security::container(false)),
        ..Container::default()
    };
    Ok(RuntimeSpec {
        supported_model_formats: vec![SupportedModelFormat {
            name: MODEL_FORMAT.to_owned(),
            version: Some(MODEL_FORMAT_VERSION.to_owned()),
            auto_select: Some(false),
        }],
        multi_model: Some(false),
        storage_helper: Some(StorageHelper {
            disabled: Some(true),
        }),
        containers: vec![container],
        volumes: Some(vec![pod::shm_volume(
            input.shm_size.as_deref().unwrap_or(pod::DEFAULT_SHM_SIZE),
        )]),
        image_pull_secrets: pod::pull_secrets(&input.image_pull_secrets),
        affinity: input
            .node_affinity
            .as_ref()
            .map(pod::required_node_affinity),
        node_selector: None,
        tolerations: None,
    })
}

/// The ServingRuntime of a namespace-scoped template, in its namespace.
pub fn serving_runtime(
    input: &RuntimeInput,
    namespace: &Dns1123Label,
) -> Result<ServingRuntime, Error> {
    Ok(ServingRuntime {
        metadata: object_meta(
            input.template.as_str(),
            Some(namespace.as_str()),
            runtime_labels(input),
            BTreeMap::new(),
        ),
        spec: ServingRuntimeSpec {
            runtime: runtime_spec(input)?,
        },
    })
}

/// The ClusterServingRuntime of a cluster-scoped template.
pub fn cluster_serving_runtime(input: &RuntimeInput) -> Result<ClusterServingRuntime, Error> {
    Ok(ClusterServingRuntime {
        metadata: object_meta(
            input.template.as_str(),
            None,
            runtime_labels(input),
            BTreeMap::new(),
        ),
        spec: ClusterServingRuntimeSpec {
            runtime: runtime_spec(input)?,
        },
    })
}

/// The env layers of an AIM InferenceService, lowest precedence first (NOTES.md row 15, with
/// the discovered profile's `env_vars` between the template's env and `AIM_MODEL_ID`, where
/// aim-engine's `buildMergedEnvVars` merges them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AimEnv {
    /// The merged runtime config's env.
    #[serde(default)]
    pub runtime_config: Vec<EnvVar>,
    /// `AIM_PROFILE_ID`.
    #[serde(default)]
    pub profile_id: Option<String>,
    /// `AIM_METRIC`.
    #[serde(default)]
    pub metric: Option<String>,
    /// `AIM_PRECISION`.
    #[serde(default)]
    pub precision: Option<String>,
    /// The template's env.
    #[serde(default)]
    pub template: Vec<EnvVar>,
    /// The discovered profile's `env_vars` (template `status.profile.env_vars`), over the
    /// template's env and under the service's (aim-engine `buildMergedEnvVars`).
    #[serde(default)]
    pub profile: BTreeMap<String, String>,
    /// `AIM_MODEL_ID` (first inline model source).
    #[serde(default)]
    pub model_id: Option<String>,
    /// The service's env (highest precedence).
    #[serde(default)]
    pub service: Vec<EnvVar>,
}

impl AimEnv {
    /// The merged env, sorted by name.
    pub fn merged(&self) -> Vec<EnvVar> {
        let base = [
            var("AIM_CACHE_PATH", CACHE_PATH),
            var("VLLM_ENABLE_METRICS", "true"),
        ];
        let single = |name: &str, v: &Option<String>| -> Vec<EnvVar> {
            v.iter().map(|v| var(name, v.clone())).collect()
        };
        let profile = single("AIM_PROFILE_ID", &self.profile_id);
        let metric = single("AIM_METRIC", &self.metric);
        let precision = single("AIM_PRECISION", &self.precision);
        let model_id = single("AIM_MODEL_ID", &self.model_id);
        let discovered: Vec<EnvVar> = self
            .profile
            .iter()
            .map(|(name, value)| var(name, value.clone()))
            .collect();
        env::merge_sorted(&[
            &base,
            &self.runtime_config,
            &profile,
            &metric,
            &precision,
            &self.template,
            &discovered,
            &model_id,
            &self.service,
        ])
    }
}

/// A model cache PVC to mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheMount {
    /// The PVC.
    pub claim_name: String,
    /// The model ID (`org/name`); the model lives at `<pvc>/<modelId>` and is mounted at
    /// `/workspace/cache/<modelId>`.
    pub model_id: String,
}

/// How many replicas, and who scales.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "mode")]
pub enum Scaling {
    /// A fixed count; KServe creates no autoscaler (`autoscalerClass: none`).
    Fixed {
        /// Replicas.
        replicas: i32,
    },
    /// Bounds for an autoscaler kinfer creates itself (`autoscalerClass: external`).
    External {
        /// Minimum.
        min: i32,
        /// Maximum.
        max: i32,
    },
}

/// A resolved AIMService, for its InferenceService.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InferenceServiceInput {
    /// The AIMService.
    pub parent: Parent,
    /// The ServingRuntime or ClusterServingRuntime (named after the template).
    pub runtime: String,
    /// The model's name (a label).
    pub model: String,
    /// The template's GPUs.
    #[serde(default)]
    pub gpu: Option<Gpu>,
    /// The template's resources (over the defaults).
    #[serde(default)]
    pub template_resources: Option<ResourceRequirements>,
    /// The service's resources (over the template's).
    #[serde(default)]
    pub service_resources: Option<ResourceRequirements>,
    /// Env layers.
    #[serde(default)]
    pub env: AimEnv,
    /// Model caches to mount.
    #[serde(default)]
    pub caches: Vec<CacheMount>,
    /// Replicas.
    pub scaling: Scaling,
    /// Pod service account.
    #[serde(default)]
    pub service_account_name: Option<String>,
    /// Pull secrets.
    #[serde(default)]
    pub image_pull_secrets: Vec<String>,
    /// Who the predictor runs as; UID/GID/fsGroup 1000 (the cache's owner) when absent.
    #[serde(default)]
    pub pod_identity: PodIdentity,
}

/// A built InferenceService and what the caller should surface.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltInferenceService {
    /// The InferenceService.
    pub inference_service: InferenceService,
    /// Warnings (extended resources aligned after the merge).
    pub warnings: Vec<Warning>,
}

/// The InferenceService of an AIMService; see the module contract.
pub fn inference_service(input: &InferenceServiceInput) -> Result<BuiltInferenceService, Error> {
    let parent = &input.parent;
    let name =
        naming::aim::inference_service_name(parent.name.as_str(), parent.namespace.as_str())?;
    let mut labels = parent.labels(APP, "inference").all();
    for (key, value) in [
        ("service", Some(parent.name.as_str())),
        ("template", Some(input.runtime.as_str())),
        ("model", Some(input.model.as_str())),
        ("metric", input.env.metric.as_deref()),
        ("precision", input.env.precision.as_deref()),
    ] {
        if let Some(value) = value.and_then(aim_label_value) {
            labels.insert(format!("{AIM_LABEL_DOMAIN}/{key}"), value);
        }
    }
    let mut resources = default_resources(input.gpu.as_ref())?;
    let mut warnings = Vec::new();
    for over in [&input.template_resources, &input.service_resources]
        .into_iter()
        .flatten()
    {
        let (merged, w) = resources::merge(resources, over);
        resources = merged;
        warnings.extend(w);
    }
    let (volumes, mounts) = cache_volumes(&input.caches)?;
    let (min, max, class) = match input.scaling {
        Scaling::Fixed { replicas } => (replicas, replicas, "none"),
        Scaling::External { min, max } => (min, max, "external"),
    };
    let annotations = BTreeMap::from([(AUTOSCALER_CLASS.to_owned(), class.to_owned())]);
    let inference_service = InferenceService {
        metadata: object_meta(
            name.as_str(),
            Some(parent.namespace.as_str()),
            labels,
            annotations,
        ),
        spec: InferenceServiceSpec {
            predictor: PredictorSpec {
                model: Some(ModelSpec {
                    model_format: ModelFormat {
                        name: MODEL_FORMAT.to_owned(),
                        version: Some(MODEL_FORMAT_VERSION.to_owned()),
                    },
                    runtime: Some(input.runtime.clone()),
                    env: Some(input.env.merged()),
                    resources: Some(resources),
                    volume_mounts: non_empty_vec(mounts),
                }),
                min_replicas: Some(min),
                max_replicas: Some(max),
                service_account_name: input.service_account_name.clone(),
                // The model server never calls the Kubernetes API: no token to steal.
                automount_service_account_token: Some(false),
                image_pull_secrets: pod::pull_secrets(&input.image_pull_secrets),
                security_context: Some(security::pod_as(input.pod_identity)),
                volumes: non_empty_vec(volumes),
                ..PredictorSpec::default()
            },
        },
        status: None,
    };
    Ok(BuiltInferenceService {
        inference_service,
        warnings,
    })
}

fn cache_volumes(caches: &[CacheMount]) -> Result<(Vec<Volume>, Vec<VolumeMount>), Error> {
    let mut volumes = Vec::with_capacity(caches.len());
    let mut mounts = Vec::with_capacity(caches.len());
    for cache in caches {
        if cache.model_id.split('/').any(|s| s.is_empty() || s == "..") {
            return Err(Error::Input {
                field: "caches[].modelId",
                reason: format!("{:?} is not a relative model path", cache.model_id),
            });
        }
        let volume = naming::child_name(&["cache", &cache.claim_name], &[&cache.claim_name], 63)?;
        if volumes.iter().any(|v: &Volume| v.name == volume.as_str()) {
            mounts.push(cache_mount(volume.as_str(), &cache.model_id));
            continue;
        }
        volumes.push(Volume {
            name: volume.to_string(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: cache.claim_name.clone(),
                read_only: None,
            }),
            ..Volume::default()
        });
        mounts.push(cache_mount(volume.as_str(), &cache.model_id));
    }
    Ok((volumes, mounts))
}

fn cache_mount(volume: &str, model_id: &str) -> VolumeMount {
    VolumeMount {
        name: volume.to_owned(),
        mount_path: format!("{CACHE_PATH}/{model_id}"),
        sub_path: Some(model_id.to_owned()),
        ..VolumeMount::default()
    }
}
