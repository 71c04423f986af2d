//! AIM metadata from image config labels.
//!
//! Contract ([`parse_image_metadata`]):
//! - AIM labels are read as `com.amd.aim.<suffix>`, falling back to `org.amd.silogen.<suffix>`
//!   when the first is missing or empty (upstream's rule). Empty values count as absent.
//! - `model.tags`, `model.versions`, `model.variants`: comma-separated, items trimmed, empty
//!   items dropped.
//! - `hfToken.required`: Go `strconv.ParseBool` (`1 t T TRUE true True 0 f F FALSE false False`);
//!   any other value is ignored with a warning (upstream behaviour, and what
//!   `ModelMetadata::hf_token_required` documents).
//! - `model.recommendedDeployments`: trimmed; wrapped in `[...]` unless it starts with `[`; read
//!   as JSON, else converted from Python-literal style by [`crate::pydict`] (apostrophes survive)
//!   and read as JSON. Unknown keys are ignored. A value that is neither is
//!   [`OciError::InvalidLabel`] naming the label that was actually read.
//! - `org.opencontainers.image.{title,description,licenses,vendor,authors,source,documentation,
//!   created,revision,version}` go to `oci`.
//! - Every label is kept verbatim in `original_labels`. `model` / `oci` are `None` when the
//!   image has none of their labels, so an unlabelled image is valid and yields no templates.

use std::collections::BTreeMap;

use kinfer_api::aim::image_metadata::{LABEL_PREFIX, LEGACY_LABEL_PREFIX, OCI_LABEL_PREFIX};
use kinfer_api::aim::{ImageMetadata, ModelMetadata, OciMetadata, RecommendedDeployment};

use crate::error::OciError;
use crate::pydict::python_literal_to_json;

/// Parses AIM and OCI metadata from an image's config labels.
pub fn parse_image_metadata(labels: &BTreeMap<String, String>) -> Result<ImageMetadata, OciError> {
    let aim = |suffix: &str| aim_label(labels, suffix);
    let list = |suffix: &str| aim(suffix).map(|(_, v)| split_list(v)).unwrap_or_default();
    let text = |suffix: &str| aim(suffix).map(|(_, v)| v.to_owned());

    let recommended_deployments = match aim("model.recommendedDeployments") {
        Some((key, value)) => {
            parse_recommended_deployments(value).map_err(|reason| OciError::InvalidLabel {
                label: key.to_owned(),
                reason,
            })?
        }
        None => Vec::new(),
    };
    let hf_token_required = aim("hfToken.required").and_then(|(key, value)| {
        let parsed = parse_go_bool(value);
        if parsed.is_none() {
            tracing::warn!(label = key, value, "ignoring label that is not a boolean");
        }
        parsed
    });
    let model = ModelMetadata {
        canonical_name: text("model.canonicalName"),
        description_full: text("description.full"),
        hf_token_required,
        recommended_deployments,
        release_notes: text("release.notes"),
        source: text("model.source"),
        tags: list("model.tags"),
        title: text("title"),
        variants: list("model.variants"),
        versions: list("model.versions"),
    };

    let oci_label = |field: &str| {
        labels
            .get(&format!("{OCI_LABEL_PREFIX}{field}"))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    let oci = OciMetadata {
        authors: oci_label("authors"),
        created: oci_label("created"),
        description: oci_label("description"),
        documentation: oci_label("documentation"),
        licenses: oci_label("licenses"),
        revision: oci_label("revision"),
        source: oci_label("source"),
        title: oci_label("title"),
        vendor: oci_label("vendor"),
        version: oci_label("version"),
    };

    Ok(ImageMetadata {
        model: (model != ModelMetadata::default()).then_some(model),
        oci: (oci != OciMetadata::default()).then_some(oci),
        original_labels: labels.clone(),
    })
}

/// The non-empty value of `com.amd.aim.<suffix>`, else of `org.amd.silogen.<suffix>`, with the
/// key it came from.
fn aim_label<'a>(labels: &'a BTreeMap<String, String>, suffix: &str) -> Option<(&'a str, &'a str)> {
    [LABEL_PREFIX, LEGACY_LABEL_PREFIX]
        .iter()
        .find_map(|prefix| {
            labels
                .get_key_value(&format!("{prefix}{suffix}"))
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.as_str(), v.as_str()))
        })
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Go's `strconv.ParseBool`.
pub(crate) fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// JSON first, then Python-literal style; the error text never exceeds a short excerpt.
pub(crate) fn parse_recommended_deployments(
    value: &str,
) -> Result<Vec<RecommendedDeployment>, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    let wrapped = if trimmed.starts_with('[') {
        trimmed.to_owned()
    } else {
        format!("[{trimmed}]")
    };
    let json_error = match serde_json::from_str::<Vec<RecommendedDeployment>>(&wrapped) {
        Ok(deployments) => return Ok(deployments),
        Err(e) => e,
    };
    // Valid JSON of the wrong shape: report the JSON error, a Python reading cannot help.
    if serde_json::from_str::<serde_json::Value>(&wrapped).is_ok() {
        return Err(format!("not a list of deployments: {json_error}"));
    }
    let converted = python_literal_to_json(&wrapped)
        .map_err(|e| format!("neither JSON ({json_error}) nor a Python literal ({e})"))?;
    serde_json::from_str::<Vec<RecommendedDeployment>>(&converted)
        .map_err(|e| format!("not a list of deployments after Python-literal conversion: {e}"))
}

#[cfg(test)]
#[path = "unit_tests/labels.rs"]
mod tests;
