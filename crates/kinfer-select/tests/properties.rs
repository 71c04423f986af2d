//! Properties of selection: determinism, order independence, stability under worse
//! candidates, ties always reported, and agreement with a direct model of the rules.
//!
//! The model ranks with [`oracle_key`], built from the spec's literal preference lists; it
//! never calls the crate's ranking.

use std::collections::BTreeSet;

use kinfer_select::gpu::GpuModel;
use kinfer_select::{
    Candidate, Metric, Outcome, Precision, ProfileType, Request, Scope, TemplateStatus, Verdict,
    select,
};
use proptest::prelude::*;
use proptest::sample::select as pick;

// The spec's preference lists, best first (issue: kinfer-select "Rules").
const PROFILE_ORDER: &[&str] = &["optimized", "preview", "unoptimized"];
const GPU_ORDER: &[&str] = &[
    "MI355X", "MI350X", "MI325X", "MI300X", "MI308X", "MI300A", "MI250X", "MI210", "B200", "H200",
    "H100", "A100", "L40S",
];
const METRIC_ORDER: &[&str] = &["latency", "throughput"];
const PRECISION_ORDER: &[&str] = &["fp4", "int4", "fp8", "int8", "fp16", "bf16", "fp32"];

/// Position in a spec list. "Unknown values rank last": any value not in the list, and an
/// absent value, ranks after every listed one, and all of them rank equal (upstream gives
/// every unknown the same `len + 1000`), so two different unknowns tie.
fn position(order: &[&str], value: Option<&str>) -> usize {
    value
        .and_then(|v| order.iter().position(|o| *o == v))
        .unwrap_or(order.len())
}

/// The spec's ranking tuple, lower is better: namespace before cluster, then profile type,
/// GPU, metric, precision.
fn oracle_key(c: &Candidate) -> (usize, usize, usize, usize, usize) {
    (
        match c.scope {
            Scope::Namespace => 0,
            Scope::Cluster => 1,
        },
        position(PROFILE_ORDER, c.profile_type.map(ProfileType::as_str)),
        position(GPU_ORDER, c.gpu_model.as_ref().map(GpuModel::as_str)),
        position(METRIC_ORDER, c.metric.as_ref().map(Metric::as_str)),
        position(PRECISION_ORDER, c.precision.as_ref().map(Precision::as_str)),
    )
}

/// Known GPUs from both ends of the list, and three different unknown ones.
const GPUS: &[&str] = &[
    "MI355X", "MI325X", "MI300X", "MI308X", "MI210", "B200", "H100", "L40S", "T4", "V100",
    "AMD-74C0",
];
/// Known metrics, a case variant, two different unknowns and a blank (unset).
const METRICS: &[&str] = &["latency", "throughput", "Latency", "cost", "speed", ""];
/// Known precisions, a case variant, two different unknowns and a blank (unset).
const PRECISIONS: &[&str] = &["fp8", "fp16", "FP8", "bf16", "int8", "auto", "fp2", ""];

fn status() -> impl Strategy<Value = TemplateStatus> {
    prop_oneof![
        6 => Just(TemplateStatus::Ready),
        1 => Just(TemplateStatus::Pending),
        1 => Just(TemplateStatus::Progressing),
        1 => Just(TemplateStatus::Failed),
        1 => Just(TemplateStatus::NotAvailable),
    ]
}

fn profile() -> impl Strategy<Value = Option<ProfileType>> {
    prop_oneof![
        6 => Just(Some(ProfileType::Optimized)),
        1 => Just(Some(ProfileType::Preview)),
        1 => Just(Some(ProfileType::Unoptimized)),
        1 => Just(None),
    ]
}

/// A candidate without a name; names are assigned by position to keep them unique.
fn candidate() -> impl Strategy<Value = Candidate> {
    (
        prop_oneof![3 => Just(Scope::Namespace), 1 => Just(Scope::Cluster)],
        status(),
        profile(),
        proptest::option::weighted(0.8, pick(GPUS)),
        0u32..3,
        proptest::option::weighted(0.9, pick(METRICS)),
        proptest::option::weighted(0.9, pick(PRECISIONS)),
    )
        .prop_map(
            |(scope, status, profile_type, gpu, count, metric, precision)| Candidate {
                scope,
                name: String::new(),
                status,
                profile_type,
                gpu_model: gpu.and_then(GpuModel::new),
                gpu_count: count,
                metric: metric.and_then(Metric::parse),
                precision: precision.and_then(Precision::parse),
            },
        )
}

