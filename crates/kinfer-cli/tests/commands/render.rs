//! `kinfer render`: byte-stable output, YAML and JSON agree, third-party objects validate
//! against the upstream CRDs.

use std::collections::BTreeMap;
use std::path::Path;

use kinfer_crdcheck::{SchemaValidator, load_yaml_documents, shared_dir};
use serde_json::Value;

use crate::{examples, ok, yaml_documents};

fn render_examples(format: &str) -> String {
    let dir = examples();
    ok(&[
        "render",
        "-f",
        dir.to_str().unwrap(),
        "--set-gpus",
        "MI300X=8",
        "-o",
        format,
    ])
}

#[test]
fn output_is_byte_identical_across_runs() {
    let first = render_examples("yaml");
    let second = render_examples("yaml");
    assert!(!first.is_empty());
    assert!(first == second, "two renders of examples/ differ");
    for volatile in [
        "uid:",
        "resourceVersion:",
        "managedFields:",
        "creationTimestamp:",
    ] {
        assert!(!first.contains(volatile), "output carries {volatile}");
    }
    for line in first.lines().filter(|l| l.contains("Time:")) {
        assert!(
            line.ends_with("1970-01-01T00:00:00Z"),
            "timestamp not normalised: {line}"
        );
    }
}

#[test]
fn json_and_yaml_carry_the_same_sorted_objects() {
    let yaml = yaml_documents(&render_examples("yaml"));
    let json: Value = serde_json::from_str(&render_examples("json")).expect("render prints JSON");
    assert_eq!(json["apiVersion"], "v1");
    assert_eq!(json["kind"], "List");
    let items = json["items"].as_array().expect("items").clone();
    assert_eq!(
        items.len(),
        yaml.len(),
        "JSON items and YAML documents differ in number"
    );
    for (j, y) in items.iter().zip(&yaml) {
        assert_eq!(j, y, "the JSON item and the YAML document differ");
    }
    let keys: Vec<(String, String, String, String)> = items
        .iter()
        .map(|o| {
            let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (
                s(&o["apiVersion"]),
                s(&o["kind"]),
                s(&o["metadata"]["namespace"]),
                s(&o["metadata"]["name"]),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "sorted by apiVersion, kind, namespace, name");
}

fn is_third_party(api_version: &str) -> bool {
    [
        "serving.kserve.io/",
        "gateway.networking.k8s.io/",
        "inference.networking.k8s.io/",
        "networking.istio.io/",
        "monitoring.coreos.com/",
    ]
    .iter()
    .any(|g| api_version.starts_with(g))
}

/// Upstream CRDs by (group, kind).
fn upstream_crds(dir: &Path) -> BTreeMap<(String, String), Value> {
    let mut out = BTreeMap::new();
    for project in std::fs::read_dir(dir).expect("upstream-crds") {
        let project = project.unwrap().path();
        if !project.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&project).unwrap() {
            let file = file.unwrap().path();
            if file.extension().is_some_and(|e| e == "yaml") {
                for crd in load_yaml_documents(&file) {
                    let group = crd["spec"]["group"].as_str().unwrap_or_default().to_owned();
                    let kind = crd["spec"]["names"]["kind"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    out.insert((group, kind), crd);
                }
            }
        }
    }
    out
}

#[test]
fn every_third_party_object_validates_against_the_upstream_crds() {
    let Some(shared) = shared_dir() else { return };
    let crds = upstream_crds(&shared.join("upstream-crds"));
    let objects = yaml_documents(&render_examples("yaml"));
    let mut checked = 0;
    for object in objects {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        if !is_third_party(api_version) {
            continue;
        }
        let (group, version) = api_version.split_once('/').unwrap();
        let kind = object["kind"].as_str().unwrap();
        let crd = crds
            .get(&(group.to_owned(), kind.to_owned()))
            .unwrap_or_else(|| panic!("no upstream CRD for {group}/{kind}"));
        let validator = SchemaValidator::from_crd(crd, Some(version))
            .unwrap_or_else(|e| panic!("{group}/{kind} {version}: {e}"));
        let errors = validator.errors(&object);
        assert!(
            errors.is_empty(),
            "{kind} {}: {errors:#?}",
            object["metadata"]["name"]
        );
        checked += 1;
    }
    assert!(checked > 0, "the examples create third-party objects");
}
