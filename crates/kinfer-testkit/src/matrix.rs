//! The fault matrix, in one place for every operator's matrix test: each case
//! names a failure the API server can show a controller and the rules that inject it.

use std::time::Duration;

use crate::faults::Fault;

/// One fault of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// 429 with `Retry-After: 1`.
    Throttle,
    /// 500.
    InternalError,
    /// 503.
    Unavailable,
    /// 409 on PATCH and PUT.
    ConflictOnWrite,
    /// Watches cut within a second of opening.
    WatchCut,
    /// 410 Gone on watches.
    WatchGone,
    /// 410 Gone on a LIST's `continue` page.
    ContinueGone,
    /// One second of API latency.
    Latency,
}

impl Case {
    /// Every case, in the order the matrix runs them.
    pub const ALL: [Self; 8] = [
        Self::Throttle,
        Self::InternalError,
        Self::Unavailable,
        Self::ConflictOnWrite,
        Self::WatchCut,
        Self::WatchGone,
        Self::ContinueGone,
        Self::Latency,
    ];

    /// The rules of this case with `percent` of the requests failed.
    ///
    /// An operator opens a handful of watches, so a percentage of them may be none at all:
    /// the watch faults hit at least half of them (410: four at most, since each one stalls
    /// the shared trigger backoff). A paged LIST happens once per (re-)list: the first two
    /// later pages get 410.
    pub fn rules(self, percent: f64) -> Vec<Fault> {
        match self {
            Self::Throttle => vec![
                Fault::any()
                    .with_status(429)
                    .retry_after(1)
                    .percent(percent),
            ],
            Self::InternalError => vec![Fault::any().with_status(500).percent(percent)],
            Self::Unavailable => vec![Fault::any().with_status(503).percent(percent)],
            Self::ConflictOnWrite => ["patch", "update"]
                .into_iter()
                .map(|verb| Fault {
                    verb: Some(verb.to_owned()),
                    ..Fault::any().with_status(409).percent(percent)
                })
                .collect(),
            Self::WatchCut => vec![Fault {
                verb: Some("watch".to_owned()),
                cut_after: Some(Duration::from_millis(700)),
                ..Fault::any().percent(percent.max(50.0))
            }],
            Self::WatchGone => vec![Fault {
                verb: Some("watch".to_owned()),
                ..Fault::any()
                    .with_status(410)
                    .percent(percent.max(50.0))
                    .times(4)
            }],
            Self::ContinueGone => vec![Fault {
                verb: Some("list".to_owned()),
                continue_only: true,
                ..Fault::any().with_status(410).times(2)
            }],
            Self::Latency => vec![Fault {
                latency: Some(Duration::from_secs(1)),
                ..Fault::any().percent(percent)
            }],
        }
    }
}
