//! Model compose: components and the desired templates. Pure.
//!
//! Contract: components in order `RuntimeConfig` (upstream), `ImageMetadata` (upstream) and
//! `ServiceTemplates` / `ClusterServiceTemplates` (downstream), the latter's state aggregated
//! from the desired templates' live statuses by [`aggregate`] (NOTES section d table).
//! Templates not created yet count as Pending.

use kinfer_api::aim::ImageMetadata;
use kinfer_api::phase::Phase;
use kinfer_state::health::ComponentHealth;
use kinfer_state::{CategorizedError, ComponentState, ErrorCategory, Reason};

use super::fetch::Metadata;
use super::templates::DesiredTemplate;
use crate::runtime_config::Resolved;

/// The model's composed state.
#[derive(Debug, Clone)]
pub struct ModelState {
    /// Where the metadata came from.
    pub metadata: Metadata,
    /// The templates the model wants.
    pub desired: Vec<DesiredTemplate>,
    /// The resolved runtime config.
    pub runtime_config: Option<Resolved>,
}

impl ModelState {
    /// The metadata to record in status (`None`: keep nothing).
    pub fn status_metadata<'a>(
        &'a self,
        previous: Option<&'a ImageMetadata>,
    ) -> Option<&'a ImageMetadata> {
        match &self.metadata {
            Metadata::Spec(m)
            | Metadata::Inspected { metadata: m, .. }
            | Metadata::Stale { metadata: m, .. }
            | Metadata::Disabled(Some(m)) => Some(m),
            Metadata::Failed(_) => previous,
            Metadata::Custom | Metadata::Disabled(None) => None,
        }
    }

    /// Whether metadata is known (the templates it implies can be computed).
    pub fn metadata_known(&self) -> bool {
        !matches!(self.metadata, Metadata::Failed(_))
    }
}

/// The `ImageMetadata` component.
pub fn metadata_health(m: &Metadata) -> ComponentHealth {
    let ready = |reason: &'static str, message: String| {
        ComponentHealth::with_state(
            "ImageMetadata",
            ComponentState::Ready,
            Reason::custom(reason),
            message,
        )
        .upstream()
    };
    match m {
        Metadata::Spec(_) => ready(
            "ImageMetadataProvided",
            "metadata taken from spec.imageMetadata".into(),
        ),
        Metadata::Custom => ready(
            "CustomModel",
            "custom model: weights from spec.modelSources".into(),
        ),
        Metadata::Disabled(None) => ready(
            "ExtractionDisabled",
            "metadata extraction is disabled".into(),
        ),
        Metadata::Disabled(Some(_)) => ready(
            "ExtractionDisabled",
            "metadata extraction is disabled; keeping the metadata read earlier".into(),
        ),
        Metadata::Inspected { metadata, digest } => {
            let named = metadata
                .model
                .as_ref()
                .and_then(|m| m.canonical_name.as_deref());
            match named {
                Some(n) => ready("ImageMetadataFound", format!("{n} ({digest})")),
                None => ready(
                    "ImageFound",
                    format!("image {digest} has no AIM model labels"),
                ),
            }
        }
        Metadata::Stale { error, .. } => ready(
            "ImageMetadataStale",
            format!("keeping the metadata read earlier; the registry re-check failed: {error}"),
        ),
        Metadata::Failed(e) => ComponentHealth::new("ImageMetadata")
            .upstream()
            .error(e.clone()),
    }
}

/// The model status for its templates' statuses (NOTES section d).
pub fn aggregate(metadata_known: bool, phases: &[Phase]) -> (ComponentState, &'static str) {
    use ComponentState as S;
    if phases.is_empty() {
        return if metadata_known {
            (S::Ready, "NoTemplatesExpected")
        } else {
            (S::Progressing, "AwaitingMetadata")
        };
    }
    let all = |f: fn(&Phase) -> bool| phases.iter().all(f);
    let any = |f: fn(&Phase) -> bool| phases.iter().any(f);
    if all(|p| *p == Phase::Ready) {
        (S::Ready, "AllTemplatesReady")
    } else if all(|p| matches!(p, Phase::Degraded | Phase::Failed)) {
        (S::Failed, "AllTemplatesFailed")
    } else if all(|p| *p == Phase::NotAvailable) {
        (S::NotAvailable, "NoTemplatesAvailable")
    } else if any(|p| matches!(p, Phase::Degraded | Phase::Failed)) {
        (S::Degraded, "SomeTemplatesDegraded")
    } else if any(|p| matches!(p, Phase::Pending | Phase::Progressing)) {
        (S::Progressing, "TemplatesProgressing")
    } else {
        (S::Ready, "SomeTemplatesReady")
    }
}