fn candidates(max: usize) -> impl Strategy<Value = Vec<Candidate>> {
    proptest::collection::vec(candidate(), 0..max).prop_map(|mut v| {
        for (i, c) in v.iter_mut().enumerate() {
            c.name = format!("t{i}");
        }
        v
    })
}

fn request() -> impl Strategy<Value = Request> {
    (
        proptest::option::weighted(0.2, pick(METRICS)),
        proptest::option::weighted(0.2, pick(PRECISIONS)),
        proptest::option::weighted(0.15, pick(GPUS)),
        proptest::option::weighted(0.15, 0u32..3),
        proptest::bool::weighted(0.3),
    )
        .prop_map(|(metric, precision, gpu, count, allow)| Request {
            metric: metric.and_then(Metric::parse),
            precision: precision.and_then(Precision::parse),
            gpu_model: gpu.and_then(GpuModel::new),
            gpu_count: count,
            allow_unoptimized: allow,
        })
}

fn cluster() -> impl Strategy<Value = BTreeSet<GpuModel>> {
    proptest::sample::subsequence(GPUS, 0..=GPUS.len())
        .prop_map(|v| v.into_iter().filter_map(GpuModel::new).collect())
}

/// The rules written out directly, independent of the crate's filter code.
fn eligible(c: &Candidate, r: &Request, gpus: &BTreeSet<GpuModel>) -> bool {
    let ready = c.status == TemplateStatus::Ready;
    let profile_ok = r.allow_unoptimized || c.profile_type == Some(ProfileType::Optimized);
    let metric_ok = r
        .metric
        .as_ref()
        .is_none_or(|m| c.metric.as_ref() == Some(m));
    let precision_ok = r
        .precision
        .as_ref()
        .is_none_or(|p| c.precision.as_ref() == Some(p));
    let model_ok = match (&r.gpu_model, &c.gpu_model) {
        (Some(want), Some(have)) => want == have,
        _ => true,
    };
    let count_ok = match r.gpu_count {
        Some(n) if n > 0 && c.gpu_count > 0 => n == c.gpu_count,
        _ => true,
    };
    let in_cluster = c.gpu_model.as_ref().is_none_or(|m| gpus.contains(m));
    ready && profile_ok && metric_ok && precision_ok && model_ok && count_ok && in_cluster
}

