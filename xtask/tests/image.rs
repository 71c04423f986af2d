//! `cargo xtask image` (docs/images.md): the images build, push to a real registry (Debian's
//! docker-registry), pull back by digest unchanged, hold what they promise, run (`--version`;
//! name resolution inside the image, chrooted as a container runtime would run it; the
//! operator against the real control plane over TLS), and come out byte-identical when built
//! from two directories.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde_json::Value;

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// The tests build into one target directory: one at a time, or each build of one checkout
/// would undo the other's.
static BUILDS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A scratch directory, removed with everything in it when dropped (also when a test fails):
/// root file systems and layouts are hundreds of megabytes a run.
struct Temp(PathBuf);

impl std::ops::Deref for Temp {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Temp {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp(name: &str) -> Temp {
    let dir = std::env::temp_dir().join(format!("kinfer-image-{}-{name}", std::process::id()));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    Temp(dir)
}

/// Runs `xtask image ARGS` (into this workspace's target directory, whichever checkout it
/// builds); its stdout lines.
fn xtask_image(args: &[&str]) -> Vec<String> {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from);
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("image")
        .args(args)
        .env("CARGO_TARGET_DIR", target)
        .current_dir(root())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "xtask image {args:?}: {}", out.status);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// `<binary> <digest> <dir>` lines, by binary.
fn built(lines: &[String]) -> BTreeMap<String, (String, PathBuf)> {
    lines
        .iter()
        .filter(|l| !l.starts_with("pushed "))
        .map(|l| {
            let mut w = l.split_whitespace();
            let bin = w.next().unwrap().to_owned();
            let digest = w.next().unwrap().to_owned();
            (bin, (digest, PathBuf::from(w.next().unwrap())))
        })
        .collect()
}

fn blob(layout: &Path, digest: &str) -> Vec<u8> {
    std::fs::read(
        layout
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:")),
    )
    .unwrap()
}

/// Unpacks a gzip layer into `dir`, preserving modes.
fn unpack(layer: &[u8], dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(layer));
    archive.set_preserve_permissions(true);
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        names.push(entry.path().unwrap().display().to_string());
        entry.unpack_in(dir).unwrap();
    }
    names
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[tokio::test]
async fn images_build_push_pull_and_run() {
    let registry = kinfer_oci::test_support::registry::Registry::start().await;
    let out = temp("layouts");
    let lines = {
        let _build = BUILDS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        xtask_image(&[
            "--tag",
            "it",
            "--out",
            out.to_str().unwrap(),
            "--push",
            "--insecure",
            "--registry",
            &registry.host,
        ])
    };
    let images = built(&lines);
    assert_eq!(
        images.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "aim-operator",
            "kinfer",
            "modelservice-operator",
            "zerfoo-operator"
        ]
    );
    for (bin, (digest, _)) in &images {
        let line = format!("pushed {}/{bin}:it@{digest}", registry.host);
        assert!(lines.contains(&line), "{line} in {lines:?}");
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    });
    let mut binaries = BTreeMap::new();
    // The unpacked root file systems live until the end: their binaries run below.
    let mut unpacked = Vec::new();
    for (bin, (digest, layout)) in &images {
        // The layout: oci-layout, index.json naming the manifest with its tag.
        let index: Value =
            serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
        assert_eq!(index["manifests"][0]["digest"], digest.as_str());
        assert_eq!(
            index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"],
            "it"
        );
        assert!(layout.join("oci-layout").is_file());

        // Pulled by digest, the manifest and every blob are the layout's bytes.
        let by_digest: Reference = format!("{}/{bin}@{digest}", registry.host).parse().unwrap();
        let (manifest, got) = client
            .pull_manifest_raw(&by_digest, &RegistryAuth::Anonymous, &[MANIFEST])
            .await
            .unwrap();
        assert_eq!(&got, digest);
        assert_eq!(manifest.as_ref(), blob(layout, digest).as_slice());
        let manifest: Value = serde_json::from_slice(&manifest).unwrap();
        let mut descriptors = vec![manifest["config"].clone()];
        descriptors.extend(manifest["layers"].as_array().unwrap().iter().cloned());
        for d in &descriptors {
            let d: oci_client::manifest::OciDescriptor = serde_json::from_value(d.clone()).unwrap();
            let mut pulled = Vec::new();
            client.pull_blob(&by_digest, &d, &mut pulled).await.unwrap();
            assert_eq!(pulled, blob(layout, &d.digest), "{bin}: {}", d.digest);
        }

        // The config.
        let config: Value = serde_json::from_slice(&blob(
            layout,
            manifest["config"]["digest"].as_str().unwrap(),
        ))
        .unwrap();
        assert_eq!(config["config"]["User"], "65532:65532");
        assert_eq!(
            config["config"]["Entrypoint"][0],
            format!("/usr/local/bin/{bin}")
        );
        let labels = &config["config"]["Labels"];
        for key in ["source", "version", "revision", "licenses", "title"] {
            assert!(
                labels[format!("org.opencontainers.image.{key}")].is_string(),
                "{bin}: label {key}"
            );
        }
        assert_eq!(labels["org.opencontainers.image.title"], bin.as_str());
        assert_eq!(labels["org.opencontainers.image.version"], "it");

        // The layers: the base, then the binary; no shell.
        let rootfs = temp(&format!("rootfs-{bin}"));
        let mut files = Vec::new();
        for layer in manifest["layers"].as_array().unwrap() {
            files.extend(unpack(
                &blob(layout, layer["digest"].as_str().unwrap()),
                &rootfs,
            ));
        }
        for expected in [
            "etc/passwd",
            "etc/group",
            "etc/ssl/certs/ca-certificates.crt",
            &format!("usr/local/bin/{bin}"),
        ] {
            assert!(
                files.iter().any(|f| f == expected),
                "{bin}: no {expected}: {files:?}"
            );
        }
        assert!(
            !rootfs.join("bin/sh").exists(),
            "{bin}: the image has a shell"
        );
        let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).unwrap();
        assert!(passwd.contains(":65532:65532:"), "{passwd}");

        // The binary is static and runs.
        let binary = rootfs.join("usr/local/bin").join(bin);
        let version = run(Command::new(&binary).arg("--version"));
        assert!(
            String::from_utf8_lossy(&version.stdout).contains(env!("CARGO_PKG_VERSION")),
            "{bin} --version: {version:?}"
        );
        binaries.insert(bin.clone(), binary);
        unpacked.push(rootfs);
    }

    // Name resolution inside the image: kinfer, chrooted into its unpacked layers as user
    // 65532 with the hosts and resolver files a container runtime provides, reaches the
    // registry by the name `localhost` and inspects an image there.
    let rootfs = temp("chroot-kinfer");
    let (digest, layout) = &images["kinfer"];
    let manifest: Value = serde_json::from_slice(&blob(layout, digest)).unwrap();
    for layer in manifest["layers"].as_array().unwrap() {
        unpack(&blob(layout, layer["digest"].as_str().unwrap()), &rootfs);
    }
    std::fs::write(rootfs.join("etc/hosts"), "127.0.0.1 localhost\n").unwrap();
    std::fs::write(rootfs.join("etc/resolv.conf"), "nameserver 127.0.0.53\n").unwrap();
    let port = registry.host.rsplit(':').next().unwrap();
    let local = format!("localhost:{port}");
    let inspect = run(Command::new("chroot")
        .arg("--userspec=65532:65532")
        .arg(&rootfs)
        .args([
            "/usr/local/bin/kinfer",
            "inspect",
            "image",
            &format!("{local}/zerfoo-operator:it"),
            "--insecure-registry",
            &local,
        ]));
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        text.contains(images["zerfoo-operator"].0.as_str()),
        "{text}"
    );

    // The operator's binary from the image starts against the real control plane and talks
    // to it over TLS (it lists its kind: the audit log shows it).
    let plane = kinfer_testkit::ControlPlane::shared_async().await.unwrap();
    run(plane.kubectl().unwrap().args([
        "apply",
        "--server-side",
        "-k",
        root().join("deploy/crds/zerfoo.feza.ai").to_str().unwrap(),
    ]));
    run(plane.kubectl().unwrap().args([
        "wait",
        "--for=condition=Established",
        "crd/zerfooinferenceservices.zerfoo.feza.ai",
    ]));
    let mut operator = Command::new(&binaries["zerfoo-operator"])
        .args([
            "run",
            "--metrics-addr",
            "127.0.0.1:0",
            "--health-addr",
            "127.0.0.1:0",
        ])
        .env("KUBECONFIG", plane.kubeconfig())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let audit = plane.audit().clone();
    let watched = kinfer_testkit::wait::until(
        "the operator lists ZerfooInferenceServices",
        Duration::from_mins(1),
        || {
            let n = audit
                .requests()
                .map_err(|e| e.to_string())?
                .iter()
                .filter(|r| {
                    // The operator lists its kind with the admin's certificate (the controller
                    // manager's own lists of a new kind run as other users).
                    r.user == "kinfer-admin"
                        && r.verb == "list"
                        && r.resource == "zerfooinferenceservices"
                        && r.code == 200
                })
                .count();
            if n > 0 {
                Ok(())
            } else {
                Err("no request yet".to_owned())
            }
        },
    );
    watched.await;
    assert!(
        operator.try_wait().unwrap().is_none(),
        "the operator is running"
    );
    operator.kill().unwrap();
    let mut stderr = String::new();
    operator
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    operator.wait().unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// The four images, built from two clones of the commit, have the same digests (all four
/// binaries are built, so the dependencies are the main build's: building one alone unifies
/// other features and rebuilds them).
#[test]
fn the_same_commit_gives_the_same_digests_from_two_directories() {
    let _build = BUILDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut digests = Vec::new();
    for name in ["checkout-a", "checkout-b"] {
        let dir = temp(name);
        run(Command::new("git")
            .args(["clone", "-q", "--no-hardlinks"])
            .arg(root())
            .arg(&dir));
        let lines = xtask_image(&[
            "--workspace",
            dir.to_str().unwrap(),
            "--tag",
            "repro",
            "--out",
            dir.join("images").to_str().unwrap(),
        ]);
        digests.push(
            built(&lines)
                .into_iter()
                .map(|(bin, (digest, _))| (bin, digest))
                .collect::<Vec<_>>(),
        );
        drop(dir);
    }
    assert_eq!(digests[0].len(), 4, "{digests:?}");
    assert_eq!(digests[0], digests[1]);
}
