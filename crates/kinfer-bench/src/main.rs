//! `kinfer-bench`: runs the benchmark scenarios and prints one table row (or JSON object) per
//! scenario and size. `cargo xtask bench` builds it and the operators with `--release` and
//! runs it from `target/release`, where it finds the operator binaries.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use kinfer_bench::operator::sibling_dir;
use kinfer_bench::report::{Row, table};
use kinfer_bench::run::{Settings, run};
use kinfer_bench::scenario::Scenario;

/// Scenarios in `--scenario all` order.
const ALL: [&str; 3] = ["zerfoo", "modelservice", "aim"];

#[derive(Debug, Parser)]
#[command(
    name = "kinfer-bench",
    about = "Operator benchmarks on the kinfer test cluster"
)]
struct Args {
    /// zerfoo, modelservice, aim, or all.
    #[arg(long, default_value = "all")]
    scenario: String,
    /// Custom resources per run (repeatable: one run per value).
    #[arg(long = "n", default_values_t = [1000])]
    n: Vec<usize>,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Unrelated Pods, Secrets and ConfigMaps for the memory figure (0 skips).
    #[arg(long, default_value_t = 10_000)]
    unrelated: usize,
    /// CRs created one at a time for the event-to-reconcile figure (0 skips).
    #[arg(long, default_value_t = 20)]
    trickle: usize,
    /// The operators' `--concurrency`.
    #[arg(long, default_value_t = 4)]
    concurrency: u16,
    /// Directory of the operator binaries (default: next to this binary).
    #[arg(long)]
    operator_dir: Option<PathBuf>,
    /// Where kubeconfigs and operator logs go.
    #[arg(long, default_value = "target/kinfer-bench")]
    work_dir: PathBuf,
    /// Upper bound of each waiting phase, seconds.
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
    /// Seconds without requests or reconciles for the operator to count as quiet.
    #[arg(long, default_value_t = 2.0)]
    quiet_s: f64,
}

/// `key value, key value` with two decimals.
fn joined(counts: &std::collections::BTreeMap<String, f64>) -> String {
    counts
        .iter()
        .map(|(k, n)| format!("{k} {n:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() -> Result<()> {
    let args = Args::parse();
    let names: Vec<&str> = if args.scenario == "all" {
        ALL.to_vec()
    } else {
        vec![args.scenario.as_str()]
    };
    let operator_dir = match args.operator_dir.clone() {
        Some(d) => d,
        None => sibling_dir()?,
    };
    // Two workers, like the operators' own runtime on this 2-core machine: the test cluster
    // and the harness share them.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut rows: Vec<Row> = Vec::new();
    for name in names {
        for &n in &args.n {
            let scenario = Scenario::named(name, args.concurrency)?;
            let settings = Settings {
                n,
                unrelated: args.unrelated,
                trickle: args.trickle,
                operator_dir: operator_dir.clone(),
                work_dir: args.work_dir.clone(),
                timeout: Duration::from_secs(args.timeout_s),
                quiet: Duration::from_secs_f64(args.quiet_s.max(0.2)),
            };
            let row = runtime.block_on(run(&scenario, &settings))?;
            if args.json {
                println!("{}", serde_json::to_string(&row)?);
            }
            rows.push(row);
        }
    }
    if !args.json {
        print!("{}", table(&rows));
        for r in &rows {
            for note in &r.notes {
                println!("- {} n={}: {note}", r.scenario, r.n);
            }
            println!(
                "- {} n={}: requests per CR: {}",
                r.scenario,
                r.n,
                joined(&r.requests_per_cr)
            );
            println!(
                "- {} n={}: by resource: {}",
                r.scenario,
                r.n,
                joined(&r.requests_per_cr_by_resource)
            );
            if let (Some(s), Some(w)) = (r.catalog_s, r.catalog_writes) {
                let by: Vec<String> = r
                    .catalog_requests
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect();
                println!(
                    "- {} n={}: catalog settled in {s:.1} s, {w} writes; requests: {}",
                    r.scenario,
                    r.n,
                    by.join(", ")
                );
            }
            if let Some(p) = r.trickle_converge_p99_ms {
                println!(
                    "- {} n={}: one CR at steady state, create to converged p99: {p:.0} ms",
                    r.scenario, r.n
                );
            }
            if let (Some(g), Some(c)) = (r.unrelated_rss_growth_mib, r.unrelated_control_rss_mib) {
                println!(
                    "- {} n={}: RSS over the unrelated re-list {g:+.1} MiB, over a control re-list without them {c:+.1} MiB",
                    r.scenario, r.n
                );
            }
            if let Some(l) = r.resync_lists_per_reconcile {
                println!(
                    "- {} n={}: LISTs per reconcile in a resync: {l:.2}",
                    r.scenario, r.n
                );
            }
        }
    }
    Ok(())
}
