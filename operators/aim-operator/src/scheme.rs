//! Label keys, field managers and the status mapping every AIM controller shares.
//!
//! Contract: one [`LabelScheme`] per controller, `managed-by=aim-<controller>-controller` and
//! `aim.eai.amd.com/<controller>.name=<parent>` (NOTES row 25); the overall status maps onto
//! the CRD's `status.status` enum with a total `match` ([`phase`]). Pure.

use kinfer_api::phase::Phase;
use kinfer_state::{LabelScheme, OverallStatus};

/// The AIM label keys (upstream's spelling): defined once in kinfer-api.
pub use kinfer_api::labels::aim as labels;

/// The AIM label domain.
pub const DOMAIN: &str = labels::DOMAIN;
/// `aim.eai.amd.com/model`: the model a generated template belongs to.
pub const MODEL_LABEL: &str = labels::MODEL;
/// `aim.eai.amd.com/origin`: `auto-generated` for objects the operator creates.
pub const ORIGIN_LABEL: &str = labels::ORIGIN;
/// The value of [`ORIGIN_LABEL`] on generated objects.
pub const AUTO_GENERATED: &str = labels::ORIGIN_AUTO_GENERATED;
/// `aim.eai.amd.com/template.alias`: a custom template's declared name.
pub const ALIAS_LABEL: &str = labels::TEMPLATE_ALIAS;
/// `aim.eai.amd.com/model-source`: the AIMClusterModelSource a catalog model came from.
pub const MODEL_SOURCE_LABEL: &str = labels::MODEL_SOURCE;

/// Controller short names (`aim.eai.amd.com/<name>.name`, `aim-<name>-controller`).
pub mod controller {
    /// AIMModel.
    pub const MODEL: &str = "model";
    /// AIMClusterModel.
    pub const CLUSTER_MODEL: &str = "cluster-model";
    /// AIMServiceTemplate.
    pub const TEMPLATE: &str = "service-template";
    /// AIMClusterServiceTemplate.
    pub const CLUSTER_TEMPLATE: &str = "cluster-service-template";
    /// AIMRuntimeConfig.
    pub const RUNTIME_CONFIG: &str = "runtime-config";
    /// AIMClusterRuntimeConfig.
    pub const CLUSTER_RUNTIME_CONFIG: &str = "cluster-runtime-config";
    /// AIMClusterModelSource.
    pub const MODEL_SOURCE: &str = "cluster-model-source";
    /// AIMService.
    pub const SERVICE: &str = "service";
    /// AIMTemplateCache.
    pub const TEMPLATE_CACHE: &str = "template-cache";
    /// AIMArtifact.
    pub const ARTIFACT: &str = "artifact";
}

/// The label scheme of one controller.
pub fn scheme(controller: &str) -> LabelScheme {
    LabelScheme {
        domain: DOMAIN.to_owned(),
        controller: controller.to_owned(),
        manager: manager(controller),
    }
}

/// The field manager (and `managed-by` value) of one controller.
pub fn manager(controller: &str) -> String {
    format!("aim-{controller}-controller")
}

/// The engine's overall status as the `status.status` value of models and templates.
pub fn phase(status: OverallStatus) -> Phase {
    match status {
        OverallStatus::Pending => Phase::Pending,
        OverallStatus::Progressing => Phase::Progressing,
        OverallStatus::Ready => Phase::Ready,
        OverallStatus::Degraded => Phase::Degraded,
        OverallStatus::Failed => Phase::Failed,
        OverallStatus::NotAvailable => Phase::NotAvailable,
    }
}

/// A label value for a name (upstream's `SanitizeLabelValue`).
pub fn label_value(name: &str) -> String {
    kinfer_builders::naming::aim::aim_label_value(name)
        .unwrap_or_else(|| kinfer_state::labels::label_value(name))
}

/// The UID of the controller owner reference of `meta`, if any (who manages an object).
pub fn controller_uid(meta: &kube::api::ObjectMeta) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.as_str())
}
