//! The service's spec rules and field paths in its conditions (every rejected object gets a
//! Failed status naming the field). Pure.
//!
//! Contract:
//! - [`violations`]: kinfer-api's [`Validate`] rules for the AIMService (references by name
//!   are object names, durations, quantities, env, exactly one model reference), each
//!   violation put on the component its field feeds, as an InvalidSpec error whose message
//!   starts with the field path: `spec.runtimeConfigName` on `RuntimeConfig` (reason
//!   `ConfigNotFound`), `spec.model.name` on `Model` (`ModelNotFound`), the rest of
//!   `spec.model` on `Model` (`InvalidModelReference`), `spec.template.name` on `Template`
//!   (`TemplateNotFound`), the rest of `spec.template` and `spec.overrides` on `Template`,
//!   `spec.routing` on `HTTPRoute`, `spec.autoScaling` on `HPA` (`InvalidAutoscaling`),
//!   anything else on `InferenceService` (`InvalidSpec`). The reasons are the ones the
//!   resolution would give (upstream's), so only the message says more.
//! - Those components are upstream: the spec is the service's input, and the engine plans
//!   nothing while an upstream component has a user-fixable error, so an invalid spec creates
//!   and changes nothing until it is edited (the children it had stay as they are).
//! - [`place`] does the same for any kind with its own placement (templates use it).
//! - [`at_field`] puts a field path in front of the resolution's own messages (a runtime
//!   config or model that does not exist), for services, templates and models alike.

use kinfer_api::aim::{AIMService, Validate};
use kinfer_state::health::ComponentHealth;
use kinfer_state::{CategorizedError, ErrorCategory, Reason};

use super::compose::{HTTP_ROUTE, MODEL, TEMPLATE};
use super::{INFERENCE_SERVICE, runtime};
use crate::runtime_config::resolve;

/// Whether `path` is `prefix` or a field or item under it (whole segments only).
pub fn under(path: &str, prefix: &str) -> bool {
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with(['.', '[']))
}

/// The component and reason of a violation at `path`; see the module contract.
fn placed(path: &str) -> (&'static str, &'static str) {
    let under = |prefix: &str| under(path, prefix);
    if under("spec.runtimeConfigName") {
        (resolve::COMPONENT, "ConfigNotFound")
    } else if under("spec.model.name") {
        (MODEL, "ModelNotFound")
    } else if under("spec.model") {
        (MODEL, "InvalidModelReference")
    } else if under("spec.template.name") {
        (TEMPLATE, "TemplateNotFound")
    } else if under("spec.template") || under("spec.overrides") {
        (TEMPLATE, "InvalidSpec")
    } else if under("spec.routing") {
        (HTTP_ROUTE, "InvalidSpec")
    } else if under("spec.autoScaling") {
        (runtime::HPA, "InvalidAutoscaling")
    } else {
        (INFERENCE_SERVICE, "InvalidSpec")
    }
}

/// One upstream component per component with violations, in the order of their first
/// violation; empty for a valid spec. See the module contract.
pub fn violations(svc: &AIMService) -> Vec<ComponentHealth> {
    place(svc, placed)
}

/// `object`'s [`Validate`] violations as components: `placed` gives each path's component and
/// reason; one upstream InvalidSpec component per component, its message every violation
/// (`path: rule`) joined by `; `, in the order of their first violation.
pub fn place(
    object: &impl Validate,
    placed: impl Fn(&str) -> (&'static str, &'static str),
) -> Vec<ComponentHealth> {
    let Err(errors) = object.validate() else {
        return Vec::new();
    };
    let mut grouped: Vec<(&'static str, &'static str, Vec<String>)> = Vec::new();
    for e in errors.iter() {
        let (component, reason) = placed(&e.path);
        match grouped.iter_mut().find(|(c, _, _)| *c == component) {
            Some((_, _, messages)) => messages.push(e.to_string()),
            None => grouped.push((component, reason, vec![e.to_string()])),
        }
    }
    grouped
        .into_iter()
        .map(|(component, reason, messages)| {
            let error = CategorizedError::new(ErrorCategory::InvalidSpec, messages.join("; "))
                .with_reason(Reason::custom(reason));
            ComponentHealth::new(component).upstream().error(error)
        })
        .collect()
}

