//! Our generated CRDs against the upstream CRDs, field by field.
//!
//! For every upstream kind we replace, every spec field path must exist in ours with the same
//! type, format, enum, default, pattern, bounds, int-or-string, preserve-unknown-fields, CEL
//! rules and required list; names, scope, printer columns and subresources must match. Status
//! is compared too. The only differences allowed are listed in `DELIBERATE`, each with its
//! reason; an allowance that no longer matches anything fails the test, so the list stays true.
//! An allowance ending in `.**` covers a whole extra subtree (a field upstream lacks and every
//! field under it), and only fields upstream lacks: a changed or missing field never matches it.

#![allow(clippy::expect_used)]

use kinfer_crdcheck::{CompareOptions, Difference, compare_crds, load_yaml_documents, shared_dir};
use serde_json::Value;

/// `(upstream file, path or CRD item, why we differ)`.
const DELIBERATE: &[(&str, &str, &str)] = &[
    ("aim.eai.amd.com_aimartifacts.yaml", "", SPEC_REQUIRED),
    ("aim.eai.amd.com_aimclustermodels.yaml", "", SPEC_REQUIRED),
    (
        "aim.eai.amd.com_aimclustermodelsources.yaml",
        "",
        SPEC_REQUIRED,
    ),
    (
        "aim.eai.amd.com_aimclusterruntimeconfigs.yaml",
        "",
        SPEC_REQUIRED,
    ),
    (
        "aim.eai.amd.com_aimclusterservicetemplates.yaml",
        "",
        SPEC_REQUIRED,
    ),
    ("aim.eai.amd.com_aimmodels.yaml", "", SPEC_REQUIRED),
    ("aim.eai.amd.com_aimruntimeconfigs.yaml", "", SPEC_REQUIRED),
    ("aim.eai.amd.com_aimservices.yaml", "", SPEC_REQUIRED),
    (
        "aim.eai.amd.com_aimservicetemplates.yaml",
        "",
        SPEC_REQUIRED,
    ),
    ("aim.eai.amd.com_aimtemplatecaches.yaml", "", SPEC_REQUIRED),
    (
        "aim.eai.amd.com_aimservices.yaml",
        ".status.status",
        "adds NotAvailable, which the state engine derives and upstream's enum rejects \
         (reference/aim/NOTES.md section g)",
    ),
    (
        "aim.eai.amd.com_aimclusterruntimeconfigs.yaml",
        ".spec.storage.pvcHeadroomPercent",
        HEADROOM,
    ),
    (
        "aim.eai.amd.com_aimruntimeconfigs.yaml",
        ".spec.storage.pvcHeadroomPercent",
        HEADROOM,
    ),
    (
        "aim.eai.amd.com_aimservices.yaml",
        ".spec.storage.pvcHeadroomPercent",
        HEADROOM,
    ),
    (MS, ".spec.decode.annotations", ANNOTATIONS),
    (MS, ".spec.decode.annotations{}", ANNOTATIONS),
    (MS, ".spec.prefill.annotations", ANNOTATIONS),
    (MS, ".spec.prefill.annotations{}", ANNOTATIONS),
    (MS, ".spec.decode.engine.**", ROLE_ENGINE),
    (MS, ".spec.prefill.engine.**", ROLE_ENGINE),
    (
        MS,
        ".status.eppReady",
        "Endpoint Picker ready replicas in status (upstream reports only decode/prefill)",
    ),
    (
        MS,
        ".status.eppReplicas",
        "Endpoint Picker desired replicas in status (upstream reports only decode/prefill)",
    ),
    (
        MS,
        ".status.phase",
        "upstream's Go type declares Pending/Running/Ready/Failed but its CRD leaves the string \
         open; we enumerate them so the operator can always parse what it wrote",
    ),
];

const HEADROOM: &str = "no schema default (10 applies when no config sets it): with upstream's \
     `default: 10` the API server fills it into every `storage`, so a namespace runtime config \
     that sets only the storage class would override the cluster config's headroom";
const SPEC_REQUIRED: &str = "the root schema requires spec (kube-derive's typed root cannot read an \
     object without one); upstream stores a spec-less object its own operator then rejects";
