//! The phases of one scenario run, in order:
//!
//! 1. **Idle**: the cluster (simulated, in this process) serves the CRDs and namespaces; the
//!    operator binary starts and goes quiet; its resident memory is the idle figure. A
//!    scenario with a catalog (what the CRs depend on) creates it next: the time until it
//!    settled, the operator's writes until it is quiet and its memory then are reported
//!    apart, and the counters reset, so the per-CR figures hold the CRs' work only.
//! 2. **Create**: N CRs are created in-process as fast as the store takes them; convergence is
//!    every CR's `status.observedGeneration == metadata.generation`, in the state the scenario
//!    names ([`Scenario::converged`]), and every child present.
//!    The operator's reconcile histogram over this window gives the create-path quantiles; the
//!    counters until the operator is quiet give requests and writes per CR.
//! 3. **Resyncs**: three times, the watch history is expired and every watch cut, so every
//!    watcher re-lists (410 Gone) and every CR is reconciled again with nothing to change:
//!    writes here are steady-state writes, the histogram gives the no-op quantiles.
//! 4. **Restart**: the operator is stopped (SIGTERM) and started again; writes until it is
//!    quiet are restart writes.
//! 5. **Trickle**: CRs created one at a time at steady state give the event-to-reconcile
//!    quantile (the operator's queue-wait histogram).
//! 6. **Unrelated**: a forced re-list (the baseline), a second one with nothing added (the
//!    control: what a re-list alone moves resident memory by), then Pods, Secrets and
//!    ConfigMaps in the same namespaces and another forced re-list; the growth of resident
//!    memory over that last re-list is what unrelated objects cost, to be read against the
//!    control.
//!
//! "Quiet" means no request reached the cluster and no reconcile ran for a whole window
//! (bounded by the phase timeout: a figure taken after a timeout says so in `notes`).
//! Reconcile counts and latencies are the CR's own controller's ([`Scenario::controller`]);
//! quiet counts every controller.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kinfer_testkit::{Conflict, TestCluster};

use crate::conflicts::conflict_notes;
use crate::operator::{Launch, Operator};
use crate::prom::{DURATION, Histogram, QUEUE_WAIT, RECONCILES, Scrape};
use crate::report::Row;
use crate::scenario::{Catalog, Scenario, create, unrelated};

/// How a run is sized and where it finds things.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Custom resources to create.
    pub n: usize,
    /// Unrelated objects for the memory figure (0 skips the phase).
    pub unrelated: usize,
    /// CRs created one at a time for the event-to-reconcile figure (0 skips the phase).
    pub trickle: usize,
    /// Directory of the operator binaries.
    pub operator_dir: PathBuf,
    /// Where kubeconfigs and operator logs go.
    pub work_dir: PathBuf,
    /// Upper bound of each waiting phase.
    pub timeout: Duration,
    /// How long nothing may happen for the operator to count as quiet.
    pub quiet: Duration,
}

const POLL: Duration = Duration::from_millis(200);
/// Finer polling while one CR at a time is timed.
const TRICKLE_POLL: Duration = Duration::from_millis(5);
const RESYNCS: usize = 3;

/// The nearest-rank `q` quantile of ascending `sorted`.
fn nearest_rank(sorted: &[f64], q: f64) -> Option<f64> {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
    sorted.get(rank - 1).copied()
}

fn ms(seconds: Option<f64>) -> Option<f64> {
    seconds.map(|s| s * 1000.0)
}

#[allow(clippy::cast_precision_loss)] // counts far below 2^52
fn per(count: u64, n: usize) -> f64 {
    count as f64 / n.max(1) as f64
}

fn total_requests(cluster: &TestCluster) -> u64 {
    cluster.counters().snapshot().values().sum()
}

/// Everything a phase needs: the cluster, the operator, the running totals.
struct Bench<'a> {
    scenario: &'a Scenario,
    settings: &'a Settings,
    cluster: TestCluster,
    launch: Launch,
    created: usize,
    conflicts: u64,
    /// The 409 answers seen, with who sent them and the server's message.
    conflict_log: Vec<Conflict>,
    row: Row,
}

