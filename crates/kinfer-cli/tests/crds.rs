//! `kinfer crds` prints exactly the committed `deploy/crds` files.

use std::path::Path;
use std::process::Command;

#[test]
fn crds_prints_the_generated_deploy_files() {
    let output = Command::new(env!("CARGO_BIN_EXE_kinfer"))
        .arg("crds")
        .output()
        .expect("kinfer runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8(output.stdout).expect("utf-8");
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds");
    let documents: Vec<&str> = printed.split("---\n").skip(1).collect();
    let crds = kinfer_api::crds::all();
    assert_eq!(documents.len(), crds.len(), "one document per CRD");
    for (crd, document) in crds.iter().zip(documents) {
        let file = deploy.join(kinfer_api::crds::path(crd));
        let committed = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e} (run `cargo xtask gen-crds`)", file.display()));
        assert!(
            committed == document,
            "{} differs from `kinfer crds` (run `cargo xtask gen-crds`)",
            file.display()
        );
        assert!(document.contains("kind: CustomResourceDefinition"));
    }
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_kinfer"))
        .arg("frobnicate")
        .output()
        .expect("kinfer runs");
    assert_eq!(output.status.code(), Some(2));
}