/// The templates component: `phases` are the desired templates' live statuses (`None` when a
/// template does not exist yet).
pub fn templates_health(
    component: &'static str,
    state: &ModelState,
    phases: &[Option<Phase>],
    build_error: Option<CategorizedError>,
) -> ComponentHealth {
    if let Some(e) = build_error {
        return ComponentHealth::new(component).downstream().error(e);
    }
    if !phases.is_empty() && phases.iter().all(Option::is_none) {
        return ComponentHealth::with_state(
            component,
            ComponentState::Progressing,
            Reason::custom("CreatingTemplates"),
            format!("creating {} templates", phases.len()),
        )
        .downstream();
    }
    let known: Vec<Phase> = phases.iter().map(|p| p.unwrap_or(Phase::Pending)).collect();
    let (s, reason) = aggregate(state.metadata_known(), &known);
    let count = |p: Phase| known.iter().filter(|k| **k == p).count();
    let message = if known.is_empty() {
        "the image recommends no deployments".to_owned()
    } else {
        format!(
            "{} templates: {} Ready, {} NotAvailable, {} Failed or Degraded, {} in progress",
            known.len(),
            count(Phase::Ready),
            count(Phase::NotAvailable),
            count(Phase::Failed) + count(Phase::Degraded),
            count(Phase::Pending) + count(Phase::Progressing),
        )
    };
    ComponentHealth::with_state(component, s, Reason::custom(reason), message).downstream()
}

/// Where a violation of the model's spec rules at `path` shows (component, reason), for the
/// model kind whose templates component is `templates` (the status names the field):
/// `spec.runtimeConfigName` on `RuntimeConfig` (`ConfigNotFound`, the resolution's reason),
/// everything else (hardware, sources, env: what the templates are built from) on the
/// templates component (`InvalidSpec`). Use with `crate::service::validation::place`.
pub fn placed(templates: &'static str) -> impl Fn(&str) -> (&'static str, &'static str) {
    move |path| {
        if crate::service::validation::under(path, "spec.runtimeConfigName") {
            (crate::runtime_config::resolve::COMPONENT, "ConfigNotFound")
        } else {
            (templates, "InvalidSpec")
        }
    }
}

/// A template name that cannot be built (a spec the naming rules reject).
pub fn name_error(e: &kinfer_builders::naming::NameError) -> CategorizedError {
    CategorizedError::new(ErrorCategory::InvalidSpec, format!("template name: {e}"))
        .with_reason(Reason::custom("InvalidTemplateName"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_violations_name_their_fields_on_the_model_components() {
        let model: kinfer_api::aim::AIMModel = serde_json::from_value(serde_json::json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMModel",
            "metadata": {"name": "m", "namespace": "n"},
            "spec": {"image": "i", "runtimeConfigName": "$(x)",
                     "env": [{"name": "A", "value": "v",
                              "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}}))
        .expect("model");
        let found = crate::service::validation::place(&model, placed("ServiceTemplates"));
        let summary: Vec<(String, String, String)> = found
            .iter()
            .map(|h| {
                (
                    h.component.to_string(),
                    h.effective_reason().to_string(),
                    h.effective_message(),
                )
            })
            .collect();
        assert_eq!(summary.len(), 2, "{summary:?}");
        assert_eq!(
            (summary[0].0.as_str(), summary[0].1.as_str()),
            ("RuntimeConfig", "ConfigNotFound")
        );
        assert!(summary[0].2.starts_with("spec.runtimeConfigName: \"$(x)\""));
        assert_eq!(
            (summary[1].0.as_str(), summary[1].1.as_str()),
            ("ServiceTemplates", "InvalidSpec")
        );
        assert!(summary[1].2.starts_with("spec.env[0]"), "{}", summary[1].2);
    }

    #[test]
    fn aggregation_table() {
        use Phase::*;
        let a = |p: &[Phase]| aggregate(true, p).1;
        assert_eq!(aggregate(false, &[]).1, "AwaitingMetadata");
        assert_eq!(a(&[]), "NoTemplatesExpected");
        assert_eq!(a(&[Ready, Ready]), "AllTemplatesReady");
        assert_eq!(a(&[Failed, Degraded]), "AllTemplatesFailed");
        assert_eq!(a(&[NotAvailable]), "NoTemplatesAvailable");
        assert_eq!(a(&[Ready, Failed]), "SomeTemplatesDegraded");
        assert_eq!(a(&[Ready, Pending]), "TemplatesProgressing");
        assert_eq!(a(&[Ready, NotAvailable]), "SomeTemplatesReady");
        assert_eq!(
            aggregate(true, &[Ready, NotAvailable]).0,
            ComponentState::Ready
        );
    }
}
