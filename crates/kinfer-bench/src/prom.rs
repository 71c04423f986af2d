//! The operator's `/metrics` (OpenMetrics text from `kinfer_state::metrics`): fetching it over
//! plain HTTP/1.1, reading counters and histograms summed over every controller, and
//! quantiles of the observations between two scrapes.
//!
//! Quantiles are estimated as Prometheus' `histogram_quantile` does (linear within the bucket
//! the rank falls in), so their resolution is the bucket layout's: 5 ms doubling to ~41 s.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long one admin request may take (a wedged operator must not hang the harness).
const HTTP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// One plain HTTP/1.1 GET on loopback: the status code and the body.
pub async fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    tokio::time::timeout(HTTP_TIMEOUT, get_once(addr, path))
        .await
        .with_context(|| format!("GET {path} on {addr}: no answer within {HTTP_TIMEOUT:?}"))?
}

async fn get_once(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("no HTTP status line")?;
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        bail!("chunked answers are not expected from the admin server");
    }
    Ok((code, body.to_owned()))
}

/// A cumulative histogram: `(upper bound, observations ≤ bound)`, ascending, `+Inf` last.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// The buckets.
    pub buckets: Vec<(f64, f64)>,
}

impl Histogram {
    /// Observations in `self` not in `earlier` (same bucket layout).
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        let buckets = self
            .buckets
            .iter()
            .map(|&(le, n)| {
                let before = earlier
                    .buckets
                    .iter()
                    .find(|(l, _)| {
                        (*l - le).abs() < f64::EPSILON || (l.is_infinite() && le.is_infinite())
                    })
                    .map_or(0.0, |(_, m)| *m);
                (le, n - before)
            })
            .collect();
        Self { buckets }
    }

    /// How many observations.
    pub fn count(&self) -> f64 {
        self.buckets.last().map_or(0.0, |(_, n)| *n)
    }

    /// The `q` quantile (0..=1) in the unit of the bounds; `None` without observations.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let mut lower = 0.0;
        let mut below = 0.0;
        for &(le, n) in &self.buckets {
            if n >= rank {
                if le.is_infinite() {
                    // Beyond the last finite bucket: its bound is all we know.
                    return Some(lower);
                }
                let in_bucket = n - below;
                let frac = if in_bucket > 0.0 {
                    (rank - below) / in_bucket
                } else {
                    1.0
                };
                return Some(lower + (le - lower) * frac);
            }
            lower = le;
            below = n;
        }
        Some(lower)
    }
}

/// One scrape: counters and histograms by metric name and `controller` label, summed over
/// the other labels.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    /// name → controller (empty when unlabelled) → value.
    values: BTreeMap<String, BTreeMap<String, f64>>,
    /// name → controller → `le` → count.
    histograms: BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>>,
}

/// The value of label `key` in a `{k="v",...}` label text.
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    labels.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim().trim_start_matches('{') == key)
            .then(|| v.trim().trim_end_matches('}').trim_matches('"'))
    })
}

impl Scrape {
    /// Parses the OpenMetrics text.
    pub fn parse(text: &str) -> Self {
        let mut out = Self::default();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let Some((series, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (name, labels) = series.split_once('{').unwrap_or((series, ""));
            let controller = label(labels, "controller").unwrap_or_default().to_owned();
            if let Some(base) = name.strip_suffix("_bucket") {
                let le = label(labels, "le").unwrap_or_default().to_owned();
                *out.histograms
                    .entry(base.to_owned())
                    .or_default()
                    .entry(controller)
                    .or_default()
                    .entry(le)
                    .or_default() += value;
            } else {
                *out.values
                    .entry(name.to_owned())
                    .or_default()
                    .entry(controller)
                    .or_default() += value;
            }
        }
        out
    }

    /// Fetches and parses `/metrics` at `addr`.
    pub async fn fetch(addr: SocketAddr) -> Result<Self> {
        let (code, body) = http_get(addr, "/metrics").await?;
        if code != 200 {
            bail!("/metrics answered {code}");
        }
        Ok(Self::parse(&body))
    }

    /// A counter or gauge summed over its label sets (0 when absent).
    pub fn value(&self, name: &str) -> f64 {
        self.value_of(name, None)
    }

    /// A counter or gauge of one controller (`None`: summed over every label set).
    pub fn value_of(&self, name: &str, controller: Option<&str>) -> f64 {
        self.values
            .get(name)
            .into_iter()
            .flatten()
            .filter(|(c, _)| controller.is_none_or(|want| c.as_str() == want))
            .map(|(_, v)| v)
            .sum()
    }

    /// A histogram summed over its label sets (empty when absent).
    pub fn histogram(&self, name: &str) -> Histogram {
        self.histogram_of(name, None)
    }

    /// A histogram of one controller (`None`: summed over every label set).
    pub fn histogram_of(&self, name: &str, controller: Option<&str>) -> Histogram {
        let mut by_le: BTreeMap<&str, f64> = BTreeMap::new();
        for (_, buckets) in self
            .histograms
            .get(name)
            .into_iter()
            .flatten()
            .filter(|(c, _)| controller.is_none_or(|want| c.as_str() == want))
        {
            for (le, n) in buckets {
                *by_le.entry(le).or_default() += n;
            }
        }
        let mut buckets: Vec<(f64, f64)> = by_le
            .into_iter()
            .filter_map(|(le, n)| {
                let bound = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().ok()?
                };
                Some((bound, n))
            })
            .collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        Histogram { buckets }
    }
}

