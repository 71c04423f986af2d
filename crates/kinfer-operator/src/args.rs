//! The flags every kinfer operator binary takes (`../shared/ARCHITECTURE.md`, "Operators
//! (binaries)"), as a `clap::Args` struct each binary flattens into its own `run` arguments:
//!
//! ```
//! use clap::Parser;
//! #[derive(Debug, Parser)]
//! struct RunArgs {
//!     #[command(flatten)]
//!     common: kinfer_operator::CommonArgs,
//!     /// An operator-specific flag.
//!     #[arg(long, default_value = "x")]
//!     image: String,
//! }
//! let args = RunArgs::parse_from(["run", "--watch-namespace", "a", "--watch-namespace", "b"]);
//! assert_eq!(args.common.watch_namespaces, ["a", "b"]);
//! ```
//!
//! Contract: parsing only, no I/O. The Lease's namespace and identity come from
//! `--leader-election-namespace` / `--leader-election-identity`, which default to the
//! `POD_NAMESPACE` / `POD_NAME` environment variables (the downward API); with
//! `--leader-elect` both must be known ([`CommonArgs::lease_settings`] says which is missing).
//! The Lease timings `--lease-duration`, `--renew-deadline` and `--retry-period` are Go
//! durations (`15s`, `1m30s`) with client-go's defaults (15 s, 10 s, 2 s) and must be ordered
//! retry period < renew deadline < lease duration (a leader must give up before a candidate
//! may take over, and retry at least once before it gives up). The lease duration is whole
//! seconds (the Lease's `leaseDurationSeconds` is an integer, and the order is checked on the
//! value written); the other two may be fractions of a second.

use std::net::SocketAddr;
use std::time::Duration;

use kube::Client;

use crate::leader::{LeaderElector, LeaseSettings};

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Flags that are incomplete together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// `--leader-elect` without the Lease's namespace or this candidate's identity.
    #[error(
        "--leader-elect needs {what} (--leader-election-{flag} or the {env} environment variable)"
    )]
    LeaderElection {
        /// What is missing.
        what: &'static str,
        /// The flag suffix.
        flag: &'static str,
        /// The environment variable.
        env: &'static str,
    },
    /// The Lease timings are not ordered retry period < renew deadline < lease duration.
    #[error(
        "lease timings must satisfy --retry-period ({retry:?}) < --renew-deadline ({renew:?}) < --lease-duration ({lease:?})"
    )]
    LeaseTimings {
        /// `--lease-duration`.
        lease: Duration,
        /// `--renew-deadline`.
        renew: Duration,
        /// `--retry-period`.
        retry: Duration,
    },
}

