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

use std::net::SocketAddr;

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
}

/// The common flags; see the module contract.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct CommonArgs {
    /// Address of the Prometheus endpoint (`/metrics`; also serves the probes).
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// Address of the probe endpoints (`/healthz`, `/readyz`; also serves `/metrics`).
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
}

impl CommonArgs {
    /// The addresses the admin server listens on: metrics and health, once each.
    pub fn admin_addrs(&self) -> Vec<SocketAddr> {
        let mut addrs = vec![self.metrics_addr];
        if self.health_addr != self.metrics_addr {
            addrs.push(self.health_addr);
        }
        addrs
    }

    /// The Lease to campaign for, `None` without `--leader-elect`; `default_id` names it when
    /// `--leader-election-id` is absent. Timings are client-go's ([`LeaseSettings::new`]).
    pub fn lease_settings(&self, default_id: &str) -> Result<Option<LeaseSettings>, ArgsError> {
        if !self.leader_elect {
            return Ok(None);
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
        Ok(Some(LeaseSettings::new(name, namespace, identity)))
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
        assert_eq!(c.metrics_addr.to_string(), "0.0.0.0:8080");
        assert_eq!(c.health_addr.to_string(), "0.0.0.0:8081");
        assert!(!c.leader_elect);
        assert!(c.watch_namespaces.is_empty());
        assert_eq!(c.log_format, LogFormat::Text);
        assert_eq!(c.concurrency, 4);
        assert_eq!(c.debounce_ms, 50);
        assert_eq!(c.admin_addrs().len(), 2);
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
    fn same_metrics_and_health_address_is_served_once() {
        let c = parse(&[
            "--metrics-addr",
            "127.0.0.1:9000",
            "--health-addr",
            "127.0.0.1:9000",
        ]);
        assert_eq!(c.admin_addrs().len(), 1);
    }
}
