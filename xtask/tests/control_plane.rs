//! `cargo xtask control-plane --kubeconfig PATH [--audit-log PATH]`, the contract of
//! docs/development.md: it writes the kubeconfig, prints `ready` once the API server answers,
//! and stops everything it started on SIGTERM.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};

#[test]
fn runs_until_sigterm_then_stops_everything() {
    let dir = std::env::temp_dir().join(format!("kinfer-xtask-cp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let audit = dir.join("audit.log");
    let mut xtask = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("control-plane")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--audit-log")
        .arg(&audit)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let first = BufReader::new(xtask.stdout.take().unwrap())
        .lines()
        .next()
        .expect("a line")
        .unwrap();
    assert_eq!(first, "ready");

    // The kubeconfig works: the pinned kubectl reads /readyz through it.
    let bin = kinfer_testkit::control_plane::binaries::dir().unwrap();
    let readyz = Command::new(bin.join("kubectl"))
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .args(["get", "--raw", "/readyz"])
        .output()
        .unwrap();
    assert!(readyz.status.success(), "{readyz:?}");
    assert_eq!(String::from_utf8_lossy(&readyz.stdout).trim(), "ok");
    assert!(
        std::fs::read_to_string(&audit)
            .unwrap()
            .contains("\"/readyz\""),
        "the audit log records the request"
    );
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    let server = text
        .split("https://")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();

    let term = Command::new("kill")
        .args(["-TERM", &xtask.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = xtask.wait().unwrap();
    assert!(status.success(), "exits 0 on SIGTERM: {status}");
    assert!(
        TcpStream::connect(&server).is_err(),
        "the API server at {server} is stopped"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