/// A positive Go duration (`15s`, `1m30s`, `500ms`), for the Lease timings.
fn parse_duration(s: &str) -> Result<Duration, String> {
    kinfer_api::schema::parse_duration_seconds(s)
        .filter(|secs| *secs > 0.0 && *secs <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{s:?} is not a duration between 0 and 24h such as 15s or 1m30s"))
}

/// A positive whole number of seconds as a Go duration (`15s`, `1m`), for `--lease-duration`:
/// the Lease records it as `leaseDurationSeconds`, an integer, so a fraction would be lost
/// (and the ordering checked on a value other candidates never see).
fn parse_whole_seconds(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.subsec_nanos() == 0 {
        Ok(d)
    } else {
        Err(format!(
            "{s:?} is not a whole number of seconds (the Lease records leaseDurationSeconds as an integer)"
        ))
    }
}

/// The common flags; see the module contract.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct CommonArgs {
    /// Address of the Prometheus endpoint (`/metrics` only).
    #[arg(long, default_value = "0.0.0.0:8443")]
    pub metrics_addr: SocketAddr,
    /// Serve `/metrics` over HTTPS to scrapers whose token may `get` `/metrics` (reviewed
    /// with the API server); `--metrics-secure=false` serves plain HTTP, and then only on a
    /// loopback `--metrics-addr`.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics_secure: bool,
    /// Directory of the metrics serving certificate (`tls.crt`, `tls.key`); a self-signed one
    /// is generated at start when absent.
    #[arg(long)]
    pub metrics_cert_dir: Option<std::path::PathBuf>,
    /// Address of the probe endpoints (`/healthz`, `/readyz`; plain HTTP).
    #[arg(long, default_value = "0.0.0.0:8081")]
    pub health_addr: SocketAddr,
    /// Run the controllers only while holding the leader-election Lease (for more than one
    /// replica).
    #[arg(long)]
    pub leader_elect: bool,
    /// Name of the leader-election Lease; the binary's default when absent.
    #[arg(long)]
    pub leader_election_id: Option<String>,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "POD_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// This candidate's identity in the Lease (unique per replica).
    #[arg(long, env = "POD_NAME")]
    pub leader_election_identity: Option<String>,
    /// How long a Lease record is valid without renewal: a candidate takes over a leader
    /// silent for this long (Go duration).
    /// Whole seconds: the Lease records it as an integer.
    #[arg(long, default_value = "15s", value_parser = parse_whole_seconds)]
    pub lease_duration: Duration,
    /// How long a leader keeps leading without a successful renewal (below
    /// `--lease-duration`).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub renew_deadline: Duration,
    /// Time between attempts to acquire or renew the Lease (below `--renew-deadline`).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub retry_period: Duration,
    /// Namespace to watch (repeatable); all namespaces when absent.
    #[arg(long = "watch-namespace")]
    pub watch_namespaces: Vec<String>,
    /// Log format.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Reconciles running at once per controller (at least 1: kube reads 0 as unbounded).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Quiet time after a watch event before its object is reconciled, in milliseconds (0:
    /// none; at most 10000): the burst of events of a new object's children becomes one
    /// reconcile instead of several that each read what their watch has not delivered yet.
    /// Each new event restarts the wait, so an object whose events never pause for this long
    /// is not reconciled until they do: keep it short.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub debounce_ms: u64,
    /// `/healthz` fails once work has been queued this long with no reconcile starting or
    /// finishing (Go duration): the kubelet's liveness probe then restarts the process.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub wedged_after: Duration,
}

impl CommonArgs {
    /// The Lease to campaign for, `None` without `--leader-elect`; `default_id` names it when
    /// `--leader-election-id` is absent. Timings from the flags, checked in order (see the
    /// module contract).
    pub fn lease_settings(&self, default_id: &str) -> Result<Option<LeaseSettings>, ArgsError> {
        if !self.leader_elect {
            return Ok(None);
        }
        if !(self.retry_period < self.renew_deadline && self.renew_deadline < self.lease_duration) {
            return Err(ArgsError::LeaseTimings {
                lease: self.lease_duration,
                renew: self.renew_deadline,
                retry: self.retry_period,
            });
        }
        let namespace = self
            .leader_election_namespace
            .as_deref()
            .filter(|s| !s.is_empty())
            .ok_or(ArgsError::LeaderElection {
                what: "the Lease's namespace",
                flag: "namespace",
                env: "POD_NAMESPACE",
            })?;
        let identity = self
            .leader_election_identity
            .as_deref()
            .filter(|s| !s.is_empty())
            .ok_or(ArgsError::LeaderElection {
                what: "this candidate's identity",
                flag: "identity",
                env: "POD_NAME",
            })?;
        let name = self.leader_election_id.as_deref().unwrap_or(default_id);
        Ok(Some(LeaseSettings {
            lease_duration: self.lease_duration,
            renew_deadline: self.renew_deadline,
            retry_period: self.retry_period,
            ..LeaseSettings::new(name, namespace, identity)
        }))
    }

    /// A candidate for the Lease of [`Self::lease_settings`], `None` without `--leader-elect`.
    pub fn leader_elector(
        &self,
        client: &Client,
        default_id: &str,
    ) -> Result<Option<LeaderElector>, ArgsError> {
        Ok(self
            .lease_settings(default_id)?
            .map(|s| LeaderElector::new(client.clone(), s)))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
    }

    fn parse(args: &[&str]) -> CommonArgs {
        Cli::try_parse_from(std::iter::once("op").chain(args.iter().copied()))
            .unwrap()
            .common
    }

