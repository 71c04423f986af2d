//! [`Validate`] for the AIM kinds: the rules their schemas cannot express, each violation
//! reported with its field path.
//!
//! - Upstream rules stated in its API documentation but not enforced by the CRD: CPU
//!   `requests` must be greater than zero; `requestTimeout` and `syncInterval` are Go durations;
//!   autoscaling target values are quantities.
//! - Kubernetes' own rules for the embedded `EnvVar` ([`validate_env`], shared with
//!   ModelService): a non-empty name, `value` and `valueFrom` exclusive, and `valueFrom` naming
//!   exactly one source (the pod would otherwise be rejected much later).
//! - Every quantity parses (the schema pattern admits forms the operator cannot size with).
//! - The CEL rules that need no old object (exactly one model reference, hardware present,
//!   GPU model or minimum VRAM), so a manifest checked offline reports them too. Transition
//!   rules (immutability) need the previous object and are left to the API server.
//! - References by name (`spec.model.name`, `spec.template.name`, `spec.modelName`,
//!   `spec.runtimeConfigName`) are names an object can have (DNS-1123 subdomains; empty where
//!   empty means "unset"), so the operator never puts another string into a request path and
//!   the user learns which field is wrong instead of "not found".
//! - A value quoted in a message is cut ([`shown`]): a 100,000-character string must not be
//!   copied whole into every condition that repeats the message.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::autoscaling::AIMServiceAutoScaling;
use super::common::{
    AIMHardwareRequirements, AIMModelSource, AIMRuntimeRoutingConfig, GPU_MODEL_OR_MIN_VRAM,
    HARDWARE_REQUIRED,
};
use super::model::MODEL_SOURCES_NEED_HARDWARE;
use super::service::{CUSTOM_MODEL_NEEDS_SOURCE, ONE_MODEL_REFERENCE};
use super::{
    AIMArtifact, AIMClusterModel, AIMClusterModelSource, AIMClusterRuntimeConfig,
    AIMClusterServiceTemplate, AIMModel, AIMModelSpec, AIMRuntimeConfig, AIMRuntimeConfigSpec,
    AIMService, AIMServiceSpec, AIMServiceTemplate, AIMServiceTemplateSpecCommon, AIMTemplateCache,
};
use crate::env::validate_env;
use crate::names::is_dns1123_subdomain;
use crate::quantity;
use crate::schema::parse_duration_seconds;
use crate::validation::{FieldErrors, Validate};

impl Validate for AIMService {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| service_spec("spec", &self.spec, errors))
    }
}

impl Validate for AIMModel {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| model_spec("spec", &self.spec, errors))
    }
}

impl Validate for AIMClusterModel {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| model_spec("spec", &self.spec, errors))
    }
}

impl Validate for AIMServiceTemplate {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| {
            template_spec("spec", &self.spec, errors);
            if let Some(caching) = &self.spec.caching {
                validate_env("spec.caching.env", &caching.env, errors);
            }
        })
    }
}

impl Validate for AIMClusterServiceTemplate {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| template_spec("spec", &self.spec, errors))
    }
}

impl Validate for AIMRuntimeConfig {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| runtime_config_spec("spec", &self.spec, errors))
    }
}

impl Validate for AIMClusterRuntimeConfig {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| runtime_config_spec("spec", &self.spec, errors))
    }
}

impl Validate for AIMTemplateCache {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| {
            validate_env("spec.env", &self.spec.env, errors);
            model_sources("spec.modelSources", &self.spec.model_sources, errors);
        })
    }
}

impl Validate for AIMArtifact {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| {
            validate_env("spec.env", &self.spec.env, errors);
            if let Some(size) = &self.spec.size {
                quantity_value("spec.size", size, errors);
            }
        })
    }
}

impl Validate for AIMClusterModelSource {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(|errors| duration("spec.syncInterval", &self.spec.sync_interval, errors))
    }
}

/// Runs `rules` against a fresh error list: `Ok(())` when they record nothing.
fn check(rules: impl FnOnce(&mut FieldErrors)) -> Result<(), FieldErrors> {
    let mut errors = FieldErrors::default();
    rules(&mut errors);
    errors.into_result()
}

