//! The InferenceService input of a service: model, Ready template, runtime config, cache
//! mounts and scaling (NOTES rows 14-16). Pure.
//!
//! Contract: GPU resources from the template's `status.resolvedHardware` (else its spec);
//! env layers runtime config < profile id, metric, precision < template env < discovered
//! profile env < `AIM_MODEL_ID` < service env ([`AimEnv`]); pull secrets model, template,
//! service (first occurrence kept); service account service, else template; replicas, or
//! min/max with an external autoscaler ([`scaling`]). The name follows the upstream hash rule;
//! a namespace too long for `<isvc>-predictor-<namespace>` is InvalidSpec `NameTooLong`.

use kinfer_api::aim::AIMService;
use kinfer_api::kserve::InferenceService;
use kinfer_builders::kserve::{
    AimEnv, CACHE_PATH, CacheMount, Gpu, InferenceServiceInput, Scaling,
};
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use kinfer_state::{CategorizedError, ErrorCategory, Reason};
use kube::ResourceExt;

use super::fetch::{ModelInfo, TemplateInfo};
use crate::runtime_config::Resolved;

/// Fixed replicas, or min/max for an autoscaler.
pub fn scaling(svc: &AIMService) -> Scaling {
    let s = &svc.spec;
    if s.auto_scaling.is_some() || s.min_replicas.is_some() || s.max_replicas.is_some() {
        let min = s.min_replicas.unwrap_or(1);
        Scaling::External {
            min,
            max: s.max_replicas.unwrap_or(min).max(min),
        }
    } else {
        Scaling::Fixed {
            replicas: s.replicas,
        }
    }
}

/// The InferenceService input of a service with its model and Ready template.
pub fn isvc_input(
    svc: &AIMService,
    model: &ModelInfo,
    t: &TemplateInfo,
    rc: Option<&Resolved>,
    caches: Vec<CacheMount>,
    manager: &str,
) -> Result<InferenceServiceInput, kinfer_builders::Error> {
    let status = t.status.as_ref();
    let gpu = t.gpu().and_then(|g| {
        let count = i64::from(g.requests.unwrap_or(0));
        (count > 0).then(|| Gpu {
            count,
            resource_name: Some(g.resource_name.clone()),
        })
    });
    let mut secrets: Vec<String> = Vec::new();
    for s in model
        .spec
        .image_pull_secrets
        .iter()
        .chain(&t.spec.image_pull_secrets)
        .chain(&svc.spec.image_pull_secrets)
    {
        if !secrets.contains(&s.name) {
            secrets.push(s.name.clone());
        }
    }
    let model_id = t
        .spec
        .model_sources
        .first()
        .or(model.spec.model_sources.first())
        .map(|s| s.model_id.clone());
    Ok(InferenceServiceInput {
        parent: kinfer_builders::Parent {
            name: Dns1123Subdomain::new(svc.name_any())?,
            namespace: Dns1123Label::new(svc.namespace().unwrap_or_default())?,
            managed_by: manager.to_owned(),
        },
        runtime: t.name.clone(),
        model: model.name.clone(),
        gpu,
        template_resources: t.spec.resources.clone(),
        service_resources: svc.spec.resources.clone(),
        env: AimEnv {
            runtime_config: crate::env::k8s_env(
                rc.map(|r| r.spec.env.as_slice()).unwrap_or_default(),
            )?,
            profile_id: t.spec.profile_id.clone(),
            metric: t.metric(),
            precision: t.precision(),
            template: crate::env::k8s_env(&t.spec.env)?,
            profile: status
                .and_then(|s| s.profile.as_ref())
                .map(|p| p.env_vars.clone())
                .unwrap_or_default(),
            model_id,
            service: crate::env::k8s_env(&svc.spec.env)?,
        },
        caches,
        scaling: scaling(svc),
        service_account_name: svc
            .spec
            .service_account_name
            .clone()
            .or_else(|| t.spec.service_account_name.clone()),
        image_pull_secrets: secrets,
        pod_identity: kinfer_builders::security::PodIdentity::default(),
    })
}

/// The InferenceService's name; see the module contract.
pub fn isvc_name(svc: &AIMService) -> Result<String, CategorizedError> {
    kinfer_builders::naming::aim::inference_service_name(
        &svc.name_any(),
        &svc.namespace().unwrap_or_default(),
    )
    .map(|n| n.to_string())
    .map_err(|e| {
        CategorizedError::new(
            ErrorCategory::InvalidSpec,
            format!("InferenceService name: {e}"),
        )
        .with_reason(Reason::custom("NameTooLong"))
    })
}

/// The cache volumes a live InferenceService mounts (PVC volumes mounted under
/// `/workspace/cache/<modelId>`).
pub fn cache_mounts(isvc: &InferenceService) -> Vec<CacheMount> {
    let p = &isvc.spec.predictor;
    let prefix = format!("{CACHE_PATH}/");
    p.model
        .iter()
        .flat_map(|m| m.volume_mounts.iter().flatten())
        .filter_map(|m| {
            let model_id = m.mount_path.strip_prefix(&prefix)?;
            let claim = p
                .volumes
                .iter()
                .flatten()
                .find(|v| v.name == m.name)?
                .persistent_volume_claim
                .as_ref()?;
            Some(CacheMount {
                claim_name: claim.claim_name.clone(),
                model_id: model_id.to_owned(),
            })
        })
        .collect()
}
