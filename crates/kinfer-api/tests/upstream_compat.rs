//! Our generated CRDs against the upstream CRDs, field by field.
//!
//! For every upstream kind we replace, every spec field path must exist in ours with the same
//! type, format, enum, default, pattern, bounds, int-or-string, preserve-unknown-fields, CEL
//! rules and required list; names, scope, printer columns and subresources must match. Status
//! is compared too. The only differences allowed are listed in `DELIBERATE`, each with its
//! reason; an allowance that no longer matches anything fails the test, so the list stays true.

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
    (MS, ".spec.decode.annotations", ANNOTATIONS),
    (MS, ".spec.decode.annotations{}", ANNOTATIONS),
    (MS, ".spec.prefill.annotations", ANNOTATIONS),
    (MS, ".spec.prefill.annotations{}", ANNOTATIONS),
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

const SPEC_REQUIRED: &str = "the root schema requires spec (kube-derive's typed root cannot read an \
     object without one); upstream stores a spec-less object its own operator then rejects";
const MS: &str = "model.otterscale.io_modelservices.yaml";
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
                .position(|(f, p, _)| *f == file && diff.path() == *p);
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
