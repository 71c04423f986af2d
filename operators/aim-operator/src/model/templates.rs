//! The templates a model wants (NOTES rows 3-5): pure.
//!
//! Contract:
//! - One template per recommended deployment of the image metadata (unless
//!   `discovery.createServiceTemplates=false`), named by `naming::aim::template_name`, with
//!   `modelName`, `metric`, `precision`, `profileId`, `hardware.gpu{model,requests}` (only when
//!   the GPU model is set and the count is positive), and the model's pull secrets, service
//!   account and runtime config name. Identical names collapse to the first.
//! - Custom templates (`spec.customTemplates`, additive) named by
//!   `naming::aim::custom_template_name`, hardware merged field by field over
//!   `spec.custom.hardware`, the declared name in the `template.alias` label, inline
//!   `modelSources` of a custom model; a custom model without custom templates gets one.
//! - Labels `aim.eai.amd.com/model=<model>`, `aim.eai.amd.com/origin=auto-generated`.

use std::collections::BTreeMap;

use kinfer_api::aim::common::{AIMRuntimeParameters, DEFAULT_GPU_RESOURCE_NAME};
use kinfer_api::aim::model::AIMCustomTemplate;
use kinfer_api::aim::{
    AIMGpuRequirements, AIMHardwareRequirements, AIMModelSpec, AIMServiceTemplateSpecCommon,
    ImageMetadata,
};
use kinfer_builders::naming::NameError;
use kinfer_builders::naming::aim::{
    CustomTemplate, Deployment, custom_template_name, template_name,
};
use kinfer_select::gpu::GpuModel;

use crate::scheme::{ALIAS_LABEL, AUTO_GENERATED, MODEL_LABEL, ORIGIN_LABEL, label_value};

/// A template the model wants.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredTemplate {
    /// Its name.
    pub name: String,
    /// Its spec (the fields both template kinds share).
    pub spec: AIMServiceTemplateSpecCommon,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

fn base(model: &str, spec: &AIMModelSpec) -> AIMServiceTemplateSpecCommon {
    AIMServiceTemplateSpecCommon {
        model_name: model.to_owned(),
        image_pull_secrets: spec.image_pull_secrets.clone(),
        service_account_name: spec.service_account_name.clone(),
        runtime_config_name: spec.runtime_config_name.clone(),
        ..AIMServiceTemplateSpecCommon::default()
    }
}

fn labels(model: &str, alias: Option<&str>) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        (MODEL_LABEL.to_owned(), label_value(model)),
        (ORIGIN_LABEL.to_owned(), AUTO_GENERATED.to_owned()),
    ]);
    if let Some(a) = alias.filter(|a| !a.is_empty()) {
        l.insert(ALIAS_LABEL.to_owned(), label_value(a));
    }
    l
}

fn non_empty(s: Option<&String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty()).cloned()
}

/// Template hardware over model hardware, field by field.
pub fn merge_hardware(
    base: Option<&AIMHardwareRequirements>,
    over: Option<&AIMHardwareRequirements>,
) -> Option<AIMHardwareRequirements> {
    match (base, over) {
        (None, o) => o.cloned(),
        (b, None) => b.cloned(),
        (Some(b), Some(o)) => Some(AIMHardwareRequirements {
            cpu: o.cpu.clone().or_else(|| b.cpu.clone()),
            gpu: match (&b.gpu, &o.gpu) {
                (Some(bg), Some(og)) => Some(AIMGpuRequirements {
                    min_vram: og.min_vram.clone().or_else(|| bg.min_vram.clone()),
                    model: og.model.clone().or_else(|| bg.model.clone()),
                    requests: og.requests.or(bg.requests),
                    resource_name: if og.resource_name == DEFAULT_GPU_RESOURCE_NAME {
                        bg.resource_name.clone()
                    } else {
                        og.resource_name.clone()
                    },
                }),
                (bg, og) => og.clone().or_else(|| bg.clone()),
            },
        }),
    }
}

