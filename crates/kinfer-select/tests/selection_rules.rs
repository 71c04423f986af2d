//! Every filter, every reason and every outcome, one table row each, plus the issue's scenario.
#![allow(clippy::expect_used)]

use std::collections::BTreeSet;

use kinfer_select::gpu::GpuModel;
use kinfer_select::{
    Candidate, Filter, Metric, Outcome, OutcomeReason, Precision, ProfileType, RankField, Reason,
    Rejection, Request, Scope, Selection, TemplateStatus, select,
};

fn cluster(models: &[&str]) -> BTreeSet<GpuModel> {
    models.iter().filter_map(|m| GpuModel::new(m)).collect()
}

fn mi300x() -> BTreeSet<GpuModel> {
    cluster(&["MI300X"])
}

/// `(name, reason)` per verdict, sorted by name.
fn reasons(s: &Selection<'_>) -> Vec<(String, Reason)> {
    let mut v: Vec<_> = s
        .verdicts
        .iter()
        .map(|v| (v.candidate.name.clone(), v.verdict.reason()))
        .collect();
    v.sort();
    v
}

fn reason_of(s: &Selection<'_>, name: &str) -> Reason {
    s.verdict_for(name).expect("a verdict").verdict.reason()
}

fn chosen(s: &Selection<'_>) -> Option<String> {
    s.chosen().map(|c| c.name.clone())
}

#[test]
fn issue_scenario_mi300x_latency_fp8_wins() {
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
    ];
    let s = select(&candidates, &Request::default(), &mi300x());
    assert_eq!(chosen(&s).as_deref(), Some("mi300x-lat-fp8"));
    assert_eq!(s.outcome.reason(), OutcomeReason::Resolved);
    assert_eq!(
        reasons(&s),
        [
            ("mi300x-lat-fp8".into(), Reason::BestMatch),
            ("mi300x-thr-fp16".into(), Reason::LowerPreferenceRank),
            ("mi325x".into(), Reason::RequiredGPUNotInCluster),
        ]
    );
    let thr = s.verdict_for("mi300x-thr-fp16").expect("a verdict");
    assert_eq!(thr.rank, Some(2));
    assert_eq!(
        thr.verdict.rejection(),
        Some(&Rejection::LowerRank {
            field: RankField::Metric,
            value: "throughput".into(),
            best: "latency".into()
        })
    );
    // MI325X would rank first on GPU preference, but the cluster has none.
    assert_eq!(
        s.verdict_for("mi325x").expect("a verdict").detail(),
        "no node has a MI325X"
    );
}

#[test]
fn not_ready_statuses_have_their_own_reasons() {
    let table = [
        (TemplateStatus::Pending, Reason::TemplatePending),
        (TemplateStatus::Progressing, Reason::TemplateProgressing),
        (TemplateStatus::Degraded, Reason::TemplateDegraded),
        (TemplateStatus::Failed, Reason::TemplateFailed),
        (TemplateStatus::NotAvailable, Reason::TemplateNotAvailable),
    ];
    for (status, reason) in table {
        let candidates = [
            Candidate::new("ready"),
            Candidate::new("other").status(status),
        ];
        let s = select(&candidates, &Request::default(), &mi300x());
        assert_eq!(chosen(&s).as_deref(), Some("ready"), "{status}");
        assert_eq!(reason_of(&s, "other"), reason, "{status}");
        assert_eq!(reason.to_string(), format!("Template{status}"));
    }
}

#[test]
fn outcomes() {
    let req = Request::default();
    let s = select(&[], &req, &mi300x());
    assert_eq!(s.outcome, Outcome::NoCandidates);
    assert_eq!(s.outcome.reason().to_string(), "TemplateNotFound");
    assert!(s.verdicts.is_empty());

    let waiting = [
        Candidate::new("a").status(TemplateStatus::Pending),
        Candidate::new("b").status(TemplateStatus::Progressing),
    ];
    let s = select(&waiting, &req, &mi300x());
    assert!(matches!(&s.outcome, Outcome::NoneReady { waiting } if waiting.len() == 2));
    assert_eq!(s.outcome.reason().to_string(), "TemplatesExistButNotReady");
    assert_eq!(
        s.message(),
        "2 template(s) exist but none is Ready yet: a (Pending), b (Progressing)"
    );

    let filtered = [
        Candidate::new("pending").status(TemplateStatus::Pending),
        Candidate::new("preview").profile(Some(ProfileType::Preview)),
        Candidate::new("h100").gpu("H100", 1),
    ];
    let s = select(&filtered, &req, &mi300x());
    let Outcome::AllFiltered { removed } = &s.outcome else {
        panic!("expected AllFiltered, got {:?}", s.outcome);
    };
    let removed: Vec<_> = removed.iter().map(|(c, f)| (c.name.as_str(), *f)).collect();
    assert_eq!(
        removed,
        [
            ("h100", Filter::GpuNotInCluster),
            ("pending", Filter::NotReady),
            ("preview", Filter::Unoptimized)
        ]
    );
    assert_eq!(s.outcome.reason(), OutcomeReason::TemplateNotFound);
    assert!(
        s.message().contains("Set spec.template.allowUnoptimized"),
        "{}",
        s.message()
    );
}