impl Bench<'_> {
    /// Waits until no request and no reconcile happened for the quiet window; false on timeout.
    async fn quiet(&mut self, op: &Operator, what: &str) -> Result<bool> {
        let deadline = Instant::now() + self.settings.timeout;
        let mut last = (
            total_requests(&self.cluster),
            op.scrape().await?.value(RECONCILES),
        );
        let mut since = Instant::now();
        while Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
            let now = (
                total_requests(&self.cluster),
                op.scrape().await?.value(RECONCILES),
            );
            if now == last {
                if since.elapsed() >= self.settings.quiet {
                    return Ok(true);
                }
            } else {
                last = now;
                since = Instant::now();
            }
        }
        self.row.notes.push(format!(
            "{what}: the operator never went quiet for {:?} within {:?}",
            self.settings.quiet, self.settings.timeout
        ));
        Ok(false)
    }

    /// Waits until every created CR has converged; the time it took, or `None` on timeout.
    async fn converge(&mut self, started: Instant, what: &str) -> Option<f64> {
        self.converge_polling(started, what, POLL).await
    }

    async fn converge_polling(
        &mut self,
        started: Instant,
        what: &str,
        poll: Duration,
    ) -> Option<f64> {
        let per_cr = self.scenario.children_per_cr.unwrap_or(0) as usize;
        let want = (self.created, self.created * per_cr);
        let deadline = started + self.settings.timeout;
        let mut last_report = Instant::now();
        loop {
            let now = self.scenario.progress(&self.cluster);
            if now.0 >= want.0 && now.1 >= want.1 {
                return Some(started.elapsed().as_secs_f64());
            }
            if Instant::now() > deadline {
                self.row.notes.push(format!(
                    "{what}: not converged within {:?} ({} of {} statuses, {} of {} children)",
                    self.settings.timeout, now.0, want.0, now.1, want.1
                ));
                return None;
            }
            if last_report.elapsed() > Duration::from_secs(10) {
                eprintln!(
                    "  {what}: {}/{} statuses, {}/{} children after {:.0} s",
                    now.0,
                    want.0,
                    now.1,
                    want.1,
                    started.elapsed().as_secs_f64()
                );
                last_report = Instant::now();
            }
            tokio::time::sleep(poll).await;
        }
    }

    fn create_cr(&mut self) -> Result<()> {
        let v = (self.scenario.make)(self.created);
        let ns = v["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.cluster
            .create_object(self.scenario.api_version, self.scenario.plural, &ns, v)
            .with_context(|| format!("creating {} number {}", self.scenario.kind, self.created))?;
        self.created += 1;
        Ok(())
    }

    /// Expires the watch history and cuts every watch; waits until every CR was reconciled
    /// again and the operator is quiet. False when that did not happen in time.
    async fn resync(&mut self, op: &Operator, what: &str) -> Result<bool> {
        let before = self.reconciles(op).await?;
        let faults = self.cluster.faults();
        let started = Instant::now();
        faults.expire_history();
        faults.cut_watches();
        let all = self.wait_reconciles(op, before, what).await?;
        let reconciled = started.elapsed();
        let quiet = self.quiet(op, what).await?;
        eprintln!(
            "  {what}: every CR reconciled: {all} after {:.1} s, quiet after {:.1} s",
            reconciled.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
        Ok(all && quiet)
    }

    /// Waits until the operator counts at least one reconcile per CR more than `before`;
    /// false on timeout.
    #[allow(clippy::cast_precision_loss)]
    async fn wait_reconciles(&mut self, op: &Operator, before: f64, what: &str) -> Result<bool> {
        let deadline = Instant::now() + self.settings.timeout;
        let want = before + self.created as f64;
        while self.reconciles(op).await? < want {
            if Instant::now() > deadline {
                self.row.notes.push(format!(
                    "{what}: fewer than one reconcile per CR within {:?}",
                    self.settings.timeout
                ));
                return Ok(false);
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(true)
    }

    /// Reconciles of the CR's controller so far.
    async fn reconciles(&self, op: &Operator) -> Result<f64> {
        Ok(op
            .scrape()
            .await?
            .value_of(RECONCILES, self.scenario.controller))
    }

    /// The CR controller's histogram `name` between two scrapes.
    fn histogram(&self, name: &str, before: &Scrape, after: &Scrape) -> Histogram {
        let c = self.scenario.controller;
        after
            .histogram_of(name, c)
            .since(&before.histogram_of(name, c))
    }

    /// Creates the catalog and waits until it settled and the operator is quiet.
    async fn catalog(&mut self, op: &Operator, catalog: &Catalog) -> Result<()> {
        let started = Instant::now();
        for object in (catalog.objects)() {
            create(&self.cluster, object)?;
        }
        let deadline = started + self.settings.timeout;
        let mut last_report = Instant::now();
        loop {
            let (settled, expected) = (catalog.progress)(&self.cluster);
            if settled >= expected {
                self.row.catalog_s = Some(started.elapsed().as_secs_f64());
                break;
            }
            if Instant::now() > deadline {
                self.row.notes.push(format!(
                    "catalog: {settled} of {expected} settled within {:?}",
                    self.settings.timeout
                ));
                break;
            }
            if last_report.elapsed() > Duration::from_secs(10) {
                eprintln!(
                    "  catalog: {settled}/{expected} settled after {:.0} s",
                    started.elapsed().as_secs_f64()
                );
                last_report = Instant::now();
            }
            tokio::time::sleep(POLL).await;
        }
        self.quiet(op, "catalog").await?;
        self.row.catalog_writes = Some(self.cluster.counters().writes());
        for ((verb, resource, _), count) in self.cluster.counters().snapshot() {
            *self
                .row
                .catalog_requests
                .entry(format!("{verb} {resource}"))
                .or_default() += count;
        }
        self.row.notes.push(format!(
            "catalog (created before the CRs, counted apart): {}",
            catalog.describe
        ));
        Ok(())
    }

    fn reset_counters(&mut self) {
        self.conflicts += self.cluster.counters().answered(409);
        self.conflict_log
            .extend(self.cluster.counters().conflicts());
        self.cluster.counters().reset();
    }
}

/// Runs `scenario` once; see the module contract.
pub async fn run(scenario: &Scenario, settings: &Settings) -> Result<Row> {
    let binary = settings.operator_dir.join(scenario.binary);
    if !binary.is_file() {
        bail!(
            "{} not found: build it with `cargo build --release -p {}` (cargo xtask bench does)",
            binary.display(),
            scenario.binary
        );
    }
    std::fs::create_dir_all(&settings.work_dir)?;
    let cluster = TestCluster::start_simulated().await?;
    scenario.prepare(&cluster)?;
    let stem = format!("{}-{}", scenario.name, settings.n);
    let kubeconfig = settings.work_dir.join(format!("{stem}.kubeconfig"));
    // The operator impersonates its binary's name, so per-client counts and the conflict log
    // name it (kube-rs sends no User-Agent).
    std::fs::write(&kubeconfig, cluster.kubeconfig_yaml_as(scenario.binary))?;
    let log = settings.work_dir.join(format!("{stem}.log"));
    let _ = std::fs::remove_file(&log);
    let launch = Launch {
        binary,
        args: scenario.args.clone(),
        kubeconfig,
        log,
    };
    let mut b = Bench {
        scenario,
        settings,
        cluster,
        launch,
        created: 0,
        conflicts: 0,
        conflict_log: Vec::new(),
        row: Row {
            scenario: scenario.name.to_owned(),
            n: settings.n,
            min_writes_per_cr: scenario.children_per_cr.map(|c| c + 1),
            ..Row::default()
        },
    };
    let result = phases(&mut b).await;
    b.reset_counters();
    b.row.conflicts = Some(b.conflicts);
    b.row
        .notes
        .extend(conflict_notes(&b.conflict_log, b.conflicts));
    result?;
    Ok(b.row)
}

async fn phases(b: &mut Bench<'_>) -> Result<()> {
    let startup = Duration::from_mins(1);
    let t = Instant::now();
    // 1. Idle.
    eprintln!(
        "{} n={}: starting {}",
        b.scenario.name,
        b.settings.n,
        b.launch.binary.display()
    );
    let op = Operator::start(&b.launch, startup).await?;
    b.quiet(&op, "idle").await?;
    let idle = op.rss();
    b.row.rss_idle_mib = Some(idle.current_mib());

    // 1. Catalog, if any.
    let mut base = idle;
    if let Some(catalog) = &b.scenario.catalog {
        b.reset_counters();
        b.catalog(&op, catalog).await?;
        base = op.rss();
        b.row.rss_catalog_mib = Some(base.current_mib());
        eprintln!(
            "  [{:.0} s] catalog settled in {:?} s, {:?} writes",
            t.elapsed().as_secs_f64(),
            b.row.catalog_s,
            b.row.catalog_writes
        );
    }

    // 2. Create.
    b.reset_counters();
    let before = op.scrape().await?;
    let started = Instant::now();
    for i in 0..b.settings.n {
        b.create_cr()?;
        if i % 64 == 63 {
            // Let the server's tasks run between batches (this runtime serves the operator).
            tokio::task::yield_now().await;
        }
    }
    eprintln!(
        "  created {} CRs in {:.1} s",
        b.settings.n,
        started.elapsed().as_secs_f64()
    );
    b.row.convergence_s = b.converge(started, "create").await;
    let converged = op.scrape().await?;
    let create = b.histogram(DURATION, &before, &converged);
    b.row.create_p50_ms = ms(create.quantile(0.5));
    b.row.create_p99_ms = ms(create.quantile(0.99));
    b.quiet(&op, "after create").await?;
    let writes = b.cluster.counters().writes();
    b.row.writes_per_cr = Some(per(writes, b.settings.n));
    for ((verb, resource, _), count) in b.cluster.counters().snapshot() {
        *b.row
            .requests_per_cr_by_resource
            .entry(format!("{verb} {resource}"))
            .or_default() += per(count, b.settings.n);
        *b.row.requests_per_cr.entry(verb).or_default() += per(count, b.settings.n);
    }
    if b.scenario.children_per_cr.is_none() {
        let (_, children) = b.scenario.progress(&b.cluster);
        let per_cr = children / b.settings.n.max(1);
        b.row.min_writes_per_cr = u32::try_from(per_cr + 1).ok();
        b.row.notes.push(format!(
            "children per CR counted once quiet ({children} for {} CRs): convergence waited for statuses only",
            b.settings.n
        ));
    }
    let steady = op.rss();
    b.row.rss_per_1k_mib =
        Some((steady.current_mib() - base.current_mib()) * per(1000, b.settings.n));
    eprintln!(
        "  [{:.0} s] converged in {:?} s, {writes} writes",
        t.elapsed().as_secs_f64(),
        b.row.convergence_s
    );

    // 3. Resyncs.
    b.reset_counters();
    let before = op.scrape().await?;
    let mut complete = true;
    for i in 0..RESYNCS {
        complete &= b.resync(&op, &format!("resync {}", i + 1)).await?;
    }
    let after = op.scrape().await?;
    if complete {
        let noop = b.histogram(DURATION, &before, &after);
        b.row.noop_p50_ms = ms(noop.quantile(0.5));
        b.row.noop_p99_ms = ms(noop.quantile(0.99));
        b.row.steady_state_writes = Some(b.cluster.counters().writes());
    } else {
        b.row.notes.push(format!(
            "steady_state_writes, noop_*: a resync did not complete, so these would not cover every CR ({} writes seen)",
            b.cluster.counters().writes()
        ));
    }
    // Every controller's: the LISTs are every controller's too.
    let reconciles = after.value(RECONCILES) - before.value(RECONCILES);
    if reconciles > 0.0 {
        #[allow(clippy::cast_precision_loss)]
        let lists = b.cluster.counters().count("list", None) as f64;
        b.row.resync_lists_per_reconcile = Some(lists / reconciles);
    }
    b.row.rss_peak_mib = Some(op.rss().peak_mib());
    eprintln!(
        "  [{:.0} s] resyncs: {:?} writes",
        t.elapsed().as_secs_f64(),
        b.row.steady_state_writes
    );

    // 4. Restart.
    if !op.stop(Duration::from_secs(30)).await? {
        b.row
            .notes
            .push("the operator did not stop within 30 s of SIGTERM".to_owned());
    }
    b.reset_counters();
    let op = Operator::start(&b.launch, startup).await?;
    if b.wait_reconciles(&op, 0.0, "restart").await? && b.quiet(&op, "restart").await? {
        b.row.restart_writes = Some(b.cluster.counters().writes());
    }
    eprintln!(
        "  [{:.0} s] restart: {:?} writes",
        t.elapsed().as_secs_f64(),
        b.row.restart_writes
    );

    // 5. Trickle.
    if b.settings.trickle > 0 {
        let before = op.scrape().await?;
        let mut end_to_end = Vec::new();
        for _ in 0..b.settings.trickle {
            let started = Instant::now();
            b.create_cr()?;
            if let Some(s) = b.converge_polling(started, "trickle", TRICKLE_POLL).await {
                end_to_end.push(s * 1000.0);
            }
        }
        let after = op.scrape().await?;
        let wait = b.histogram(QUEUE_WAIT, &before, &after);
        b.row.event_to_reconcile_p99_ms = ms(wait.quantile(0.99));
        if b.row.event_to_reconcile_p99_ms.is_none() {
            b.row.notes.push(format!(
                "event_to_reconcile_p99_ms: the operator recorded no queue wait ({QUEUE_WAIT} is empty: its controllers do not record triggers)"
            ));
        }
        end_to_end.sort_by(f64::total_cmp);
        b.row.trickle_converge_p99_ms = nearest_rank(&end_to_end, 0.99);
        b.quiet(&op, "trickle").await?;
    } else {
        b.row
            .notes
            .push("event_to_reconcile_p99_ms: trickle phase skipped".to_owned());
    }

    // 6. Unrelated objects.
    if b.settings.unrelated > 0 {
        // The baseline is taken after a re-list too, so the figure is what the unrelated
        // objects add, not what any re-list leaves behind in the allocator. A second re-list
        // with nothing added is the control: how far a re-list alone moves resident memory
        // (allocator retention and fragmentation), the noise floor of the figure.
        let baseline = b.resync(&op, "baseline re-list").await?;
        let first = op.rss();
        let control = b.resync(&op, "control re-list").await? && baseline;
        let before = op.rss();
        if control {
            b.row.unrelated_control_rss_mib = Some(before.current_mib() - first.current_mib());
        }
        for i in 0..b.settings.unrelated {
            let (plural, v) = unrelated(i);
            let ns = v["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            b.cluster.create_object("v1", plural, &ns, v)?;
            if i % 64 == 63 {
                tokio::task::yield_now().await;
            }
        }
        b.quiet(&op, "unrelated objects").await?;
        if b.resync(&op, "unrelated re-list").await? && control {
            b.row.unrelated_rss_growth_mib = Some(op.rss().current_mib() - before.current_mib());
        }
        eprintln!(
            "  [{:.0} s] unrelated objects done",
            t.elapsed().as_secs_f64()
        );
    } else {
        b.row
            .notes
            .push("unrelated_rss_growth_mib: unrelated phase skipped".to_owned());
    }
    op.stop(Duration::from_secs(30)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::nearest_rank;

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.99), Some(99.0));
        assert_eq!(nearest_rank(&v, 0.5), Some(50.0));
        assert_eq!(nearest_rank(&[7.0], 0.99), Some(7.0));
        assert_eq!(nearest_rank(&[], 0.99), None);
    }
}
