//! The rules of the fields a ModelService copies into its pods unchanged: images and pull
//! policy, vLLM arguments, node selectors, tolerations, pod annotations and resources.
//!
//! The CRD cannot say them (it is upstream's, field for field), and without them the operator
//! builds Deployments a real API server refuses with 422, on every reconcile. Each rule is the
//! API server's own pod validation (Kubernetes 1.32, `pkg/apis/core/validation`), reported at
//! the spec field the value came from; JSON-valued vLLM flags are checked because vLLM exits
//! at start-up on broken JSON.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ResourceRequirements, Toleration};

use crate::names::{is_label_value, is_qualified_name};
use crate::quantity;
use crate::validation::FieldErrors;

/// The pull policies Kubernetes accepts.
const PULL_POLICIES: [&str; 3] = ["Always", "IfNotPresent", "Never"];
/// The taint effects Kubernetes accepts on a toleration (or none: every effect).
const EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
/// The unprefixed resource names Kubernetes accepts on a container (besides `hugepages-*`).
const STANDARD_RESOURCES: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];
/// The most bytes of annotations one object may carry (`TotalAnnotationSizeLimitB`).
const MAX_ANNOTATION_BYTES: usize = 256 * 1024;
/// vLLM flags whose value is JSON (a dict or list), parsed with `json.loads` at start-up.
const JSON_FLAGS: [&str; 8] = [
    "--kv-transfer-config",
    "--kv-events-config",
    "--compilation-config",
    "--speculative-config",
    "--hf-overrides",
    "--override-generation-config",
    "--limit-mm-per-prompt",
    "--mm-processor-kwargs",
];

/// A container image reference: when set, not blank and without surrounding white space
/// (the API server refuses both). An empty value means the operator's default image.
pub(super) fn image(value: Option<&str>, path: &str, errors: &mut FieldErrors) {
    if let Some(image) = value.filter(|i| !i.is_empty())
        && image.trim() != image
    {
        errors.push(path, "must not have leading or trailing white space");
    }
}

/// `imagePullPolicy`: one of Kubernetes' three values when set.
pub(super) fn pull_policy(value: Option<&str>, path: &str, errors: &mut FieldErrors) {
    if let Some(policy) = value.filter(|p| !p.is_empty())
        && !PULL_POLICIES.contains(&policy)
    {
        errors.push(path, format!("must be one of {}", PULL_POLICIES.join(", ")));
    }
}

/// vLLM arguments: the value of a JSON-valued flag that looks like JSON (starts with `{` or
/// `[`) must parse, in `--flag value` and `--flag=value` form. Other values (`3` for a
/// compilation level, dotted `--flag.key value` forms) are vLLM's business.
pub(super) fn args(args: &[String], path: &str, errors: &mut FieldErrors) {
    for (i, arg) in args.iter().enumerate() {
        let (flag, value, at) = match arg.split_once('=') {
            Some((flag, value)) => (flag, Some(value), i),
            None => (arg.as_str(), args.get(i + 1).map(String::as_str), i + 1),
        };
        let flag = flag.replace('_', "-");
        let Some(value) = value.filter(|_| JSON_FLAGS.contains(&flag.as_str())) else {
            continue;
        };
        let trimmed = value.trim_start();
        if (trimmed.starts_with('{') || trimmed.starts_with('['))
            && serde_json::from_str::<serde_json::Value>(value).is_err()
        {
            errors.push(
                format!("{path}[{at}]"),
                format!("is not valid JSON, which vLLM's {flag} needs"),
            );
        }
    }
}

/// `nodeSelector`: label keys and values.
pub(super) fn node_selector(
    selector: &BTreeMap<String, String>,
    path: &str,
    errors: &mut FieldErrors,
) {
    for (key, value) in selector {
        if !is_qualified_name(key) {
            errors.push(format!("{path}[{key}]"), "is not a valid label key");
        } else if !is_label_value(value) {
            errors.push(
                format!("{path}[{key}]"),
                "must be a label value: at most 63 alphanumerics, '-', '_' or '.'",
            );
        }
    }
}

/// Pod-template `annotations`: qualified-name keys, 256 KiB in all.
pub(super) fn annotations(
    annotations: &BTreeMap<String, String>,
    path: &str,
    errors: &mut FieldErrors,
) {
    let mut size = 0;
    for (key, value) in annotations {
        size += key.len() + value.len();
        if !is_qualified_name(key) {
            errors.push(format!("{path}[{key}]"), "is not a valid annotation key");
        }
    }
    if size > MAX_ANNOTATION_BYTES {
        errors.push(
            path,
            format!("must have at most {MAX_ANNOTATION_BYTES} bytes in all"),
        );
    }
}

