//! The operator's mapping of templates and a service onto [`kinfer_select`]'s inputs (NOTES row
//! 10). Pure; shared with `kinfer explain template`, so the explanation cannot disagree with
//! the selection the operator makes.

use kinfer_api::aim::AIMService;
use kinfer_api::aim::common::ResolutionScope;
use kinfer_select::gpu::GpuModel;
use kinfer_select::{Candidate, Metric, Precision, ProfileType, Request, Scope};

use super::fetch::TemplateInfo;

/// What automatic selection weighs for `svc` running `model`: the pool (the model's templates,
/// derived ones excluded), each as a [`Candidate`] (status; profile type from the spec's
/// `type` override, else the discovered profile; metric and precision from the spec, else the profile; GPU model and count from
/// `status.resolvedHardware`, else the spec, the model else the profile's GPU), and the
/// service's [`Request`] (overrides, `allowUnoptimized`). The one mapping the operator and
/// `kinfer explain template` share.
pub fn selection_inputs<'a>(
    svc: &AIMService,
    model: &str,
    templates: &'a [TemplateInfo],
) -> (Vec<&'a TemplateInfo>, Vec<Candidate>, Request) {
    let pool: Vec<&TemplateInfo> = templates
        .iter()
        .filter(|t| !t.derived && t.spec.model_name == model)
        .collect();
    let candidates = pool.iter().map(|t| candidate(t)).collect();
    (pool, candidates, request(svc))
}

fn candidate(t: &TemplateInfo) -> Candidate {
    let meta = t.profile_metadata();
    let gpu = t.gpu();
    let (metric, precision) = (t.metric(), t.precision());
    // `spec.type` overrides what discovery reports (kinfer-api's template contract).
    let overridden = t
        .spec
        .r#type
        .as_deref()
        .and_then(|s| s.parse::<ProfileType>().ok());
    let profile_type = overridden.or(match meta.and_then(|m| m.r#type) {
        Some(kinfer_api::aim::template::AIMProfileType::Optimized) => Some(ProfileType::Optimized),
        Some(kinfer_api::aim::template::AIMProfileType::Preview) => Some(ProfileType::Preview),
        Some(kinfer_api::aim::template::AIMProfileType::Unoptimized) => {
            Some(ProfileType::Unoptimized)
        }
        None => None,
    });
    Candidate {
        scope: match t.scope {
            ResolutionScope::Cluster => Scope::Cluster,
            _ => Scope::Namespace,
        },
        name: t.name.clone(),
        status: t
            .phase()
            .to_string()
            .parse()
            .unwrap_or(kinfer_select::TemplateStatus::Pending),
        profile_type,
        gpu_model: gpu
            .and_then(|g| g.model.as_deref())
            .or(meta.and_then(|m| m.gpu.as_deref()))
            .and_then(GpuModel::new),
        gpu_count: gpu
            .and_then(|g| g.requests)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0),
        metric: metric.as_deref().and_then(Metric::parse),
        precision: precision.as_deref().and_then(Precision::parse),
    }
}

fn request(svc: &AIMService) -> Request {
    let o = svc.spec.overrides.as_ref();
    let gpu = o
        .and_then(|o| o.hardware.as_ref())
        .and_then(|h| h.gpu.as_ref());
    Request {
        metric: o.and_then(|o| o.metric.as_deref()).and_then(Metric::parse),
        precision: o
            .and_then(|o| o.precision.as_deref())
            .and_then(Precision::parse),
        gpu_model: gpu.and_then(|g| g.model.as_deref()).and_then(GpuModel::new),
        gpu_count: gpu
            .and_then(|g| g.requests)
            .and_then(|n| u32::try_from(n).ok()),
        allow_unoptimized: svc
            .spec
            .template
            .as_ref()
            .and_then(|t| t.allow_unoptimized)
            .unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use kinfer_api::aim::{AIMServiceTemplate, AIMServiceTemplateStatus};
    use kinfer_api::phase::Phase;
    use serde_json::json;

    use super::*;

    #[allow(clippy::needless_pass_by_value)] // test fixtures read better by value
    fn template(name: &str, spec: serde_json::Value, status: serde_json::Value) -> TemplateInfo {
        let mut t: AIMServiceTemplate = serde_json::from_value(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
            "metadata": {"name": name, "namespace": "ns"}, "spec": spec}))
        .unwrap();
        t.status = Some(serde_json::from_value::<AIMServiceTemplateStatus>(status).unwrap());
        TemplateInfo::from(t)
    }

    #[test]
    fn spec_over_profile_and_derived_templates_excluded() {
        let svc: AIMService = serde_json::from_value(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"model": {"name": "m"}, "overrides": {"metric": "throughput"},
                     "template": {"allowUnoptimized": true}}}))
        .unwrap();
        let discovered = json!({"status": "Ready",
            "resolvedHardware": {"gpu": {"model": "MI300X", "requests": 2}},
            "profile": {"metadata": {"metric": "latency", "precision": "fp16", "type": "preview"}}});
        let mut derived = template("d", json!({"modelName": "m"}), json!({"status": "Ready"}));
        derived.derived = true;
        let templates = vec![
            template(
                "t",
                json!({"modelName": "m", "metric": "throughput",
                                 "hardware": {"gpu": {"model": "MI325X", "requests": 1}}}),
                discovered,
            ),
            template(
                "other",
                json!({"modelName": "n"}),
                json!({"status": "Ready"}),
            ),
            derived,
        ];
        let (pool, candidates, request) = selection_inputs(&svc, "m", &templates);
        assert_eq!(
            pool.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["t"]
        );
        let c = &candidates[0];
        assert_eq!(
            c.metric,
            Some(Metric::Throughput),
            "the spec wins over the profile"
        );
        assert_eq!(
            c.precision,
            Some(Precision::Fp16),
            "the profile fills what the spec lacks"
        );
        assert_eq!(c.profile_type, Some(ProfileType::Preview));

        // A custom template declares its type: it wins over the discovered profile's.
        let typed = template(
            "typed",
            json!({"modelName": "m", "type": "optimized"}),
            json!({"status": "Ready",
                   "profile": {"metadata": {"type": "unoptimized"}}}),
        );
        let (_, typed, _) = selection_inputs(&svc, "m", std::slice::from_ref(&typed));
        assert_eq!(typed[0].profile_type, Some(ProfileType::Optimized));
        assert_eq!(
            (
                c.gpu_model.as_ref().map(ToString::to_string).as_deref(),
                c.gpu_count
            ),
            (Some("MI300X"), 2),
            "resolved hardware wins"
        );
        assert_eq!(c.scope, Scope::Namespace);
        assert_eq!(templates[0].phase(), Phase::Ready);
        assert_eq!(
            (request.metric, request.allow_unoptimized),
            (Some(Metric::Throughput), true)
        );
    }
}
