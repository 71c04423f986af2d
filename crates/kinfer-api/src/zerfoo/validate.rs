//! The upstream `Validate()` rules, plus the checks upstream skipped (replicas within the
//! autoscaling bounds, quantities that parse), each reported with its field path; one bound of
//! autoscaling without the other is accepted, as upstream, with a warning.

use super::{ZerfooInferenceService, ZerfooInferenceServiceSpec};
use crate::quantity;
use crate::validation::{FieldError, FieldErrors, Validate};

impl Validate for ZerfooInferenceService {
    fn validate(&self) -> Result<(), FieldErrors> {
        self.spec.validate()
    }

    fn warnings(&self) -> Vec<FieldError> {
        self.spec.warnings()
    }
}

impl Validate for ZerfooInferenceServiceSpec {
    fn validate(&self) -> Result<(), FieldErrors> {
        let mut errors = FieldErrors::default();
        if self.model_ref.trim().is_empty() {
            errors.push("spec.modelRef", "must not be empty");
        }
        if self.replicas < 1 {
            errors.push("spec.replicas", "must be at least 1");
        }
        for (path, value) in [
            ("spec.minReplicas", self.min_replicas),
            ("spec.maxReplicas", self.max_replicas),
        ] {
            if value.is_some_and(|v| v < 0) {
                errors.push(path, "must not be negative");
            }
        }
        if let Some((min, max)) = self.autoscaling() {
            if min > max {
                errors.push("spec.minReplicas", "must not exceed spec.maxReplicas");
            } else if self.replicas < min || self.replicas > max {
                errors.push(
                    "spec.replicas",
                    format!("must be between spec.minReplicas ({min}) and spec.maxReplicas ({max}) when autoscaling"),
                );
            }
        }
        if let Some(canary) = &self.canary {
            if canary.model_ref.trim().is_empty() {
                errors.push("spec.canary.modelRef", "must not be empty");
            }
            if !(0..=100).contains(&canary.weight) {
                errors.push("spec.canary.weight", "must be between 0 and 100");
            }
        }
        if let Some(health) = &self.health_check {
            if health.path.trim().is_empty() {
                errors.push("spec.healthCheck.path", "must not be empty");
            } else if !health.path.starts_with('/') {
                errors.push("spec.healthCheck.path", "must start with '/'");
            }
            for (path, value) in [
                ("spec.healthCheck.interval", &health.interval),
                ("spec.healthCheck.timeout", &health.timeout),
            ] {
                positive(
                    &mut errors,
                    path,
                    &value.to_string(),
                    value.seconds(),
                    "a duration such as \"30s\" or integer nanoseconds",
                );
            }
        }
        if let Some(resources) = &self.resources {
            for (path, value) in [
                ("spec.resources.cpu", &resources.cpu),
                ("spec.resources.memory", &resources.memory),
                ("spec.resources.gpuMemory", &resources.gpu_memory),
            ] {
                if let Some(value) = value {
                    let parsed = quantity::parse(value);
                    positive(
                        &mut errors,
                        path,
                        value,
                        parsed,
                        "a quantity such as \"16Gi\"",
                    );
                }
            }
        }
        errors.into_result()
    }

    fn warnings(&self) -> Vec<FieldError> {
        self.half_autoscaling()
            .map(|(set, missing)| {
                FieldError::new(
                    set,
                    format!("autoscaling is off: it needs {missing} too (as upstream)"),
                )
            })
            .into_iter()
            .collect()
    }
}

/// Records why `parsed` (the value of `raw`) is not a positive number, if it is not.
fn positive(errors: &mut FieldErrors, path: &str, raw: &str, parsed: Option<f64>, what: &str) {
    match parsed {
        None => errors.push(path, format!("{raw:?} is not {what}")),
        Some(value) if value <= 0.0 => errors.push(path, "must be greater than zero"),
        Some(_) => {}
    }
}
