//! Criterion benchmark: template selection over 200 candidates.
//!
//! The candidate set mixes scopes, statuses, profile types, GPU models (some absent from the
//! cluster), metrics and precisions, so every filter and the ranking do real work.
#![allow(missing_docs)]

use std::collections::BTreeSet;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use kinfer_select::gpu::GpuModel;
use kinfer_select::{Candidate, ProfileType, Request, Scope, TemplateStatus, select};

fn candidates(n: usize) -> Vec<Candidate> {
    const GPUS: [&str; 6] = ["MI355X", "MI325X", "MI300X", "MI250X", "H100", "A100"];
    const METRICS: [&str; 2] = ["latency", "throughput"];
    const PRECISIONS: [&str; 5] = ["fp4", "fp8", "fp16", "bf16", "fp32"];
    const STATUSES: [TemplateStatus; 4] = [
        TemplateStatus::Ready,
        TemplateStatus::Ready,
        TemplateStatus::Ready,
        TemplateStatus::Progressing,
    ];
    const PROFILES: [ProfileType; 3] = [
        ProfileType::Optimized,
        ProfileType::Preview,
        ProfileType::Unoptimized,
    ];
    (0..n)
        .map(|i| {
            Candidate::new(format!("template-{i:03}"))
                .scope(if i % 3 == 0 {
                    Scope::Cluster
                } else {
                    Scope::Namespace
                })
                .status(STATUSES[i % STATUSES.len()])
                .profile(Some(PROFILES[i % PROFILES.len()]))
                .gpu(GPUS[i % GPUS.len()], 1 + u32::try_from(i % 4).unwrap_or(0))
                .metric(METRICS[i % METRICS.len()])
                .precision(PRECISIONS[i % PRECISIONS.len()])
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let set = candidates(200);
    let cluster: BTreeSet<GpuModel> = ["MI300X", "MI325X", "H100"]
        .into_iter()
        .filter_map(GpuModel::new)
        .collect();
    let strict = Request::default();
    let allow = Request {
        allow_unoptimized: true,
        ..Request::default()
    };
    c.bench_function("select/200 candidates", |b| {
        b.iter(|| select(black_box(&set), black_box(&strict), black_box(&cluster)));
    });
    c.bench_function("select/200 candidates, allowUnoptimized", |b| {
        b.iter(|| select(black_box(&set), black_box(&allow), black_box(&cluster)));
    });
    c.bench_function("select/200 candidates + explain", |b| {
        b.iter(|| select(black_box(&set), black_box(&strict), black_box(&cluster)).explain());
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
