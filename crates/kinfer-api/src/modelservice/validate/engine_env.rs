//! The env rules of the vLLM container, shared by `spec.engine.env` and each role's
//! `engine.env` (merged over it by name), and the ports the NIXL side channel must not take.

use std::collections::BTreeMap;

use super::Findings;
use crate::env::{EnvVar, validate_env};
use crate::modelservice::spec::ModelServiceSpec;
use crate::validation::FieldErrors;

/// Env names the operator sets itself on the vLLM container, before `engine.env`, and the
/// `spec.<role>.parallelism` field each comes from (NOTES.md section b, row 3).
const GENERATED_ENV: [(&str, &str); 3] = [
    ("TP_SIZE", "tensor"),
    ("DP_SIZE", "data"),
    ("DP_SIZE_LOCAL", "dataLocal"),
];
/// The env variable whose literal value becomes the vLLM container port `nixl-side`.
const NIXL_PORT_ENV: &str = "VLLM_NIXL_SIDE_CHANNEL_PORT";

/// The ports the vLLM container or its pod already uses (NOTES.md section b, rows 3 and 7).
pub(super) fn taken_ports(spec: &ModelServiceSpec) -> Vec<i32> {
    let mut taken = vec![spec.engine.port];
    if let Some(proxy) = &spec.routing_proxy {
        taken.push(proxy.target_port);
    }
    taken
}

/// The rules of one env list (`spec.engine.env`, or a role's `engine.env` merged over it).
pub(super) fn env_rules(
    env: &[EnvVar],
    path: &str,
    scope: &str,
    taken: &[i32],
    found: &mut Findings,
) {
    // The occurrence vLLM sees: Kubernetes keeps the last value of a repeated name.
    let nixl = env.iter().rposition(|var| var.name == NIXL_PORT_ENV);
    // Kubernetes' own env rules, as for every kind; `valueFrom.fileKeyRef` is accepted like any
    // other source: it is in the upstream CRD, and whether the target cluster supports it is
    // the operator's decision.
    validate_env(path, env, &mut found.errors);
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, var) in env.iter().enumerate() {
        let item = format!("{path}[{i}]");
        if var.name.is_empty() {
            continue;
        }
        // Kubernetes 1.32 (RelaxedEnvironmentVariableValidation, on by default) accepts any
        // printable ASCII except '=' in a container env name, and refuses the pod otherwise.
        if var.name.contains('=') || !var.name.bytes().all(|b| (b' '..=b'~').contains(&b)) {
            found.errors.push(
                format!("{item}.name"),
                "must be printable ASCII characters other than '='",
            );
        }
        // Each role's vLLM container gets the generated variables followed by engine.env
        // (NOTES.md section a, Engine.Env). Kubernetes accepts a repeated name (with an API
        // warning) and the last value wins, which is how upstream lets users override the
        // generated ones; so these are warnings, not errors.
        if let Some((_, field)) = GENERATED_ENV.iter().find(|(name, _)| *name == var.name) {
            found.warnings.push(
                format!("{item}.name"),
                format!(
                    "replaces the {} the operator sets from spec.<role>.parallelism.{field} {scope} (the last value wins); the vLLM flags still follow parallelism.{field}",
                    var.name
                ),
            );
        } else if let Some(first) = seen.get(var.name.as_str()) {
            found.warnings.push(
                format!("{item}.name"),
                format!("duplicates {path}[{first}].name; Kubernetes keeps the last value"),
            );
        } else {
            seen.insert(&var.name, i);
        }
        if nixl == Some(i) {
            nixl_port(var, &item, taken, &mut found.errors);
        }
    }
}

/// `VLLM_NIXL_SIDE_CHANNEL_PORT` becomes the container port `nixl-side` (NOTES.md section a,
/// Engine.Env); upstream silently skips a value that is not a port, and vLLM's NIXL connector
/// then fails to parse it or to bind it. Only the occurrence vLLM sees (the last) is checked.
fn nixl_port(var: &EnvVar, path: &str, taken: &[i32], errors: &mut FieldErrors) {
    let Some(value) = var.value.as_deref() else {
        return;
    };
    match value.trim().parse::<i32>() {
        Ok(n) if (1..=65535).contains(&n) => {
            if taken.contains(&n) {
                errors.push(
                    format!("{path}.value"),
                    format!("port {n} is already the serving or routing-proxy target port"),
                );
            }
        }
        _ => errors.push(
            format!("{path}.value"),
            "must be a port number between 1 and 65535",
        ),
    }
}
