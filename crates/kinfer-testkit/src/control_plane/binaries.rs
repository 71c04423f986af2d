//! Where the control plane's binaries come from: `KINFER_K8S_BIN_DIR` when set (a directory
//! holding `etcd`, `kube-apiserver`, `kube-controller-manager` and `kubectl`), else
//! `scripts/build-k8s.sh`, which builds them from the pins in `tools/k8s/go.mod` into a cache
//! outside the repository, or finds them there.
//!
//! May: run the build script and check files. May not: start the binaries.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::Error;

/// The four binaries, by file name.
pub const NAMES: [&str; 4] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kubectl",
];

/// The directory of the control plane's binaries, built on the first call of a process when
/// needed (a cold build takes minutes; every later call returns at once).
pub fn dir() -> Result<PathBuf, Error> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| locate().map_err(|e| e.to_string()))
        .clone()
        .map_err(Error::ControlPlane)
}

/// The path of one of [`NAMES`].
pub fn path(name: &str) -> Result<PathBuf, Error> {
    Ok(dir()?.join(name))
}

fn locate() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("KINFER_K8S_BIN_DIR") {
        let dir = PathBuf::from(dir);
        check(&dir, "KINFER_K8S_BIN_DIR")?;
        return Ok(dir);
    }
    let script = repository_root().join("scripts/build-k8s.sh");
    let output = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::ControlPlane(format!("running {}: {e}", script.display())))?;
    if !output.status.success() {
        return Err(Error::ControlPlane(format!(
            "{} failed ({}); its output above says why (the real control plane is built with \
             Go 1.26 from the Go module proxy: see docs/development.md)",
            script.display(),
            output.status
        )));
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    check(&dir, &script.display().to_string())?;
    Ok(dir)
}

fn check(dir: &Path, source: &str) -> Result<(), Error> {
    for name in NAMES {
        if !dir.join(name).is_file() {
            return Err(Error::ControlPlane(format!(
                "{source}: {} has no {name}",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// The workspace root ([`kinfer_crdcheck::workspace_root`]).
pub fn repository_root() -> PathBuf {
    kinfer_crdcheck::workspace_root()
}