/// Reconciles run (`kinfer_reconciles_total`).
pub const RECONCILES: &str = "kinfer_reconciles_total";
/// Reconcile wall time histogram.
pub const DURATION: &str = "kinfer_reconcile_duration_seconds";
/// Watch event to reconcile start histogram.
pub const QUEUE_WAIT: &str = "kinfer_reconcile_queue_wait_seconds";

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP kinfer_reconciles Reconciles run.
# TYPE kinfer_reconciles counter
kinfer_reconciles_total{controller="a"} 3
kinfer_reconciles_total{controller="b"} 2
# TYPE kinfer_reconcile_duration_seconds histogram
kinfer_reconcile_duration_seconds_sum{controller="a"} 0.1
kinfer_reconcile_duration_seconds_count{controller="a"} 4
kinfer_reconcile_duration_seconds_bucket{le="0.005",controller="a"} 1
kinfer_reconcile_duration_seconds_bucket{le="0.01",controller="a"} 3
kinfer_reconcile_duration_seconds_bucket{le="+Inf",controller="a"} 4
kinfer_reconcile_duration_seconds_bucket{le="0.005",controller="b"} 0
kinfer_reconcile_duration_seconds_bucket{le="0.01",controller="b"} 0
kinfer_reconcile_duration_seconds_bucket{le="+Inf",controller="b"} 0
# EOF
"#;

    #[test]
    fn sums_counters_and_histograms_over_controllers() {
        let s = Scrape::parse(TEXT);
        assert!((s.value(RECONCILES) - 5.0).abs() < f64::EPSILON);
        let h = s.histogram(DURATION);
        assert_eq!(h.buckets, [(0.005, 1.0), (0.01, 3.0), (f64::INFINITY, 4.0)]);
        assert!((h.count() - 4.0).abs() < f64::EPSILON);
    }

    #[test]
    fn one_controller_is_read_apart() {
        let s = Scrape::parse(TEXT);
        assert!((s.value_of(RECONCILES, Some("b")) - 2.0).abs() < f64::EPSILON);
        assert!((s.value_of(RECONCILES, Some("c"))).abs() < f64::EPSILON);
        let a = s.histogram_of(DURATION, Some("a"));
        assert_eq!(a.buckets, [(0.005, 1.0), (0.01, 3.0), (f64::INFINITY, 4.0)]);
        let b = s.histogram_of(DURATION, Some("b"));
        assert!(b.count().abs() < f64::EPSILON, "{b:?}");
        assert_eq!(label(r#"{le="0.01",controller="a"}"#, "le"), Some("0.01"));
        assert_eq!(label(r#"{controller="a"}"#, "controller"), Some("a"));
        assert_eq!(label("", "controller"), None);
    }

    #[test]
    fn quantiles_interpolate_within_the_bucket() {
        let h = Histogram {
            buckets: vec![(0.005, 50.0), (0.01, 100.0), (f64::INFINITY, 100.0)],
        };
        let p50 = h.quantile(0.5).unwrap_or_default();
        assert!((p50 - 0.005).abs() < 1e-9, "{p50}");
        let p99 = h.quantile(0.99).unwrap_or_default();
        assert!((p99 - 0.0099).abs() < 1e-9, "{p99}");
        assert_eq!(Histogram::default().quantile(0.99), None);
        let beyond = Histogram {
            buckets: vec![(0.005, 0.0), (f64::INFINITY, 10.0)],
        };
        assert_eq!(beyond.quantile(0.5), Some(0.005));
    }

    #[test]
    fn since_subtracts_an_earlier_scrape() {
        let early = Histogram {
            buckets: vec![(0.005, 1.0), (f64::INFINITY, 2.0)],
        };
        let late = Histogram {
            buckets: vec![(0.005, 4.0), (f64::INFINITY, 7.0)],
        };
        assert_eq!(
            late.since(&early).buckets,
            [(0.005, 3.0), (f64::INFINITY, 5.0)]
        );
        assert_eq!(late.since(&Histogram::default()), late);
    }
}
