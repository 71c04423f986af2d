//! Everything kinfer builds is valid to a real API server: every object `kinfer render`
//! prints for `examples/` and for each upstream sample of the served groups (what the operators
//! create, built-in kinds included, and the inputs with their status) passes a server-side dry
//! run on the real control plane; third-party kinds against their upstream CRDs.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::{apply, client, root, shared};

/// The objects `kinfer render` prints for `path` (render's own exit code aside: an input that
/// ends Failed still has its objects printed).
fn render(path: &Path) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_kinfer"))
        .args(["--quiet", "render", "-f"])
        .arg(path)
        .args(["--set-gpus", "MI300X=8,H100=8", "-o", "json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "kinfer render -f {} printed no JSON list ({e}; exit {:?}):\n{}",
            path.display(),
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    list["items"].as_array().cloned().unwrap_or_default()
}

/// render leaves owner references' UIDs out (they differ run to run); a real server requires
/// one, so each gets a placeholder: the rest of the reference is still checked.
fn with_owner_uids(mut object: Value) -> Value {
    if let Some(refs) = object["metadata"]["ownerReferences"].as_array_mut() {
        for r in refs {
            if r.get("uid").is_none() {
                r["uid"] = Value::from("00000000-0000-0000-0000-000000000000");
            }
        }
    }
    object
}

async fn dry_run_all(inputs: &[std::path::PathBuf]) {
    let (client, discovery) = client().await;
    let mut refused = Vec::new();
    let mut checked = 0;
    for input in inputs {
        let objects = render(input);
        assert!(
            !objects.is_empty(),
            "{}: render printed nothing",
            input.display()
        );
        for object in objects {
            let object = with_owner_uids(object);
            checked += 1;
            if let Err(e) = apply(&client, &discovery, &object, "default", false).await {
                refused.push(format!(
                    "{}: {} {}/{}: {e}",
                    input.display(),
                    object["kind"].as_str().unwrap_or_default(),
                    object["metadata"]["namespace"].as_str().unwrap_or_default(),
                    object["metadata"]["name"].as_str().unwrap_or_default()
                ));
            }
        }
    }
    assert!(
        refused.is_empty(),
        "{} of {checked} objects refused:\n{}",
        refused.len(),
        refused.join("\n")
    );
}

#[tokio::test]
async fn every_object_rendered_for_the_examples_passes_a_dry_run() {
    dry_run_all(&[root().join("examples")]).await;
}

#[tokio::test]
async fn every_object_rendered_for_the_upstream_samples_passes_a_dry_run() {
    let mut files = Vec::new();
    for dir in ["reference/aim/samples", "reference/modelservice/samples"] {
        for (file, doc) in crate::documents_under(&shared().join(dir)) {
            let group = doc["apiVersion"].as_str().unwrap_or_default();
            if !group.starts_with("aim.silogen.ai/") && !files.contains(&file) {
                files.push(file);
            }
        }
    }
    assert!(files.len() >= 15, "sample files: {}", files.len());
    dry_run_all(&files).await;
}
