//! The operator's mapping of templates and a service onto [`kinfer_select`]'s inputs (NOTES row
//! 10). Pure; shared with `kinfer explain template`, so the explanation cannot disagree with
//! the selection the operator makes.
//!
//! A template's phase as services see it is [`phase`]: an infrastructure error the operator
//! met while reconciling the template (a 500 reading its model) says nothing about the
//! template, so it neither drops the template from selection nor makes a service give up
//! the template it resolved.

use kinfer_api::aim::AIMService;
use kinfer_api::aim::common::ResolutionScope;
use kinfer_api::phase::Phase;
use kinfer_select::gpu::GpuModel;
use kinfer_select::{Candidate, Metric, Precision, ProfileType, Request, Scope};
use kinfer_state::condition::ConditionType;

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

/// A condition of the template's status is `status`.
fn condition_is(t: &TemplateInfo, type_: &str, status: &str) -> bool {
    t.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .is_some_and(|c| c.status == status)
}

/// The phase services go by for `t`: `status.status`, except that a template `Degraded` while
/// `DependenciesReachable=False` (the operator's own reads or writes failed; a template has no
/// other way to be Degraded) counts as `Ready` once `Discovered=True` (its profile and
/// serving runtime stand) and as `Progressing` before (still being discovered: it holds the
/// first choice back like any template being discovered).
pub fn phase(t: &TemplateInfo) -> Phase {
    let recorded = t.phase();
    let reachable = ConditionType::DependenciesReachable.to_string();
    if recorded != Phase::Degraded || !condition_is(t, &reachable, "False") {
        return recorded;
    }
    if condition_is(t, crate::template::compose::DISCOVERED, "True") {
        Phase::Ready
    } else {
        Phase::Progressing
    }
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
        status: phase(t)
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

    /// A template of `phase` with `(type, status)` conditions.
    fn with_conditions(phase: &str, conditions: &[(&str, &str)]) -> TemplateInfo {
        let conditions: Vec<_> = conditions
            .iter()
            .map(|(t, s)| {
                json!({"type": t, "status": s, "reason": "R", "message": "",
                                 "lastTransitionTime": "2026-01-01T00:00:00Z"})
            })
            .collect();
        template(
            "t",
            json!({"modelName": "m"}),
            json!({"status": phase, "conditions": conditions}),
        )
    }

    #[test]
    fn an_infrastructure_error_of_the_template_does_not_change_its_phase_for_services() {
        let unreachable = ("DependenciesReachable", "False");
        // Discovered: still Ready for selection and retention.
        let t = with_conditions("Degraded", &[unreachable, ("Discovered", "True")]);
        assert_eq!(phase(&t), Phase::Ready);
        let (_, candidates, _) = selection_inputs(&svc_for("m"), "m", std::slice::from_ref(&t));
        assert_eq!(candidates[0].status, kinfer_select::TemplateStatus::Ready);
        // Being discovered: still waited for.
        let t = with_conditions("Degraded", &[unreachable, ("Discovered", "False")]);
        assert_eq!(phase(&t), Phase::Progressing);
        let t = with_conditions("Degraded", &[unreachable]);
        assert_eq!(phase(&t), Phase::Progressing);
        // Any other phase, or Degraded for another reason, is the recorded phase.
        let reachable = ("DependenciesReachable", "True");
        let t = with_conditions("Degraded", &[reachable, ("Discovered", "True")]);
        assert_eq!(phase(&t), Phase::Degraded);
        let t = with_conditions("Failed", &[unreachable, ("Discovered", "True")]);
        assert_eq!(phase(&t), Phase::Failed);
        let t = with_conditions("NotAvailable", &[unreachable, ("Discovered", "True")]);
        assert_eq!(phase(&t), Phase::NotAvailable);
    }

    fn svc_for(model: &str) -> AIMService {
        serde_json::from_value(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"model": {"name": model}}}))
        .unwrap()
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
