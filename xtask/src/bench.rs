//! `cargo xtask bench [ARGS...]`: builds the benchmark harness (`crates/kinfer-bench`) and the
//! operator binaries it drives with `--release`, then runs `target/release/kinfer-bench ARGS`.
//! The harness lives in its own crate so xtask stays cheap to build; see its `--help` for the
//! flags (`--scenario`, `--n`, `--json`, ...).

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::ci::{cargo, step};

/// The operator package each scenario runs.
const OPERATORS: [(&str, &str); 3] = [
    ("zerfoo", "zerfoo-operator"),
    ("modelservice", "modelservice-operator"),
    ("aim", "aim-operator"),
];

/// The operator packages `args` need: the named scenario's, or all of them.
fn packages(args: &[String]) -> Vec<&'static str> {
    let scenario = args
        .iter()
        .position(|a| a == "--scenario")
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
        .or_else(|| args.iter().find_map(|a| a.strip_prefix("--scenario=")));
    let mut out = vec!["kinfer-bench"];
    out.extend(
        OPERATORS
            .iter()
            .filter(|(s, _)| scenario.is_none_or(|x| x == "all" || x == *s))
            .map(|(_, p)| *p),
    );
    out
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut build = Command::new(cargo());
    build.args(["build", "--release", "--locked"]);
    for p in packages(args) {
        build.args(["-p", p]);
    }
    step(
        "building the harness and operators (release)",
        build.current_dir(root),
    )?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from);
    step(
        "running the benchmarks",
        Command::new(target.join("release").join("kinfer-bench"))
            .args(args)
            .current_dir(root),
    )
}

#[cfg(test)]
mod tests {
    use super::packages;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn builds_only_the_operators_the_scenario_runs() {
        assert_eq!(
            packages(&args(&["--scenario", "zerfoo", "--n", "10"])),
            ["kinfer-bench", "zerfoo-operator"]
        );
        assert_eq!(packages(&args(&["--scenario=bogus"])), ["kinfer-bench"]);
        assert_eq!(
            packages(&args(&["--scenario=aim"])),
            ["kinfer-bench", "aim-operator"]
        );
        assert_eq!(
            packages(&args(&["--json"])).len(),
            1 + super::OPERATORS.len()
        );
    }
}
