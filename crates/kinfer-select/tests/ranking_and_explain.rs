//! Ranking order, ties, custom GPU preferences, and the rendered explanation.
#![allow(clippy::expect_used)]

use std::collections::BTreeSet;

use kinfer_select::gpu::GpuModel;
use kinfer_select::{
    Candidate, Outcome, Preferences, ProfileType, Reason, Request, Scope, Selection,
    TemplateStatus, select, select_with,
};

fn cluster(models: &[&str]) -> BTreeSet<GpuModel> {
    models.iter().filter_map(|m| GpuModel::new(m)).collect()
}

fn mi300x() -> BTreeSet<GpuModel> {
    cluster(&["MI300X"])
}

fn reason_of(s: &Selection<'_>, name: &str) -> Reason {
    s.verdict_for(name).expect("a verdict").verdict.reason()
}

fn chosen(s: &Selection<'_>) -> Option<String> {
    s.chosen().map(|c| c.name.clone())
}

/// The spec's preference lists, best first, each ending with an unknown value.
const GPU_ORDER: &[&str] = &[
    "MI355X", "MI350X", "MI325X", "MI300X", "MI308X", "MI300A", "MI250X", "MI210", "B200", "H200",
    "H100", "A100", "L40S", "T4",
];
const METRIC_ORDER: &[&str] = &["latency", "throughput", "cost"];
const PRECISION_ORDER: &[&str] = &["fp4", "int4", "fp8", "int8", "fp16", "bf16", "fp32", "auto"];

#[test]
fn ranking_keys_in_order() {
    let gpus = cluster(GPU_ORDER);
    // (better, worse): each pair differs on one key only; every adjacent pair of every list.
    let mut pairs: Vec<(Candidate, Candidate)> = Vec::new();
    for w in GPU_ORDER.windows(2) {
        pairs.push((
            Candidate::new("a").gpu(w[0], 1),
            Candidate::new("b").gpu(w[1], 1),
        ));
    }
    for w in METRIC_ORDER.windows(2) {
        pairs.push((
            Candidate::new("a").metric(w[0]),
            Candidate::new("b").metric(w[1]),
        ));
    }
    for w in PRECISION_ORDER.windows(2) {
        pairs.push((
            Candidate::new("a").precision(w[0]),
            Candidate::new("b").precision(w[1]),
        ));
    }
    let profiles = [
        Some(ProfileType::Optimized),
        Some(ProfileType::Preview),
        Some(ProfileType::Unoptimized),
        None,
    ];
    for w in profiles.windows(2) {
        pairs.push((
            Candidate::new("a").profile(w[0]),
            Candidate::new("b").profile(w[1]),
        ));
    }
    pairs.push((Candidate::new("a").precision("fp32"), Candidate::new("b")));
    pairs.push((
        Candidate::new("a").metric("throughput"),
        Candidate::new("b"),
    ));
    pairs.push((Candidate::new("a").gpu("L40S", 1), Candidate::new("b")));
    pairs.push((
        Candidate::new("a"),
        Candidate::new("b").scope(Scope::Cluster),
    ));
    assert_eq!(pairs.len(), 13 + 2 + 7 + 3 + 4);
    let allow = Request {
        allow_unoptimized: true,
        ..Request::default()
    };
    for (better, worse) in pairs {
        let candidates = [worse.clone(), better.clone()];
        let s = select(&candidates, &allow, &gpus);
        assert_eq!(chosen(&s).as_deref(), Some("a"), "{better:?} vs {worse:?}");
        assert_eq!(reason_of(&s, "b"), Reason::LowerPreferenceRank);
    }
    // GPU outranks metric, metric outranks precision.
    let candidates = [
        Candidate::new("gpu")
            .gpu("MI355X", 1)
            .metric("throughput")
            .precision("fp32"),
        Candidate::new("metric")
            .gpu("MI300X", 1)
            .metric("latency")
            .precision("fp32"),
        Candidate::new("precision")
            .gpu("MI300X", 1)
            .metric("throughput")
            .precision("fp4"),
    ];
    let s = select(&candidates, &Request::default(), &gpus);
    assert_eq!(chosen(&s).as_deref(), Some("gpu"));
    assert_eq!(
        s.verdicts.iter().map(|v| v.rank).collect::<Vec<_>>(),
        [Some(1), Some(2), Some(3)]
    );
}

#[test]
fn custom_gpu_preferences() {
    let candidates = [
        Candidate::new("amd").gpu("MI355X", 1),
        Candidate::new("nv").gpu("H100", 1),
    ];
    let gpus = cluster(&["MI355X", "H100"]);
    let prefs = Preferences::with_gpu_order(["H100", "MI355X"]);
    let s = select_with(&candidates, &Request::default(), &gpus, &prefs);
    assert_eq!(chosen(&s).as_deref(), Some("nv"));
    let s = select(&candidates, &Request::default(), &gpus);
    assert_eq!(chosen(&s).as_deref(), Some("amd"));
}

