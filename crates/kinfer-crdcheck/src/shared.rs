//! Locating `../shared/` and reading YAML from it.

use std::path::{Path, PathBuf};

/// The environment variable that overrides where the shared reference data is.
pub const SHARED_DIR_ENV: &str = "KINFER_SHARED_DIR";

/// The workspace's root: the first directory holding a `Cargo.lock` at or above the package
/// cargo runs (`CARGO_MANIFEST_DIR` in the environment of `cargo test` and `cargo run`), else
/// at or above the current directory; that start directory when none does.
///
/// Found at run time, not `env!("CARGO_MANIFEST_DIR")`: a path fixed at compile time would
/// make every binary linking this crate differ between two checkouts of one commit.
pub fn workspace_root() -> PathBuf {
    let start = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_default();
    start
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .map_or_else(|| start.clone(), Path::to_path_buf)
}

/// The shared reference directory (`$KINFER_SHARED_DIR`, else `<workspace>/../shared`).
///
/// Returns `None` when it does not exist and the caller should skip, after printing why.
///
/// # Panics
/// Under CI (`CI` set to anything but `false`/`0`/empty) a missing directory is a failure:
/// CI always has `shared/` beside the clone, so its absence means a broken checkout.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os(SHARED_DIR_ENV)
        .map_or_else(|| workspace_root().join("../shared"), PathBuf::from);
    if dir.join("reference").is_dir() {
        return Some(dir);
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(
        !in_ci,
        "shared reference data not found at {} (set {SHARED_DIR_ENV}); CI requires it",
        dir.display()
    );
    eprintln!(
        "skipped: shared reference data not found at {} (set {SHARED_DIR_ENV} to run this test)",
        dir.display()
    );
    None
}

/// Reads every non-empty YAML document of a file as JSON values.
///
/// # Panics
/// When the file cannot be read or parsed: test data is expected to be well-formed.
pub fn load_yaml_documents(path: &Path) -> Vec<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}
