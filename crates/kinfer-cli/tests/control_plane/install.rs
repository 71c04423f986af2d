//! The install: `kubectl kustomize deploy/default | kubectl apply --server-side -f -` against the
//! real API server, every object accepted.

use std::io::Write;
use std::process::Stdio;

use crate::{plane, root};

#[test]
fn the_default_install_is_accepted_server_side() {
    let plane = plane();
    let rendered = crate::kubectl(
        plane,
        &["kustomize", root().join("deploy/default").to_str().unwrap()],
    );
    assert!(
        rendered.status.success(),
        "kubectl kustomize: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let mut apply = plane
        .kubectl()
        .unwrap()
        .args([
            "apply",
            "--server-side",
            "--field-manager=kinfer-install",
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    apply
        .stdin
        .take()
        .unwrap()
        .write_all(&rendered.stdout)
        .unwrap();
    let out = apply.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl apply: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let objects = rendered
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| l.starts_with(b"kind: "))
        .count();
    let applied = stdout
        .lines()
        .filter(|l| l.ends_with(" serverside-applied"))
        .count();
    assert_eq!(
        applied, objects,
        "every object of the install applied:\n{stdout}"
    );
}