fn recommended(
    model: &str,
    spec: &AIMModelSpec,
    metadata: &ImageMetadata,
    out: &mut Vec<DesiredTemplate>,
) -> Result<(), NameError> {
    let deployments = metadata
        .model
        .as_ref()
        .map(|m| m.recommended_deployments.as_slice())
        .unwrap_or_default();
    for d in deployments {
        let gpu_model = d.gpu_model.as_deref().unwrap_or_default().trim();
        let gpu_count = i64::from(d.gpu_count.unwrap_or_default());
        let metric = d.metric.as_deref().unwrap_or_default().trim();
        let precision = d.precision.as_deref().unwrap_or_default().trim();
        let name = template_name(
            model,
            &spec.image,
            Deployment {
                gpu_model,
                gpu_count,
                metric,
                precision,
            },
        )?;
        let hardware = (!gpu_model.is_empty() && gpu_count > 0).then(|| AIMHardwareRequirements {
            cpu: None,
            gpu: Some(AIMGpuRequirements {
                model: Some(gpu_model.to_owned()),
                requests: d.gpu_count,
                // The vendor's own resource (an NVIDIA model requests `nvidia.com/gpu`); the
                // default (`amd.com/gpu`) for a model the table does not know.
                resource_name: GpuModel::new(gpu_model)
                    .and_then(|m| m.vendor())
                    .map_or(DEFAULT_GPU_RESOURCE_NAME, |v| v.resource_name())
                    .to_owned(),
                ..AIMGpuRequirements::default()
            }),
        });
        let mut t = base(model, spec);
        t.parameters = AIMRuntimeParameters {
            hardware,
            metric: (!metric.is_empty()).then(|| metric.to_owned()),
            precision: (!precision.is_empty()).then(|| precision.to_owned()),
        };
        t.profile_id = non_empty(d.profile_id.as_ref());
        out.push(DesiredTemplate {
            name: name.as_str().to_owned(),
            spec: t,
            labels: labels(model, None),
        });
    }
    Ok(())
}

fn custom(
    model: &str,
    spec: &AIMModelSpec,
    index: usize,
    ct: &AIMCustomTemplate,
) -> Result<DesiredTemplate, NameError> {
    let custom_hw = spec.custom.as_ref().and_then(|c| c.hardware.as_ref());
    let hardware = merge_hardware(custom_hw, ct.hardware.as_ref());
    let gpu = hardware.as_ref().and_then(|h| h.gpu.as_ref());
    let profile = ct.profile.clone().unwrap_or_default();
    let alias = ct.name.as_deref().unwrap_or_default();
    let name = custom_template_name(
        model,
        CustomTemplate {
            index: i64::try_from(index).unwrap_or(i64::MAX),
            alias,
            precision: profile.precision.as_deref().unwrap_or_default(),
            metric: profile.metric.as_deref().unwrap_or_default(),
            gpu_count: i64::from(gpu.and_then(|g| g.requests).unwrap_or_default()),
            gpu_model: gpu.and_then(|g| g.model.as_deref()).unwrap_or_default(),
        },
    )?;
    let mut t = base(model, spec);
    t.parameters = AIMRuntimeParameters {
        hardware,
        metric: profile.metric,
        precision: profile.precision,
    };
    t.model_sources.clone_from(&spec.model_sources);
    t.env.clone_from(&ct.env);
    t.r#type = Some(ct.r#type.clone());
    Ok(DesiredTemplate {
        name: name.as_str().to_owned(),
        spec: t,
        labels: labels(model, Some(alias)),
    })
}