fn service_spec(path: &str, spec: &AIMServiceSpec, errors: &mut FieldErrors) {
    let model = &spec.model;
    if let Some(name) = &model.name {
        object_name(&format!("{path}.model.name"), name, false, errors);
    }
    if let Some(name) = spec.template.as_ref().and_then(|t| t.name.as_ref()) {
        object_name(&format!("{path}.template.name"), name, true, errors);
    }
    if let Some(name) = &spec.runtime_config_name {
        object_name(&format!("{path}.runtimeConfigName"), name, true, errors);
    }
    let references = [
        model.name.is_some(),
        model.image.is_some(),
        model.custom.is_some(),
    ];
    if references.iter().filter(|set| **set).count() != 1 {
        errors.push(format!("{path}.model"), ONE_MODEL_REFERENCE);
    }
    if let Some(custom) = &model.custom {
        let custom_path = format!("{path}.model.custom");
        hardware(&format!("{custom_path}.hardware"), &custom.hardware, errors);
        if custom.model_sources.is_empty() {
            errors.push(
                format!("{custom_path}.modelSources"),
                CUSTOM_MODEL_NEEDS_SOURCE,
            );
        }
        model_sources(
            &format!("{custom_path}.modelSources"),
            &custom.model_sources,
            errors,
        );
    }
    if let Some(hw) = spec.overrides.as_ref().and_then(|o| o.hardware.as_ref()) {
        hardware(&format!("{path}.overrides.hardware"), hw, errors);
    }
    if let Some(scaling) = &spec.auto_scaling {
        autoscaling(&format!("{path}.autoScaling"), scaling, errors);
    }
    if let Some(routing) = &spec.routing {
        routing_config(&format!("{path}.routing"), routing, errors);
    }
    validate_env(&format!("{path}.env"), &spec.env, errors);
}

fn model_spec(path: &str, spec: &AIMModelSpec, errors: &mut FieldErrors) {
    if let Some(name) = &spec.runtime_config_name {
        object_name(&format!("{path}.runtimeConfigName"), name, true, errors);
    }
    let default_hardware = spec.custom.as_ref().and_then(|c| c.hardware.as_ref());
    if !spec.model_sources.is_empty() && default_hardware.is_none() {
        for (i, template) in spec.custom_templates.iter().enumerate() {
            if template.hardware.is_none() {
                errors.push(
                    format!("{path}.customTemplates[{i}].hardware"),
                    MODEL_SOURCES_NEED_HARDWARE,
                );
            }
        }
    }
    if let Some(hw) = default_hardware {
        hardware(&format!("{path}.custom.hardware"), hw, errors);
    }
    for (i, template) in spec.custom_templates.iter().enumerate() {
        let template_path = format!("{path}.customTemplates[{i}]");
        if let Some(hw) = &template.hardware {
            hardware(&format!("{template_path}.hardware"), hw, errors);
        }
        validate_env(&format!("{template_path}.env"), &template.env, errors);
    }
    model_sources(&format!("{path}.modelSources"), &spec.model_sources, errors);
    validate_env(&format!("{path}.env"), &spec.env, errors);
}

fn template_spec(path: &str, spec: &AIMServiceTemplateSpecCommon, errors: &mut FieldErrors) {
    object_name(
        &format!("{path}.modelName"),
        &spec.model_name,
        false,
        errors,
    );
    if let Some(name) = &spec.runtime_config_name {
        object_name(&format!("{path}.runtimeConfigName"), name, true, errors);
    }
    if let Some(hw) = &spec.parameters.hardware {
        hardware(&format!("{path}.hardware"), hw, errors);
    }
    model_sources(&format!("{path}.modelSources"), &spec.model_sources, errors);
    validate_env(&format!("{path}.env"), &spec.env, errors);
}

fn runtime_config_spec(path: &str, spec: &AIMRuntimeConfigSpec, errors: &mut FieldErrors) {
    if let Some(routing) = &spec.routing {
        routing_config(&format!("{path}.routing"), routing, errors);
    }
    validate_env(&format!("{path}.env"), &spec.env, errors);
}

