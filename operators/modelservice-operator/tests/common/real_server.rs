//! What a real API server (Kubernetes 1.32) refuses in the pod templates the operator builds,
//! for the fields a ModelService spec reaches. The test cluster does not validate built-in
//! kinds, so without this check a child built from an invalid value would pass the scenario
//! tests and be refused (422) on every reconcile on a real cluster. Deliberately independent
//! of `kinfer_api`'s validation: it is the oracle that validation is tested against.

use kinfer_builders::naming;
use serde_json::Value;

/// A qualified name (label and annotation keys, resource names): an optional DNS-1123
/// subdomain prefix and `/`, then a name of at most 63 characters.
fn qualified(key: &str) -> bool {
    let (prefix, name) = key
        .rsplit_once('/')
        .map_or((None, key), |(p, n)| (Some(p), n));
    let name_ok = (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    name_ok && prefix.is_none_or(naming::is_dns1123_subdomain)
}

/// What a real API server (Kubernetes 1.32) refuses in a Deployment's pod template, for the
/// fields a ModelService spec reaches: the test cluster does not validate built-in kinds, so a
/// child built from an invalid value would otherwise pass here and loop on a real cluster.
pub fn pod_template_errors(d: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let template = &d["spec"]["template"];
    for (k, _) in template["metadata"]["annotations"]
        .as_object()
        .into_iter()
        .flatten()
    {
        if !qualified(k) {
            errors.push(format!("annotation key {k:?}"));
        }
    }
    let pod = &template["spec"];
    for (k, v) in pod["nodeSelector"].as_object().into_iter().flatten() {
        if !qualified(k) || !v.as_str().is_some_and(naming::is_label_value) {
            errors.push(format!("nodeSelector {k:?}={v}"));
        }
    }
    for t in pod["tolerations"].as_array().into_iter().flatten() {
        let key = t["key"].as_str().unwrap_or_default();
        let op = t["operator"].as_str().unwrap_or_default();
        let effect = t["effect"].as_str().unwrap_or_default();
        let value = t["value"].as_str().unwrap_or_default();
        let bad = (!key.is_empty() && !qualified(key))
            || !["", "Equal", "Exists"].contains(&op)
            || (key.is_empty() && op != "Exists")
            || (op == "Exists" && !value.is_empty())
            || (op != "Exists" && !naming::is_label_value(value))
            || !["", "NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect)
            || (!t["tolerationSeconds"].is_null() && effect != "NoExecute");
        if bad {
            errors.push(format!("toleration {t}"));
        }
    }
    let containers = pod["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(pod["containers"].as_array().into_iter().flatten());
    for c in containers {
        let image = c["image"].as_str().unwrap_or_default();
        if image.is_empty() || image.trim() != image {
            errors.push(format!("image {image:?}"));
        }
        if !c["imagePullPolicy"].is_null()
            && !["Always", "IfNotPresent", "Never"]
                .contains(&c["imagePullPolicy"].as_str().unwrap_or(""))
        {
            errors.push(format!("imagePullPolicy {}", c["imagePullPolicy"]));
        }
        for e in c["env"].as_array().into_iter().flatten() {
            let name = e["name"].as_str().unwrap_or_default();
            if name.is_empty()
                || name.contains('=')
                || !name.bytes().all(|b| (32..127).contains(&b))
            {
                errors.push(format!("env name {name:?}"));
            }
        }
        for p in c["ports"].as_array().into_iter().flatten() {
            if !p["containerPort"]
                .as_i64()
                .is_some_and(|p| (1..=65535).contains(&p))
            {
                errors.push(format!("port {p}"));
            }
        }
        let resources = &c["resources"];
        for list in ["requests", "limits"] {
            for (k, v) in resources[list].as_object().into_iter().flatten() {
                let parsed = v.as_str().and_then(kinfer_api::quantity::parse);
                if !qualified(k) || !parsed.is_some_and(|q| q >= 0.0) {
                    errors.push(format!("{list} {k}={v}"));
                }
            }
        }
        for (k, request) in resources["requests"].as_object().into_iter().flatten() {
            let parse = |v: &Value| v.as_str().and_then(kinfer_api::quantity::parse);
            if let (Some(r), Some(l)) = (parse(request), parse(&resources["limits"][k]))
                && r > l
            {
                errors.push(format!("request {k}={request} above its limit"));
            }
        }
    }
    errors
}