/// Every template `model` wants; see the module contract.
pub fn desired(
    model: &str,
    spec: &AIMModelSpec,
    metadata: Option<&ImageMetadata>,
) -> Result<Vec<DesiredTemplate>, NameError> {
    let mut out = Vec::new();
    let create = spec
        .discovery
        .as_ref()
        .is_none_or(|d| d.create_service_templates);
    if create
        && spec.model_sources.is_empty()
        && let Some(m) = metadata
    {
        recommended(model, spec, m, &mut out)?;
    }
    for (i, ct) in spec.custom_templates.iter().enumerate() {
        out.push(custom(model, spec, i, ct)?);
    }
    if !spec.model_sources.is_empty() && spec.custom_templates.is_empty() {
        let implicit = AIMCustomTemplate {
            r#type: spec
                .custom
                .as_ref()
                .and_then(|c| c.r#type.clone())
                .unwrap_or_else(|| "unoptimized".to_owned()),
            ..AIMCustomTemplate::default()
        };
        out.push(custom(model, spec, 0, &implicit)?);
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|t| seen.insert(t.name.clone()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use kinfer_api::aim::{ModelMetadata, RecommendedDeployment};

    use super::*;

    fn dep(gpu: &str, n: i32, metric: &str, precision: &str) -> RecommendedDeployment {
        RecommendedDeployment {
            gpu_model: Some(gpu.into()),
            gpu_count: Some(n),
            metric: Some(metric.into()),
            precision: Some(precision.into()),
            ..Default::default()
        }
    }

    #[test]
    fn one_template_per_deployment_named_upstream() {
        let spec = AIMModelSpec {
            image: "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5".into(),
            ..Default::default()
        };
        let md = ImageMetadata {
            model: Some(ModelMetadata {
                recommended_deployments: vec![
                    dep("MI300X", 1, "latency", "fp8"),
                    dep("MI325X", 2, "throughput", "fp16"),
                    dep("MI300X", 1, "latency", "fp8"),
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        let t = desired("qwen3-32b", &spec, Some(&md)).unwrap();
        assert_eq!(t.len(), 2);
        assert!(
            t[0].name
                .starts_with("amdenterpriseai-aim-qwen-qwen3-32b-0-8-5-1x-mi300x-lat-fp8-")
        );
        assert_eq!(t[0].name.len(), 63);
        let gpu = t[1]
            .spec
            .parameters
            .hardware
            .as_ref()
            .unwrap()
            .gpu
            .as_ref()
            .unwrap();
        assert_eq!(
            (gpu.model.as_deref(), gpu.requests),
            (Some("MI325X"), Some(2))
        );
        assert_eq!(t[1].labels[MODEL_LABEL], "qwen3-32b");
    }

    /// A recommended deployment on an NVIDIA GPU requests NVIDIA's resource, not the
    /// `amd.com/gpu` default; a GPU the table does not know keeps the default.
    #[test]
    fn templates_request_their_gpu_vendors_resource() {
        let spec = AIMModelSpec {
            image: "example.com/aim-llama:1.0".into(),
            ..Default::default()
        };
        let md = ImageMetadata {
            model: Some(ModelMetadata {
                recommended_deployments: vec![
                    dep("H100", 1, "latency", "fp8"),
                    dep("MI300X", 1, "latency", "fp8"),
                    dep("FUTURE-9000", 1, "latency", "fp8"),
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        let t = desired("llama", &spec, Some(&md)).unwrap();
        let resource = |i: usize| {
            let gpu = t[i]
                .spec
                .parameters
                .hardware
                .as_ref()
                .unwrap()
                .gpu
                .as_ref()
                .unwrap();
            (gpu.model.clone().unwrap(), gpu.resource_name.clone())
        };
        let mut got: Vec<_> = (0..t.len()).map(resource).collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("FUTURE-9000".to_owned(), "amd.com/gpu".to_owned()),
                ("H100".to_owned(), "nvidia.com/gpu".to_owned()),
                ("MI300X".to_owned(), "amd.com/gpu".to_owned()),
            ]
        );
    }

    #[test]
    fn custom_model_gets_one_template() {
        let spec: AIMModelSpec = serde_json::from_value(serde_json::json!({
            "image": "ghcr.io/amd/aim-base:1.0",
            "modelSources": [{"modelId": "org/model", "sourceUri": "hf://org/model"}],
            "custom": {"hardware": {"gpu": {"model": "MI300X", "requests": 1}}}
        }))
        .unwrap();
        let t = desired("my-model", &spec, None).unwrap();
        assert_eq!(t.len(), 1);
        assert!(t[0].name.starts_with("my-model-custom-"), "{}", t[0].name);
        assert_eq!(t[0].spec.model_sources.len(), 1);
        assert_eq!(t[0].spec.r#type.as_deref(), Some("unoptimized"));
    }
}
