//! One row per scenario: a JSON object of the scenario's figures ([`Row`]; a figure that
//! could not be measured is `null`, with the reason in `notes`) and the same figures as a
//! table row (`-` for `null`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

/// The figures of one scenario run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    /// Scenario name.
    pub scenario: String,
    /// Custom resources created.
    pub n: usize,
    /// From creating the scenario's catalog (what the CRs depend on, e.g. AIM models and
    /// templates) until every catalog object settled, seconds; `null` without a catalog.
    pub catalog_s: Option<f64>,
    /// The operator's writes from creating the catalog until it went quiet: counted apart, not
    /// in `writes_per_cr`.
    pub catalog_writes: Option<u64>,
    /// Requests by `"<verb> <resource>"` over the same window.
    pub catalog_requests: BTreeMap<String, u64>,
    /// From the first create until every CR's status observed its generation and every child
    /// exists, seconds.
    pub convergence_s: Option<f64>,
    /// Successful writes (create, update, patch, delete) per CR, from the first create until
    /// the operator went quiet.
    pub writes_per_cr: Option<f64>,
    /// Children per CR plus one status write.
    pub min_writes_per_cr: Option<u32>,
    /// Requests per CR by verb over the same window (any answer).
    pub requests_per_cr: BTreeMap<String, f64>,
    /// The same by `"<verb> <resource>"`.
    pub requests_per_cr_by_resource: BTreeMap<String, f64>,
    /// Writes during three forced resyncs (watch history expired, watches cut: every watcher
    /// re-lists and every CR is reconciled again).
    pub steady_state_writes: Option<u64>,
    /// LIST requests during those resyncs, per reconcile run.
    pub resync_lists_per_reconcile: Option<f64>,
    /// Writes by a restarted operator until it went quiet.
    pub restart_writes: Option<u64>,
    /// 409 answers over the whole run.
    pub conflicts: Option<u64>,
    /// Reconcile duration p50 during the resyncs (every reconcile a no-op), ms.
    pub noop_p50_ms: Option<f64>,
    /// Reconcile duration p99 during the resyncs, ms.
    pub noop_p99_ms: Option<f64>,
    /// Reconcile duration p50 from the first create to convergence, ms.
    pub create_p50_ms: Option<f64>,
    /// Reconcile duration p99 from the first create to convergence, ms.
    pub create_p99_ms: Option<f64>,
    /// Watch event to reconcile start p99 while CRs are created one at a time at steady
    /// state, ms.
    pub event_to_reconcile_p99_ms: Option<f64>,
    /// From creating one CR at steady state until its status observed it and its children
    /// exist, p99 over the trickle phase (nearest rank; polled every 5 ms), ms.
    pub trickle_converge_p99_ms: Option<f64>,
    /// Resident memory once ready, before any CR, MiB.
    pub rss_idle_mib: Option<f64>,
    /// Resident memory once the catalog settled, before any CR, MiB (`rss_per_1k_mib` is
    /// measured from it).
    pub rss_catalog_mib: Option<f64>,
    /// Peak resident memory (`VmHWM`) until the restart, MiB.
    pub rss_peak_mib: Option<f64>,
    /// (resident memory at steady state − idle, or − catalog with a catalog) per 1,000 CRs,
    /// MiB.
    pub rss_per_1k_mib: Option<f64>,
    /// Resident memory growth after the unrelated objects were created and re-listed, MiB.
    pub unrelated_rss_growth_mib: Option<f64>,
    /// Resident memory growth over a re-list with nothing added, just before: the noise floor
    /// of `unrelated_rss_growth_mib` (allocator retention, not cached objects), MiB.
    pub unrelated_control_rss_mib: Option<f64>,
    /// Why figures are missing, and anything else a reader needs.
    pub notes: Vec<String>,
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |x| format!("{x:.digits$}"))
}

fn int(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |x| x.to_string())
}

/// The table header.
pub const HEADER: [&str; 14] = [
    "scenario",
    "n",
    "converge s",
    "writes/CR (min)",
    "steady writes",
    "restart writes",
    "409s",
    "no-op p99 ms",
    "create p99 ms",
    "event p99 ms",
    "RSS idle MiB",
    "RSS peak MiB",
    "MiB/1k CRs",
    "unrelated +MiB",
];

impl Row {
    /// The row's cells, in [`HEADER`] order.
    pub fn cells(&self) -> Vec<String> {
        vec![
            self.scenario.clone(),
            self.n.to_string(),
            cell(self.convergence_s, 1),
            format!(
                "{} ({})",
                cell(self.writes_per_cr, 2),
                self.min_writes_per_cr
                    .map_or_else(|| "-".to_owned(), |m| m.to_string())
            ),
            int(self.steady_state_writes),
            int(self.restart_writes),
            int(self.conflicts),
            cell(self.noop_p99_ms, 1),
            cell(self.create_p99_ms, 1),
            cell(self.event_to_reconcile_p99_ms, 1),
            cell(self.rss_idle_mib, 1),
            cell(self.rss_peak_mib, 1),
            cell(self.rss_per_1k_mib, 1),
            cell(self.unrelated_rss_growth_mib, 1),
        ]
    }
}

/// A Markdown table of `rows` (readable in a terminal, pasteable into the README).
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", HEADER.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(HEADER.len()));
    for r in rows {
        let _ = writeln!(out, "| {} |", r.cells().join(" | "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmeasured_figures_are_null_in_json_and_dashes_in_the_table() {
        let row = Row {
            scenario: "zerfoo".into(),
            n: 10,
            convergence_s: Some(1.5),
            min_writes_per_cr: Some(4),
            ..Row::default()
        };
        let json = serde_json::to_value(&row).unwrap_or_default();
        for key in [
            "scenario",
            "n",
            "convergence_s",
            "writes_per_cr",
            "min_writes_per_cr",
            "steady_state_writes",
            "restart_writes",
            "conflicts",
            "noop_p99_ms",
            "create_p99_ms",
            "event_to_reconcile_p99_ms",
            "rss_idle_mib",
            "rss_peak_mib",
            "rss_per_1k_mib",
            "unrelated_rss_growth_mib",
        ] {
            assert!(json.get(key).is_some(), "{key} missing from {json}");
        }
        assert!(json["writes_per_cr"].is_null());
        assert_eq!(json["n"], 10);
        let t = table(&[row]);
        assert!(t.contains("| zerfoo | 10 | 1.5 | - (4) | - |"), "{t}");
        assert_eq!(t.lines().count(), 3);
    }
}