    #[test]
    fn defaults() {
        let c = parse(&[]);
        assert_eq!(c.metrics_addr.to_string(), "0.0.0.0:8443");
        assert!(c.metrics_secure);
        assert_eq!(c.metrics_cert_dir, None);
        assert!(!parse(&["--metrics-secure=false"]).metrics_secure);
        assert_eq!(c.health_addr.to_string(), "0.0.0.0:8081");
        assert!(!c.leader_elect);
        assert!(c.watch_namespaces.is_empty());
        assert_eq!(c.log_format, LogFormat::Text);
        assert_eq!(c.concurrency, 4);
        assert_eq!(c.debounce_ms, 50);
        assert_eq!(c.wedged_after, crate::server::WEDGED_AFTER);
        assert_eq!(
            (c.lease_duration, c.renew_deadline, c.retry_period),
            (
                Duration::from_secs(15),
                Duration::from_secs(10),
                Duration::from_secs(2)
            )
        );
        assert_eq!(c.lease_settings("x-leader").unwrap(), None);
    }

    #[test]
    fn concurrency_must_be_positive() {
        // kube's controller reads 0 as "unbounded", which is never what a flag value means.
        assert!(Cli::try_parse_from(["op", "--concurrency", "0"]).is_err());
        assert_eq!(parse(&["--concurrency", "1"]).concurrency, 1);
    }

    #[test]
    fn debounce_is_bounded() {
        // A trailing-edge debounce restarts on every event: a long one can postpone a busy
        // object's reconcile indefinitely.
        assert!(Cli::try_parse_from(["op", "--debounce-ms", "10001"]).is_err());
        assert_eq!(parse(&["--debounce-ms", "10000"]).debounce_ms, 10_000);
        assert_eq!(parse(&["--debounce-ms", "0"]).debounce_ms, 0);
    }

    #[test]
    fn leader_election_needs_namespace_and_identity() {
        let c = parse(&[
            "--leader-elect",
            "--leader-election-namespace",
            "ops",
            "--leader-election-identity",
            "pod-0",
            "--log-format",
            "json",
        ]);
        assert_eq!(c.log_format, LogFormat::Json);
        let s = c.lease_settings("x-leader").unwrap().unwrap();
        assert_eq!(
            (s.name.as_str(), s.namespace.as_str(), s.identity.as_str()),
            ("x-leader", "ops", "pod-0")
        );
        let named = CommonArgs {
            leader_election_id: Some("custom".into()),
            ..c.clone()
        };
        assert_eq!(named.lease_settings("x").unwrap().unwrap().name, "custom");
        let anonymous = CommonArgs {
            leader_election_identity: Some(String::new()),
            ..c
        };
        let err = anonymous.lease_settings("x").unwrap_err();
        assert!(err.to_string().contains("POD_NAME"), "{err}");
    }

    #[test]
    fn lease_timings_are_flags_validated_in_order() {
        let base = [
            "--leader-elect",
            "--leader-election-namespace",
            "ops",
            "--leader-election-identity",
            "pod-0",
        ];
        let with = |extra: &[&str]| {
            let mut args = base.to_vec();
            args.extend_from_slice(extra);
            parse(&args)
        };
        let defaults = with(&[]).lease_settings("x").unwrap().unwrap();
        assert_eq!(defaults, LeaseSettings::new("x", "ops", "pod-0"));
        let s = with(&[
            "--lease-duration",
            "1m",
            "--renew-deadline",
            "40s",
            "--retry-period",
            "1500ms",
        ])
        .lease_settings("x")
        .unwrap()
        .unwrap();
        assert_eq!(
            (s.lease_duration, s.renew_deadline, s.retry_period),
            (
                Duration::from_mins(1),
                Duration::from_secs(40),
                Duration::from_millis(1500)
            )
        );
        for bad in [
            &["--renew-deadline", "15s"][..],
            &["--renew-deadline", "20s"],
            &["--retry-period", "10s"],
            &["--lease-duration", "5s"],
        ] {
            let err = with(bad).lease_settings("x").unwrap_err();
            assert!(
                matches!(err, ArgsError::LeaseTimings { .. }),
                "{bad:?}: {err}"
            );
        }
        // Without --leader-elect the timings are not used, so not checked.
        assert_eq!(
            parse(&["--renew-deadline", "1m"])
                .lease_settings("x")
                .unwrap(),
            None
        );
        for bad in ["0s", "-1s", "15", "soon", "48h", "1500ms", "15.5s"] {
            assert!(
                Cli::try_parse_from(["op", "--lease-duration", bad]).is_err(),
                "{bad}"
            );
        }
    }
}