/// `tolerations`, as the API server validates them.
pub(super) fn tolerations(tolerations: &[Toleration], path: &str, errors: &mut FieldErrors) {
    for (i, t) in tolerations.iter().enumerate() {
        let item = format!("{path}[{i}]");
        let key = t.key.as_deref().unwrap_or_default();
        let operator = t.operator.as_deref().unwrap_or_default();
        let value = t.value.as_deref().unwrap_or_default();
        let effect = t.effect.as_deref().unwrap_or_default();
        if !key.is_empty() && !is_qualified_name(key) {
            errors.push(format!("{item}.key"), "is not a valid label key");
        }
        match operator {
            "" | "Equal" => {
                if key.is_empty() {
                    errors.push(
                        format!("{item}.operator"),
                        "must be Exists when key is empty",
                    );
                } else if !is_label_value(value) {
                    errors.push(
                        format!("{item}.value"),
                        "must be a label value: at most 63 alphanumerics, '-', '_' or '.'",
                    );
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errors.push(
                        format!("{item}.value"),
                        "must be empty when operator is Exists",
                    );
                }
            }
            _ => errors.push(format!("{item}.operator"), "must be Equal or Exists"),
        }
        if !effect.is_empty() && !EFFECTS.contains(&effect) {
            errors.push(
                format!("{item}.effect"),
                format!("must be one of {}", EFFECTS.join(", ")),
            );
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            errors.push(
                format!("{item}.tolerationSeconds"),
                "may be set only with effect NoExecute",
            );
        }
    }
}

/// Container `resources`: resource names, non-negative quantities (whole numbers for extended
/// resources), requests at most their limits, resources Kubernetes does not overcommit
/// (extended ones, huge pages) with equal requests and limits, and no `claims` (the operator adds no pod `resourceClaims` for them to name).
/// `aligned` is the accelerator resource, which the operator sets in both lists itself.
pub(super) fn resources(
    resources: &ResourceRequirements,
    aligned: Option<&str>,
    path: &str,
    errors: &mut FieldErrors,
) {
    if resources.claims.as_ref().is_some_and(|c| !c.is_empty()) {
        errors.push(
            format!("{path}.claims"),
            "is not supported: the pods have no resourceClaims to name",
        );
    }
    let empty = BTreeMap::new();
    let requests = resources.requests.as_ref().unwrap_or(&empty);
    let limits = resources.limits.as_ref().unwrap_or(&empty);
    let mut values = BTreeMap::new();
    for (list, entries) in [("requests", requests), ("limits", limits)] {
        for (name, q) in entries {
            let item = format!("{path}.{list}[{name}]");
            let extended = name.contains('/') && !name.starts_with("kubernetes.io/");
            if !is_qualified_name(name)
                || !(extended
                    || STANDARD_RESOURCES.contains(&name.as_str())
                    || name.starts_with("hugepages-"))
            {
                errors.push(
                    item,
                    "is not a resource name: cpu, memory, ephemeral-storage, hugepages-<size> or a domain-prefixed extended resource",
                );
                continue;
            }
            match quantity::parse(&q.0) {
                Some(v) if v < 0.0 => errors.push(item, "must not be negative"),
                Some(v) if extended && v.fract() != 0.0 => {
                    errors.push(item, "must be a whole number for an extended resource");
                }
                Some(v) => {
                    let exact = extended || name.starts_with("hugepages-");
                    values.insert((list, name.as_str()), (v, exact));
                }
                None => errors.push(item, format!("{:?} is not a valid quantity", q.0)),
            }
        }
    }
    for (&(list, name), &(request, exact)) in &values {
        if list != "requests" || Some(name) == aligned {
            continue;
        }
        let item = format!("{path}.requests[{name}]");
        match values.get(&("limits", name)) {
            Some(&(limit, _)) if request > limit => {
                errors.push(item, format!("must not exceed limits[{name}]"));
            }
            Some(&(limit, _)) if exact && request.total_cmp(&limit).is_ne() => {
                errors.push(
                    item,
                    format!("must equal limits[{name}]: Kubernetes does not overcommit it"),
                );
            }
            None if exact && !limits.contains_key(name) => {
                errors.push(
                    item,
                    "needs an equal limit: Kubernetes does not overcommit this resource",
                );
            }
            _ => {}
        }
    }
}