fn hardware(path: &str, hardware: &AIMHardwareRequirements, errors: &mut FieldErrors) {
    if hardware.gpu.is_none() && hardware.cpu.is_none() {
        errors.push(path, HARDWARE_REQUIRED);
    }
    if let Some(gpu) = &hardware.gpu {
        let has_model = gpu.model.as_deref().is_some_and(|m| !m.is_empty());
        if has_model && gpu.min_vram.is_some() {
            errors.push(format!("{path}.gpu"), GPU_MODEL_OR_MIN_VRAM);
        }
        if let Some(min_vram) = &gpu.min_vram {
            quantity_value(&format!("{path}.gpu.minVram"), min_vram, errors);
        }
    }
    if let Some(cpu) = &hardware.cpu {
        let requests_path = format!("{path}.cpu.requests");
        if quantity_value(&requests_path, &cpu.requests, errors).is_some_and(|v| v <= 0.0) {
            errors.push(requests_path, "must be greater than zero");
        }
        if let Some(limits) = &cpu.limits {
            quantity_value(&format!("{path}.cpu.limits"), limits, errors);
        }
    }
}

fn model_sources(path: &str, sources: &[AIMModelSource], errors: &mut FieldErrors) {
    for (i, source) in sources.iter().enumerate() {
        if let Some(size) = &source.size {
            quantity_value(&format!("{path}[{i}].size"), size, errors);
        }
        validate_env(&format!("{path}[{i}].env"), &source.env, errors);
    }
}

fn routing_config(path: &str, routing: &AIMRuntimeRoutingConfig, errors: &mut FieldErrors) {
    if let Some(timeout) = &routing.request_timeout {
        duration(&format!("{path}.requestTimeout"), timeout, errors);
    }
}

fn autoscaling(path: &str, scaling: &AIMServiceAutoScaling, errors: &mut FieldErrors) {
    for (i, metric) in scaling.metrics.iter().enumerate() {
        let Some(pod_metric) = &metric.podmetric else {
            continue;
        };
        let target = &pod_metric.target;
        let target_path = format!("{path}.metrics[{i}].podmetric.target");
        for (field, value) in [
            ("value", &target.value),
            ("averageValue", &target.average_value),
        ] {
            if let Some(value) = value
                && quantity::parse(value).is_none()
            {
                errors.push(
                    format!("{target_path}.{field}"),
                    format!(
                        "{} is not a quantity such as \"1\" or \"100m\"",
                        shown(value)
                    ),
                );
            }
        }
    }
}

/// Parses a quantity, recording a violation when it does not parse.
fn quantity_value(path: &str, value: &Quantity, errors: &mut FieldErrors) -> Option<f64> {
    let parsed = quantity::parse(&value.0);
    if parsed.is_none() {
        errors.push(
            path,
            format!("{} is not a quantity such as \"16Gi\"", shown(&value.0)),
        );
    }
    parsed
}

fn duration(path: &str, value: &str, errors: &mut FieldErrors) {
    if parse_duration_seconds(value).is_none() {
        errors.push(
            path,
            format!(
                "{} is not a duration such as \"30s\" or \"1h\"",
                shown(value)
            ),
        );
    }
}

/// The most characters of a value a message quotes.
const SHOWN_CHARS: usize = 64;

/// `value` quoted for a message (Rust debug quoting: control and bidi characters escaped),
/// cut to [`SHOWN_CHARS`] characters with its full length when longer.
pub fn shown(value: &str) -> String {
    let count = value.chars().count();
    if count <= SHOWN_CHARS {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(SHOWN_CHARS).collect();
    format!("{head:?}… ({count} characters)")
}

/// A reference by name: a DNS-1123 subdomain (`empty_ok`: the empty string means unset).
fn object_name(path: &str, value: &str, empty_ok: bool, errors: &mut FieldErrors) {
    if (empty_ok && value.is_empty()) || is_dns1123_subdomain(value) {
        return;
    }
    errors.push(
        path,
        format!(
            "{} is not a valid object name (lowercase letters, digits, '-' and '.', \
             starting and ending alphanumeric, at most 253 characters)",
            shown(value)
        ),
    );
}