/// `components` with each of `replacements` in the place of the component of its name (added
/// at the end when there is none).
pub fn replace(components: &mut Vec<ComponentHealth>, replacements: Vec<ComponentHealth>) {
    for r in replacements {
        match components.iter_mut().find(|c| c.component == r.component) {
            Some(slot) => *slot = r,
            None => components.push(r),
        }
    }
}

/// `health` with `path: ` in front of the message of each error of `category` that does not
/// start with a path already: the field the user has to change.
pub fn at_field(
    mut health: ComponentHealth,
    path: &str,
    category: ErrorCategory,
) -> ComponentHealth {
    for e in health.errors.iter_mut().filter(|e| e.category == category) {
        if !e.message.starts_with("spec.") {
            e.message = format!("{path}: {}", e.message);
        }
    }
    health
}

#[cfg(test)]
mod tests {
    use kinfer_state::ComponentState;
    use serde_json::json;

    use super::*;

    #[allow(clippy::needless_pass_by_value)] // fixtures read better by value
    fn service(spec: serde_json::Value) -> AIMService {
        serde_json::from_value(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
            "metadata": {"name": "s", "namespace": "ns"}, "spec": spec}))
        .expect("service")
    }

    #[test]
    fn each_violation_lands_on_its_component_with_the_path_and_the_resolution_reason() {
        let svc = service(json!({
            "model": {"name": "$(rm -rf /)"},
            "template": {"name": "Bad_Name"},
            "runtimeConfigName": "a/b",
            "routing": {"requestTimeout": "P1D"},
            "env": [{"name": ""}],
        }));
        let found: Vec<(String, String, String)> = violations(&svc)
            .iter()
            .map(|h| {
                assert_eq!(h.effective_state(), ComponentState::Failed);
                assert_eq!(h.effective_direction(), kinfer_state::Direction::Upstream);
                (
                    h.component.to_string(),
                    h.effective_reason().to_string(),
                    h.effective_message(),
                )
            })
            .collect();
        let summary: Vec<(&str, &str)> = found
            .iter()
            .map(|(c, r, _)| (c.as_str(), r.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                ("Model", "ModelNotFound"),
                ("Template", "TemplateNotFound"),
                ("RuntimeConfig", "ConfigNotFound"),
                ("HTTPRoute", "InvalidSpec"),
                ("InferenceService", "InvalidSpec"),
            ]
        );
        let message = |c: &str| &found.iter().find(|(n, _, _)| n == c).expect(c).2;
        assert!(message("Model").starts_with("spec.model.name: \"$(rm -rf /)\""));
        assert!(message("RuntimeConfig").starts_with("spec.runtimeConfigName: \"a/b\""));
        assert!(message("HTTPRoute").starts_with("spec.routing.requestTimeout: \"P1D\""));
        assert!(message("InferenceService").starts_with("spec.env[0].name"));
        assert!(violations(&service(json!({"model": {"name": "m"}}))).is_empty());
    }

    #[test]
    fn paths_are_matched_by_whole_segments() {
        assert_eq!(placed("spec.model"), (MODEL, "InvalidModelReference"));
        assert_eq!(
            placed("spec.model.custom.hardware"),
            (MODEL, "InvalidModelReference")
        );
        assert_eq!(
            placed("spec.overrides.hardware.gpu"),
            (TEMPLATE, "InvalidSpec")
        );
        assert_eq!(
            placed("spec.autoScaling.metrics[0].podmetric.target.value").0,
            runtime::HPA
        );
        assert_eq!(placed("spec.modelX").0, INFERENCE_SERVICE);
    }

    #[test]
    fn at_field_prefixes_only_the_category_and_only_once() {
        let h = ComponentHealth::new("RuntimeConfig")
            .error(CategorizedError::new(
                ErrorCategory::MissingUpstreamDependency,
                "runtime config \"x\" not found",
            ))
            .error(CategorizedError::new(ErrorCategory::Infrastructure, "503"));
        let h = at_field(
            h,
            "spec.runtimeConfigName",
            ErrorCategory::MissingUpstreamDependency,
        );
        let h = at_field(
            h,
            "spec.runtimeConfigName",
            ErrorCategory::MissingUpstreamDependency,
        );
        assert_eq!(
            h.errors[0].message,
            "spec.runtimeConfigName: runtime config \"x\" not found"
        );
        assert_eq!(h.errors[1].message, "503");
    }
}