const MS: &str = "model.otterscale.io_modelservices.yaml";
const ROLE_ENGINE: &str = "per-role vLLM args and env over the shared spec.engine (NOTES g5); \
                           optional, so upstream manifests keep their meaning";
const ANNOTATIONS: &str = "per-role pod annotations: upstream's Go types and operator read them, \
                           its published CRD omits them (reference/modelservice/SOURCE.md)";

fn our_crd(group: &str, plural: &str) -> Option<Value> {
    kinfer_api::crds::all()
        .into_iter()
        .find(|crd| crd.spec.group == group && crd.spec.names.plural == plural)
        .map(|crd| serde_json::to_value(crd).expect("CRD serialises"))
}

fn upstream_files() -> Option<Vec<std::path::PathBuf>> {
    let shared = shared_dir()?;
    let mut files = Vec::new();
    for dir in ["reference/aim/crds", "reference/modelservice/crds"] {
        for entry in std::fs::read_dir(shared.join(dir)).expect("reference CRD dir") {
            let path = entry.expect("dir entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            // aim.silogen.ai and config.kaiwo.silogen.ai are kaiwo's older generation, kept
            // upstream for comparison only; aim.eai.amd.com is the API we serve.
            if name.starts_with("aim.eai.amd.com_") || name.starts_with("model.otterscale.io_") {
                files.push(path);
            }
        }
    }
    files.sort();
    Some(files)
}

/// Whether the allowance `allowed` covers `diff`: the same path, or (`<path>.**`) an extra
/// field at or under `<path>`.
fn allows(allowed: &str, diff: &Difference) -> bool {
    match allowed.strip_suffix(".**") {
        None => diff.path() == allowed,
        Some(root) => {
            matches!(diff, Difference::Extra { .. })
                && (diff.path() == root
                    || diff
                        .path()
                        .strip_prefix(root)
                        .is_some_and(|rest| rest.starts_with(['.', '[', '{'])))
        }
    }
}

#[test]
fn every_upstream_kind_is_served_with_the_same_schema() {
    let Some(files) = upstream_files() else {
        return;
    };
    assert!(
        files.len() >= 11,
        "expected 10 AIM CRDs and ModelService, found {files:?}"
    );
    let mut failures = Vec::new();
    let mut used = vec![false; DELIBERATE.len()];
    for path in &files {
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let upstream = load_yaml_documents(path).remove(0);
        let group = upstream["spec"]["group"].as_str().unwrap_or_default();
        let plural = upstream["spec"]["names"]["plural"]
            .as_str()
            .unwrap_or_default();
        let Some(ours) = our_crd(group, plural) else {
            failures.push(format!("{file}: kind {group}/{plural} is not served"));
            continue;
        };
        let options = CompareOptions {
            include_status: true,
        };
        for diff in compare_crds(&upstream, &ours, options) {
            let allowed = DELIBERATE
                .iter()
                .position(|(f, p, _)| *f == file && allows(p, &diff));
            match allowed {
                Some(i) => used[i] = true,
                None => failures.push(format!("{file}: {diff}")),
            }
        }
    }
    for (i, (file, path, why)) in DELIBERATE.iter().enumerate() {
        if !used[i] {
            failures.push(format!(
                "stale allowance {file} {path} ({why}): no longer differs"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn missing_fields_are_never_allowed() {
    // A missing spec field means an upstream manifest loses data; no allowance may cover one.
    let Some(files) = upstream_files() else {
        return;
    };
    for path in &files {
        let upstream = load_yaml_documents(path).remove(0);
        let group = upstream["spec"]["group"].as_str().unwrap_or_default();
        let plural = upstream["spec"]["names"]["plural"]
            .as_str()
            .unwrap_or_default();
        let Some(ours) = our_crd(group, plural) else {
            continue;
        };
        let missing: Vec<String> = compare_crds(&upstream, &ours, CompareOptions::default())
            .into_iter()
            .filter(|d| matches!(d, Difference::Missing { .. }))
            .map(|d| d.to_string())
            .collect();
        assert!(missing.is_empty(), "{}: {missing:?}", path.display());
    }
}
