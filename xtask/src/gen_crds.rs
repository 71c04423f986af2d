//! `cargo xtask gen-crds [--check]`.
//!
//! The CRD YAML under `deploy/crds/` is generated from the Rust types, never edited by hand.
//! `--check` is what CI runs: it fails, naming each file, when the committed YAML has drifted
//! from the types (a type changed without regenerating, or a file was edited by hand).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::generated;

pub fn run(check: bool) -> Result<()> {
    let dir = workspace_root().join("deploy/crds");
    let files = kinfer_api::crds::rendered_files()?;
    if check {
        return check_files(&dir, &files);
    }
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let wanted: BTreeSet<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    for entry in fs::read_dir(&dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if is_crd_file(name) && !wanted.contains(name) {
            fs::remove_file(&path).with_context(|| format!("removing stale {}", path.display()))?;
            println!("removed {}", path.display());
        }
    }
    for (name, text) in &files {
        let path = dir.join(name);
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let kustomization = kinfer_api::crds::kustomization(&files);
    fs::write(dir.join("kustomization.yaml"), kustomization)?;
    println!("wrote {} CRDs to {}", files.len(), dir.display());
    Ok(())
}

fn check_files(dir: &Path, files: &[(String, String)]) -> Result<()> {
    let mut problems = generated::drift(dir, files, is_crd_file, "CRD", "type");
    let kustomization = kinfer_api::crds::kustomization(files);
    let path = dir.join("kustomization.yaml");
    if fs::read_to_string(&path).ok().as_deref() != Some(kustomization.as_str()) {
        problems.push(format!(
            "{} differs from the generated list",
            path.display()
        ));
    }
    generated::report(
        &problems,
        &format!("deploy/crds is up to date ({} CRDs)", files.len()),
        "deploy/crds is out of date: run `cargo xtask gen-crds` and commit the result",
    )
}

/// A YAML file in `deploy/crds` other than the kustomization: one generated CRD each.
fn is_crd_file(name: &str) -> bool {
    let yaml = Path::new(name)
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("yaml"));
    yaml && name != "kustomization.yaml"
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}