#[test]
fn unoptimized_filter_and_ranking() {
    let candidates = [
        Candidate::new("opt").gpu("MI210", 1),
        Candidate::new("preview")
            .gpu("MI355X", 1)
            .profile(Some(ProfileType::Preview)),
        Candidate::new("unopt")
            .gpu("MI355X", 1)
            .profile(Some(ProfileType::Unoptimized)),
        Candidate::new("unknown").gpu("MI355X", 1).profile(None),
    ];
    let gpus = cluster(&["MI210", "MI355X"]);
    let s = select(&candidates, &Request::default(), &gpus);
    assert_eq!(chosen(&s).as_deref(), Some("opt"));
    for name in ["preview", "unopt", "unknown"] {
        assert_eq!(
            reason_of(&s, name),
            Reason::UnoptimizedTemplateFiltered,
            "{name}"
        );
    }

    let allow = Request {
        allow_unoptimized: true,
        ..Request::default()
    };
    let s = select(&candidates, &allow, &gpus);
    // Profile type outranks the better GPU.
    assert_eq!(chosen(&s).as_deref(), Some("opt"));
    let ranks: Vec<_> = s
        .verdicts
        .iter()
        .map(|v| (v.candidate.name.as_str(), v.rank))
        .collect();
    assert_eq!(
        ranks,
        [
            ("opt", Some(1)),
            ("preview", Some(2)),
            ("unopt", Some(3)),
            ("unknown", Some(4))
        ]
    );
    // Only preview and unoptimized left: preview wins.
    let s = select(&candidates[1..], &allow, &gpus);
    assert_eq!(chosen(&s).as_deref(), Some("preview"));
}

#[test]
fn overrides() {
    let base = || {
        Candidate::new("t")
            .gpu("MI300X", 2)
            .metric("latency")
            .precision("fp8")
    };
    let req = |f: fn(&mut Request)| {
        let mut r = Request::default();
        f(&mut r);
        r
    };
    // (request, candidate, passes)
    let table: Vec<(Request, Candidate, bool)> = vec![
        (req(|r| r.metric = Metric::parse("LATENCY")), base(), true),
        (req(|r| r.metric = Some(Metric::Throughput)), base(), false),
        (
            req(|r| r.metric = Some(Metric::Latency)),
            Candidate::new("t"),
            false,
        ),
        (req(|r| r.precision = Precision::parse("FP8")), base(), true),
        (req(|r| r.precision = Some(Precision::Fp16)), base(), false),
        (
            req(|r| r.gpu_model = GpuModel::new("AMD Instinct MI300X")),
            base(),
            true,
        ),
        (
            req(|r| r.gpu_model = GpuModel::new("mi325x")),
            base(),
            false,
        ),
        (
            req(|r| r.gpu_model = GpuModel::new("MI325X")),
            Candidate::new("t"),
            true,
        ),
        (req(|r| r.gpu_count = Some(2)), base(), true),
        (req(|r| r.gpu_count = Some(8)), base(), false),
        (req(|r| r.gpu_count = Some(0)), base(), true),
        (
            req(|r| r.gpu_count = Some(8)),
            Candidate::new("t").gpu("MI300X", 0),
            true,
        ),
    ];
    for (i, (request, candidate, passes)) in table.into_iter().enumerate() {
        let candidates = [candidate];
        let s = select(&candidates, &request, &mi300x());
        let want = if passes {
            Reason::BestMatch
        } else {
            Reason::ServiceOverridesNotMatched
        };
        assert_eq!(reason_of(&s, "t"), want, "row {i}: {request:?}");
    }

    // Every mismatching override is named.
    let request = Request {
        metric: Some(Metric::Throughput),
        precision: Some(Precision::Fp8),
        gpu_model: GpuModel::new("MI325X"),
        gpu_count: Some(8),
        allow_unoptimized: false,
    };
    let candidates = [base()];
    let s = select(&candidates, &request, &mi300x());
    let v = s.verdict_for("t").expect("a verdict");
    assert_eq!(
        v.detail(),
        "metric throughput wanted, template has latency; GPU model MI325X wanted, template has \
         MI300X; GPU count 8 wanted, template has 2"
    );
}

#[test]
fn gpu_must_be_in_cluster_unless_gpu_less() {
    let candidates = [
        Candidate::new("cpu"),
        Candidate::new("h100").gpu("NVIDIA-H100-80GB-HBM3", 1),
    ];
    let s = select(&candidates, &Request::default(), &mi300x());
    assert_eq!(chosen(&s).as_deref(), Some("cpu"));
    assert_eq!(reason_of(&s, "h100"), Reason::RequiredGPUNotInCluster);
    let s = select(&candidates, &Request::default(), &cluster(&["H100"]));
    // A GPU model ranks before no GPU model (unknown ranks last).
    assert_eq!(chosen(&s).as_deref(), Some("h100"));
}

#[test]
fn namespace_beats_cluster() {
    let candidates = [
        Candidate::new("cluster-best")
            .scope(Scope::Cluster)
            .gpu("MI300X", 1)
            .metric("latency"),
        Candidate::new("ns-preview")
            .profile(Some(ProfileType::Preview))
            .gpu("MI300X", 1)
            .metric("throughput"),
    ];
    let allow = Request {
        allow_unoptimized: true,
        ..Request::default()
    };
    let s = select(&candidates, &allow, &mi300x());
    assert_eq!(chosen(&s).as_deref(), Some("ns-preview"));
    let v = s.verdict_for("cluster-best").expect("a verdict");
    assert_eq!(v.verdict.reason(), Reason::LowerPreferenceRank);
    assert_eq!(v.detail(), "scope Cluster ranks after Namespace");

    // A namespace and a cluster template of the same name are two candidates.
    let same = [
        Candidate::new("t"),
        Candidate::new("t").scope(Scope::Cluster),
    ];
    let s = select(&same, &Request::default(), &mi300x());
    assert_eq!(s.chosen().map(|c| c.scope), Some(Scope::Namespace));
}