#[test]
fn ties_are_reported_never_broken() {
    // Identical on every key (GPU count is not a key).
    let candidates = [
        Candidate::new("b")
            .gpu("MI300X", 8)
            .metric("latency")
            .precision("fp8"),
        Candidate::new("a")
            .gpu("MI300X", 1)
            .metric("latency")
            .precision("fp8"),
        Candidate::new("c")
            .gpu("MI300X", 1)
            .metric("throughput")
            .precision("fp8"),
    ];
    let s = select(&candidates, &Request::default(), &mi300x());
    let Outcome::Ambiguous { tied } = &s.outcome else {
        panic!("expected a tie, got {:?}", s.outcome);
    };
    assert_eq!(
        tied.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(s.outcome.reason().to_string(), "TemplateSelectionAmbiguous");
    assert_eq!(reason_of(&s, "a"), Reason::TemplateSelectionAmbiguous);
    assert_eq!(reason_of(&s, "b"), Reason::TemplateSelectionAmbiguous);
    assert_eq!(reason_of(&s, "c"), Reason::LowerPreferenceRank);
    assert!(s.chosen().is_none());
    assert!(
        s.message().starts_with("2 templates tie at the best rank"),
        "{}",
        s.message()
    );

    // Unknown values rank last and tie with each other, and with an absent value: upstream
    // gives every unknown the same rank (len + 1000).
    let gpus = cluster(&["T4", "V100"]);
    let unknown_pairs = [
        (
            Candidate::new("x").precision("auto"),
            Candidate::new("y").precision("fp2"),
        ),
        (Candidate::new("x").precision("auto"), Candidate::new("y")),
        (
            Candidate::new("x").metric("cost"),
            Candidate::new("y").metric("speed"),
        ),
        (
            Candidate::new("x").metric("cost"),
            Candidate::new("y").metric(""),
        ),
        (
            Candidate::new("x").gpu("T4", 1),
            Candidate::new("y").gpu("V100", 1),
        ),
        (Candidate::new("x").gpu("T4", 1), Candidate::new("y")),
    ];
    for (x, y) in unknown_pairs {
        let candidates = [x, y];
        let s = select(&candidates, &Request::default(), &gpus);
        assert!(
            matches!(s.outcome, Outcome::Ambiguous { ref tied } if tied.len() == 2),
            "{candidates:?}: {:?}",
            s.outcome
        );
    }

    // A tie below the best rank does not matter.
    let lower_tie = [
        Candidate::new("best").metric("latency"),
        Candidate::new("t1").metric("throughput"),
        Candidate::new("t2").metric("throughput"),
    ];
    let s = select(&lower_tie, &Request::default(), &mi300x());
    assert_eq!(chosen(&s).as_deref(), Some("best"));
}

#[test]
fn explain_renders_a_table() {
    let candidates = [
        Candidate::new("mi300x-lat-fp8")
            .gpu("MI300X", 1)
            .metric("latency")
            .precision("fp8"),
        Candidate::new("mi300x-thr-fp16")
            .gpu("MI300X", 1)
            .metric("throughput")
            .precision("fp16"),
        Candidate::new("mi325x")
            .gpu("MI325X", 1)
            .metric("latency")
            .precision("fp8"),
        Candidate::new("old")
            .status(TemplateStatus::Failed)
            .scope(Scope::Cluster),
    ];
    let s = select(&candidates, &Request::default(), &mi300x());
    let text = s.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "Resolved: Selected namespace template \"mi300x-lat-fp8\" (optimized, 1 x MI300X, \
         latency, fp8) from 4 candidate(s)"
    );
    assert_eq!(lines[1], "Cluster GPUs: MI300X");
    assert!(lines[2].starts_with("TEMPLATE"), "{text}");
    assert!(
        lines[3].starts_with("mi300x-lat-fp8 ") && lines[3].contains("BestMatch"),
        "{text}"
    );
    assert!(lines[4].contains("LowerPreferenceRank: metric throughput ranks after latency"));
    assert!(
        lines[5].contains("RequiredGPUNotInCluster: no node has a MI325X"),
        "{text}"
    );
    assert!(
        lines[6].contains("TemplateFailed: status is Failed, not Ready"),
        "{text}"
    );
    // Columns line up: the VERDICT column starts at the same offset on every row.
    let col = lines[2].find("VERDICT").expect("a VERDICT column");
    for row in &lines[3..] {
        let cell = &row[col..];
        assert!(
            cell.starts_with("chosen") || cell.starts_with("rejected"),
            "{row}"
        );
    }
}

#[test]
fn the_gpu_cell_is_rendered_one_way() {
    let candidates = [
        Candidate::new("count-unset")
            .gpu("MI300X", 0)
            .precision("fp8"),
        Candidate::new("two").gpu("MI300X", 2).precision("fp16"),
        Candidate::new("gpu-less"),
        Candidate::new("any-gpu").gpu("", 2).precision("fp32"),
    ];
    let s = select(&candidates, &Request::default(), &mi300x());
    // The message's profile summary and the table's GPU column use `gpu_label()`.
    assert!(
        s.message().contains("(optimized, MI300X, -, fp8)"),
        "{}",
        s.message()
    );
    let text = s.explain();
    let col = text
        .lines()
        .nth(2)
        .and_then(|h| h.find("GPU "))
        .expect("a GPU column");
    for c in &candidates {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("{} ", c.name)))
            .expect("a row per candidate");
        assert!(
            row[col..].starts_with(&format!("{}  ", c.gpu_label())),
            "{row}"
        );
    }
}

#[test]
fn messages_are_bounded() {
    let candidates: Vec<Candidate> = (0..50)
        .map(|i| Candidate::new(format!("t{i:02}")).status(TemplateStatus::Progressing))
        .collect();
    let s = select(&candidates, &Request::default(), &mi300x());
    assert!(
        s.message().ends_with("t04 (Progressing), and 45 more"),
        "{}",
        s.message()
    );
    assert_eq!(s.explain().lines().count(), 2 + 1 + 50);
}
