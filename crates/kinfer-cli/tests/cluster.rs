//! `kinfer cluster`: serves an API server on loopback with a kubeconfig, stops on SIGTERM,
//! and refuses to listen anywhere but loopback.

#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("kinfer-cli-{}-{name}", std::process::id()))
}

#[test]
fn serves_until_sigterm_and_writes_a_usable_kubeconfig() {
    let kubeconfig = temp_path("cluster.kubeconfig");
    let _ = std::fs::remove_file(&kubeconfig);
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kinfer"))
        .args(["cluster", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--crds")
        .arg(&crds)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kinfer starts");

    // `serving` is announced once the server answers and the kubeconfig is written; the read
    // blocks until then (or until the process dies and closes its stderr).
    // The reader stays open until the process exits, so a late message never hits a closed pipe.
    let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let announced = stderr
        .by_ref()
        .map_while(Result::ok)
        .find(|line| line.contains("kinfer cluster: serving"));
    assert!(announced.is_some(), "kinfer cluster exited without serving");
    let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
    let server = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server:"))
        .expect("server line")
        .trim()
        .trim_matches('"')
        .to_owned();
    assert!(server.starts_with("http://127.0.0.1:"), "{server}");

    // A plain HTTP client sees our CRDs installed through --crds.
    let port: u16 = server
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .expect("port");
    let body = http_get(port, "/apis/zerfoo.feza.ai/v1");
    assert!(body.contains("zerfooinferenceservices"), "{body}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = child.wait().expect("exit status");
    let rest: Vec<String> = stderr.map_while(Result::ok).collect();
    assert!(
        status.success(),
        "exit on SIGTERM: {status}; stderr: {rest:?}"
    );
    let _ = std::fs::remove_file(&kubeconfig);
}

#[test]
fn refuses_to_listen_beyond_loopback() {
    let output = Command::new(env!("CARGO_BIN_EXE_kinfer"))
        .args(["cluster", "--listen", "0.0.0.0:0", "--kubeconfig"])
        .arg(temp_path("never.kubeconfig"))
        .output()
        .expect("kinfer runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("loopback only"), "{stderr}");
}

/// One HTTP/1.1 GET over a raw socket: the test needs no HTTP client crate for this.
fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response");
    response
}