fn names<'a>(cs: impl IntoIterator<Item = &'a Candidate>) -> BTreeSet<(Scope, String)> {
    cs.into_iter().map(|c| (c.scope, c.name.clone())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn deterministic_and_order_independent(
        (cands, shuffled) in candidates(12).prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle())),
        req in request(),
        gpus in cluster(),
    ) {
        let a = select(&cands, &req, &gpus);
        let again = select(&cands, &req, &gpus);
        let b = select(&shuffled, &req, &gpus);
        prop_assert_eq!(&a, &again);
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(a.explain(), b.explain());
    }

    #[test]
    fn agrees_with_the_rules(cands in candidates(12), req in request(), gpus in cluster()) {
        let s = select(&cands, &req, &gpus);
        prop_assert_eq!(s.verdicts.len(), cands.len());
        prop_assert_eq!(names(s.verdicts.iter().map(|v| v.candidate)), names(&cands));

        let passing: Vec<&Candidate> = cands.iter().filter(|c| eligible(c, &req, &gpus)).collect();
        let best = passing.iter().map(|c| oracle_key(c)).min();
        let tied: Vec<&Candidate> =
            passing.iter().copied().filter(|c| Some(oracle_key(c)) == best).collect();
        match &s.outcome {
            Outcome::NoCandidates => prop_assert!(cands.is_empty()),
            Outcome::NoneReady { waiting } => {
                prop_assert!(cands.iter().all(|c| c.status != TemplateStatus::Ready));
                prop_assert_eq!(waiting.len(), cands.len());
            }
            Outcome::AllFiltered { removed } => {
                prop_assert!(passing.is_empty());
                prop_assert!(cands.iter().any(|c| c.status == TemplateStatus::Ready));
                prop_assert_eq!(removed.len(), cands.len());
            }
            Outcome::Chosen(c) => {
                prop_assert_eq!(tied.len(), 1);
                prop_assert_eq!(*c, tied[0]);
            }
            Outcome::Ambiguous { tied: reported } => {
                // Whenever two best candidates are equal on every key, the tie is reported
                // with exactly those candidates.
                prop_assert!(tied.len() >= 2);
                prop_assert_eq!(names(reported.iter().copied()), names(tied.iter().copied()));
            }
        }
        // Verdicts agree: ranked iff eligible; chosen only for the chosen one.
        for v in &s.verdicts {
            prop_assert_eq!(v.rank.is_some(), eligible(v.candidate, &req, &gpus));
            prop_assert_eq!(
                v.verdict == Verdict::Chosen,
                s.chosen().is_some_and(|c| std::ptr::eq(c, v.candidate))
            );
        }
        // Dense ranks order the candidates exactly as the spec's tuple does.
        let ranked: Vec<_> = s.verdicts.iter().filter_map(|v| Some((v.rank?, oracle_key(v.candidate)))).collect();
        for (rank_a, key_a) in &ranked {
            for (rank_b, key_b) in &ranked {
                prop_assert_eq!(rank_a.cmp(rank_b), key_a.cmp(key_b));
            }
        }
    }

    #[test]
    fn a_lower_ranked_candidate_never_changes_the_choice(
        cands in candidates(10),
        mut extra in candidate(),
        req in request(),
        gpus in cluster(),
    ) {
        let before = select(&cands, &req, &gpus);
        extra.name = "extra".to_owned();
        let best_key = before
            .verdicts
            .iter()
            .find(|v| v.rank == Some(1))
            .map(|v| oracle_key(v.candidate));
        let lower = !eligible(&extra, &req, &gpus)
            || best_key.is_some_and(|best| oracle_key(&extra) > best);
        let mut more = cands.clone();
        more.push(extra);
        let after = select(&more, &req, &gpus);
        if lower {
            match (&before.outcome, &after.outcome) {
                (Outcome::Chosen(a), Outcome::Chosen(b)) => prop_assert_eq!(a, b),
                (Outcome::Ambiguous { tied: a }, Outcome::Ambiguous { tied: b }) => {
                    prop_assert_eq!(a, b);
                }
                (Outcome::Chosen(_) | Outcome::Ambiguous { .. }, other) => {
                    prop_assert!(false, "choice changed to {:?}", other);
                }
                _ => {}
            }
        }
    }

    /// A twin of the chosen candidate that differs only off the ranking keys (name, GPU
    /// count, and an unknown value swapped for a different unknown value) ties with it.
    #[test]
    fn a_twin_differing_only_off_key_makes_a_tie(
        cands in candidates(10),
        req in request(),
        gpus in cluster(),
    ) {
        let before = select(&cands, &req, &gpus);
        if let Some(chosen) = before.chosen() {
            let twin = twin_of(chosen, &req, &gpus);
            prop_assert_eq!(oracle_key(&twin), oracle_key(chosen));
            prop_assert!(eligible(&twin, &req, &gpus));
            let mut more = cands.clone();
            more.push(twin.clone());
            let after = select(&more, &req, &gpus);
            match &after.outcome {
                Outcome::Ambiguous { tied } => {
                    prop_assert_eq!(names(tied.iter().copied()), names([chosen, &twin]));
                }
                other => prop_assert!(false, "expected a tie, got {:?}", other),
            }
        }
    }
}

/// `chosen` with every non-key field changed where the request allows: the name, the GPU
/// count, and each unknown (or absent) GPU, metric and precision replaced by a different
/// unknown one.
fn twin_of(chosen: &Candidate, req: &Request, gpus: &BTreeSet<GpuModel>) -> Candidate {
    fn other<T: PartialEq + Clone>(current: &T, options: &[T]) -> T {
        options
            .iter()
            .find(|o| *o != current)
            .cloned()
            .unwrap_or_else(|| current.clone())
    }
    let (_, _, gpu, metric, precision) = oracle_key(chosen);
    let mut twin = Candidate {
        name: "twin".to_owned(),
        ..chosen.clone()
    };
    twin.gpu_count = if req.gpu_count.is_some_and(|n| n > 0) {
        0 // a template without a count passes the count override
    } else {
        chosen.gpu_count + 1
    };
    if gpu == GPU_ORDER.len() {
        // A GPU-less template passes the model override and the cluster filter.
        let mut unknown: Vec<Option<GpuModel>> = vec![None];
        unknown.extend(
            gpus.iter()
                .filter(|g| !GPU_ORDER.contains(&g.as_str()))
                .filter(|g| req.gpu_model.as_ref().is_none_or(|want| want == *g))
                .cloned()
                .map(Some),
        );
        twin.gpu_model = other(&chosen.gpu_model, &unknown);
    }
    if metric == METRIC_ORDER.len() && req.metric.is_none() {
        let unknown = [None, Metric::parse("cost"), Metric::parse("speed")];
        twin.metric = other(&chosen.metric, &unknown);
    }
    if precision == PRECISION_ORDER.len() && req.precision.is_none() {
        let unknown = [None, Precision::parse("auto"), Precision::parse("fp2")];
        twin.precision = other(&chosen.precision, &unknown);
    }
    twin
}
