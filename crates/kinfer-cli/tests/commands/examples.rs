//! Every example renders, and each of its inputs reaches Ready; the examples that need a
//! registry say so offline instead of reaching the network.
//!
//! Every directory under `examples/` holding manifests is rendered once, as its headers tell a
//! user to (`kinfer render -f examples/<dir> --set-gpus MI300X=8`), so a new example file is
//! covered without editing this test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{examples, kinfer, yaml_documents};

/// Inputs that need a registry: under render they must report `RegistryOffline` (the offline
/// inspector answered; nothing reached docker.io), never Ready. `(file, kind, name)`.
const NEEDS_REGISTRY: &[(&str, &str, &str)] = &[
    (
        "aim/catalog/model-from-registry.yaml",
        "AIMClusterModel",
        "qwen3-32b",
    ),
    (
        "aim/catalog/model-source.yaml",
        "AIMClusterModelSource",
        "amd-aim",
    ),
];

fn ready(object: &Value) -> bool {
    conditions(object).any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn conditions(object: &Value) -> impl Iterator<Item = &Value> {
    object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
}

/// Directories under `dir` (itself included) that hold `.yaml` files, and those files.
fn manifest_dirs(dir: &Path, out: &mut Vec<(PathBuf, Vec<PathBuf>)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let files: Vec<PathBuf> = entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .cloned()
        .collect();
    if !files.is_empty() {
        out.push((dir.to_path_buf(), files));
    }
    for sub in entries.iter().filter(|p| p.is_dir()) {
        manifest_dirs(sub, out);
    }
}

fn relative(file: &Path) -> String {
    file.strip_prefix(examples())
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_example_reaches_ready_or_says_it_needs_a_registry() {
    let mut dirs = Vec::new();
    manifest_dirs(&examples(), &mut dirs);
    assert!(dirs.len() >= 4, "examples/ has the operators' directories");
    let mut offline_seen = BTreeSet::new();
    let mut checked = 0;
    for (dir, files) in dirs {
        let out = kinfer(&[
            "render",
            "-f",
            dir.to_str().unwrap(),
            "--set-gpus",
            "MI300X=8",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: render failed:\n{stderr}",
            dir.display()
        );
        let rendered = yaml_documents(&String::from_utf8(out.stdout).unwrap());
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            assert!(
                text.starts_with("# "),
                "{} starts with a comment header",
                file.display()
            );
            let docs = yaml_documents(&text);
            // Each file carries the Namespaces it uses, so `kubectl apply -f FILE` works alone.
            for ns in docs
                .iter()
                .filter_map(|d| d["metadata"]["namespace"].as_str())
            {
                assert!(
                    docs.iter()
                        .any(|d| d["kind"] == "Namespace" && d["metadata"]["name"] == ns),
                    "{} uses namespace {ns} without creating it",
                    file.display()
                );
            }
            for doc in docs {
                let (kind, name) = (
                    doc["kind"].as_str().unwrap(),
                    doc["metadata"]["name"].as_str().unwrap(),
                );
                let object = rendered
                    .iter()
                    .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
                    .unwrap_or_else(|| panic!("{}: {kind} {name} not rendered", file.display()));
                let file_name = relative(&file);
                if kind == "Namespace" {
                    continue;
                }
                if NEEDS_REGISTRY.contains(&(file_name.as_str(), kind, name)) {
                    assert!(!ready(object), "{kind} {name} is Ready without a registry");
                    assert!(
                        conditions(object).any(|c| c["reason"] == "RegistryOffline"
                            && c["message"]
                                .as_str()
                                .unwrap_or_default()
                                .contains("offline")),
                        "{kind} {name} does not say render is offline:\n{:#}",
                        object["status"]
                    );
                    offline_seen.insert(file_name);
                } else {
                    assert!(
                        ready(object),
                        "{}: {kind} {name} is not Ready:\n{:#}",
                        file.display(),
                        object["status"]
                    );
                }
                checked += 1;
            }
        }
    }
    assert_eq!(
        offline_seen.len(),
        NEEDS_REGISTRY.len(),
        "every registry example was rendered"
    );
    assert!(checked >= 12, "only {checked} example inputs");
}
