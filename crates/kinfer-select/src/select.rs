//! Template selection: filters, then ranking, then the outcome and a verdict per candidate.
//!
//! Contract: [`select`] is a pure, total function of its inputs, and the result does not
//! depend on the order of `candidates` (verdicts come out in a canonical order). Outcomes:
//! no candidates at all; none Ready yet (wait); all filtered (each with the filter that
//! removed it); a tie at the best rank (every tied candidate named, none chosen, because a
//! tie is never broken arbitrarily); or exactly one best candidate, chosen.

use std::collections::BTreeSet;

use crate::candidate::{Candidate, Request, TemplateStatus};
use crate::filter;
use crate::gpu::GpuModel;
use crate::rank::{Preferences, RankField, RankKey};
use crate::verdict::{CandidateVerdict, Filter, Rejection, Verdict};

/// The service-level result of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// Exactly one candidate ranks best.
    Chosen(&'a Candidate),
    /// There are no candidate templates for the model.
    NoCandidates,
    /// Candidates exist but none is Ready yet; wait for them.
    NoneReady {
        /// Every candidate, canonical order.
        waiting: Vec<&'a Candidate>,
    },
    /// Some candidate is Ready, yet every candidate was filtered out.
    AllFiltered {
        /// Every candidate with the filter that removed it, canonical order.
        removed: Vec<(&'a Candidate, Filter)>,
    },
    /// Two or more candidates tie on every preference key at the best rank.
    Ambiguous {
        /// The tied candidates, canonical order.
        tied: Vec<&'a Candidate>,
    },
}

impl<'a> Outcome<'a> {
    /// The chosen candidate, if any.
    pub fn chosen(&self) -> Option<&'a Candidate> {
        match self {
            Outcome::Chosen(c) => Some(c),
            _ => None,
        }
    }
}

/// A selection: the outcome plus a verdict for every candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection<'a> {
    /// What the service should do.
    pub outcome: Outcome<'a>,
    /// One verdict per candidate: chosen or tied first, then by rank, then filtered ones in
    /// reverse filter order (the closest misses first), each group in canonical order.
    pub verdicts: Vec<CandidateVerdict<'a>>,
    /// The GPU models the cluster has, sorted (for explanations).
    pub cluster_gpus: Vec<GpuModel>,
}

impl<'a> Selection<'a> {
    /// The chosen candidate, if any.
    pub fn chosen(&self) -> Option<&'a Candidate> {
        self.outcome.chosen()
    }

    /// The verdict for the candidate named `name` (the first such, namespace scope first).
    pub fn verdict_for(&self, name: &str) -> Option<&CandidateVerdict<'a>> {
        let mut matching: Vec<_> = self
            .verdicts
            .iter()
            .filter(|v| v.candidate.name == name)
            .collect();
        matching.sort_by_key(|v| v.candidate);
        matching.first().copied()
    }
}

/// Selects a template for a service with the default GPU preference order.
pub fn select<'a>(
    candidates: &'a [Candidate],
    request: &Request,
    cluster_gpus: &BTreeSet<GpuModel>,
) -> Selection<'a> {
    select_with(candidates, request, cluster_gpus, &Preferences::default())
}

/// Selects a template for a service.
pub fn select_with<'a>(
    candidates: &'a [Candidate],
    request: &Request,
    cluster_gpus: &BTreeSet<GpuModel>,
    preferences: &Preferences,
) -> Selection<'a> {
    let mut sorted: Vec<&'a Candidate> = candidates.iter().collect();
    sorted.sort();
    let cluster_list: Vec<GpuModel> = cluster_gpus.iter().cloned().collect();

    let mut survivors: Vec<(&'a Candidate, RankKey)> = Vec::new();
    let mut filtered: Vec<(&'a Candidate, Rejection)> = Vec::new();
    for c in &sorted {
        match filter::check(c, request, cluster_gpus) {
            Ok(()) => survivors.push((c, preferences.rank(c))),
            Err(rejection) => filtered.push((c, rejection)),
        }
    }

    let mut verdicts = rank_survivors(&survivors);
    let outcome = if sorted.is_empty() {
        Outcome::NoCandidates
    } else if sorted.iter().all(|c| c.status != TemplateStatus::Ready) {
        Outcome::NoneReady {
            waiting: sorted.clone(),
        }
    } else if survivors.is_empty() {
        Outcome::AllFiltered {
            removed: filtered
                .iter()
                .filter_map(|(c, r)| r.filter().map(|f| (*c, f)))
                .collect(),
        }
    } else {
        let tied: Vec<&'a Candidate> = verdicts
            .iter()
            .filter(|v| v.rank == Some(1))
            .map(|v| v.candidate)
            .collect();
        match tied.as_slice() {
            [one] => Outcome::Chosen(one),
            _ => Outcome::Ambiguous { tied },
        }
    };

    // Filtered candidates: closest misses (later filters) first, canonical order within.
    filtered.sort_by(|(a, ra), (b, rb)| rb.filter().cmp(&ra.filter()).then_with(|| a.cmp(b)));
    verdicts.extend(
        filtered
            .into_iter()
            .map(|(candidate, rejection)| CandidateVerdict {
                candidate,
                verdict: Verdict::Rejected(rejection),
                rank: None,
            }),
    );

    Selection {
        outcome,
        verdicts,
        cluster_gpus: cluster_list,
    }
}

/// Verdicts for the candidates that passed every filter, best rank first.
fn rank_survivors<'a>(survivors: &[(&'a Candidate, RankKey)]) -> Vec<CandidateVerdict<'a>> {
    let mut keys: Vec<RankKey> = survivors.iter().map(|(_, k)| *k).collect();
    keys.sort_unstable();
    keys.dedup();
    let Some(best_key) = keys.first().copied() else {
        return Vec::new();
    };
    let tied = survivors.iter().filter(|(_, k)| *k == best_key).count();
    // Survivors are in canonical order, so this reference is the first best one.
    let best = survivors
        .iter()
        .find(|(_, k)| *k == best_key)
        .map(|(c, _)| *c);

    let mut out: Vec<(usize, CandidateVerdict<'a>)> = survivors
        .iter()
        .map(|(c, key)| {
            let rank = keys.partition_point(|k| k < key) + 1;
            let verdict = match (key.first_difference(&best_key), best) {
                (Some(field), Some(best)) => Verdict::Rejected(lower_rank(field, c, best)),
                _ if tied > 1 => Verdict::Rejected(Rejection::Ambiguous),
                _ => Verdict::Chosen,
            };
            let verdict = CandidateVerdict {
                candidate: c,
                verdict,
                rank: Some(rank),
            };
            (rank, verdict)
        })
        .collect();
    // Stable: canonical order within a rank.
    out.sort_by_key(|(rank, _)| *rank);
    out.into_iter().map(|(_, v)| v).collect()
}

fn lower_rank(field: RankField, c: &Candidate, best: &Candidate) -> Rejection {
    Rejection::LowerRank {
        field,
        value: field.value(c),
        best: field.value(best),
    }
}
