//! Preference ranking of candidates that passed every filter.
//!
//! Contract: a candidate's [`RankKey`] is compared lexicographically, lower is better, on
//! scope (namespace before cluster), profile type (optimized, preview, unoptimized), GPU model
//! (the [`Preferences`] order), metric (latency, throughput) and precision (fp4, int4, fp8,
//! int8, fp16, bf16, fp32). A value missing from its order, or absent, takes the same
//! [`UNKNOWN`] rank: unknown values tie with each other and rank after every known value.

use std::fmt;

use crate::candidate::{Candidate, Metric, Precision, Scope, or_absent};
use crate::gpu::{DEFAULT_GPU_PREFERENCE, GpuModel};

/// Rank of a value missing from its preference order.
pub const UNKNOWN: u32 = u32::MAX;

/// The GPU preference order. [`Default`] is [`DEFAULT_GPU_PREFERENCE`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Preferences {
    gpu_order: Vec<GpuModel>,
}

impl Default for Preferences {
    fn default() -> Self {
        Preferences::with_gpu_order(DEFAULT_GPU_PREFERENCE)
    }
}

impl Preferences {
    /// A custom GPU order, best first. Names are normalised; a repeated model keeps its first
    /// position; blank names are dropped.
    pub fn with_gpu_order<I>(order: I) -> Self
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let mut gpu_order: Vec<GpuModel> = Vec::new();
        for model in order.into_iter().filter_map(|m| GpuModel::new(m.as_ref())) {
            if !gpu_order.contains(&model) {
                gpu_order.push(model);
            }
        }
        Preferences { gpu_order }
    }

    /// The GPU order, best first.
    pub fn gpu_order(&self) -> &[GpuModel] {
        &self.gpu_order
    }

    /// The candidate's rank key.
    pub fn rank(&self, c: &Candidate) -> RankKey {
        let pos = |p: Option<usize>| p.and_then(|p| u32::try_from(p).ok()).unwrap_or(UNKNOWN);
        RankKey {
            scope: match c.scope {
                Scope::Namespace => 0,
                Scope::Cluster => 1,
            },
            profile_type: pos(c.profile_type.map(|p| p as usize)),
            gpu: pos(c
                .gpu_model
                .as_ref()
                .and_then(|m| self.gpu_order.iter().position(|g| g == m))),
            metric: pos(c.metric.as_ref().and_then(Metric::preference)),
            precision: pos(c.precision.as_ref().and_then(Precision::preference)),
        }
    }
}

/// A candidate's position on each preference key; compared lexicographically, lower is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RankKey {
    /// 0 namespace, 1 cluster.
    pub scope: u32,
    /// Profile type position, or [`UNKNOWN`].
    pub profile_type: u32,
    /// GPU preference position, or [`UNKNOWN`].
    pub gpu: u32,
    /// Metric position, or [`UNKNOWN`].
    pub metric: u32,
    /// Precision position, or [`UNKNOWN`].
    pub precision: u32,
}

impl RankKey {
    /// The most significant key on which `self` and `other` differ.
    pub fn first_difference(&self, other: &RankKey) -> Option<RankField> {
        RankField::ALL
            .into_iter()
            .find(|f| f.position(self) != f.position(other))
    }
}

/// One ranking key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RankField {
    /// Namespace before cluster.
    Scope,
    /// optimized, preview, unoptimized.
    ProfileType,
    /// The GPU preference order.
    Gpu,
    /// latency, throughput.
    Metric,
    /// fp4 … fp32.
    Precision,
}

impl RankField {
    /// Every key, most significant first.
    pub const ALL: [RankField; 5] = [
        RankField::Scope,
        RankField::ProfileType,
        RankField::Gpu,
        RankField::Metric,
        RankField::Precision,
    ];

    fn position(self, key: &RankKey) -> u32 {
        match self {
            RankField::Scope => key.scope,
            RankField::ProfileType => key.profile_type,
            RankField::Gpu => key.gpu,
            RankField::Metric => key.metric,
            RankField::Precision => key.precision,
        }
    }

    /// The candidate's value for this key, for messages ([`ABSENT`](crate::ABSENT) when
    /// absent).
    pub fn value(self, c: &Candidate) -> String {
        match self {
            RankField::Scope => c.scope.to_string(),
            RankField::ProfileType => or_absent(c.profile_type),
            RankField::Gpu => or_absent(c.gpu_model.as_ref()),
            RankField::Metric => or_absent(c.metric.as_ref()),
            RankField::Precision => or_absent(c.precision.as_ref()),
        }
    }
}

impl fmt::Display for RankField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RankField::Scope => "scope",
            RankField::ProfileType => "profile type",
            RankField::Gpu => "GPU",
            RankField::Metric => "metric",
            RankField::Precision => "precision",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidate::ProfileType;

    #[test]
    fn orders() {
        let p = Preferences::default();
        let base = Candidate::new("a");
        let key = |c: &Candidate| p.rank(c);
        assert!(key(&base.clone().gpu("MI355X", 1)) < key(&base.clone().gpu("MI300X", 1)));
        assert!(key(&base.clone().gpu("MI210", 1)) < key(&base.clone().gpu("B200", 1)));
        assert!(key(&base.clone().gpu("L40S", 1)) < key(&base.clone().gpu("T4", 1)));
        assert_eq!(
            key(&base.clone().gpu("T4", 1)),
            key(&base.clone().gpu("V100", 1))
        );
        assert!(key(&base.clone().metric("latency")) < key(&base.clone().metric("throughput")));
        assert!(key(&base.clone().precision("fp4")) < key(&base.clone().precision("int4")));
        assert!(key(&base.clone().precision("bf16")) < key(&base.clone().precision("fp32")));
        assert!(key(&base.clone().precision("fp32")) < key(&base.clone().precision("auto")));
        assert_eq!(key(&base.clone().precision("auto")), key(&base));
        let preview = base.clone().profile(Some(ProfileType::Preview));
        let unopt = base.clone().profile(Some(ProfileType::Unoptimized));
        assert!(key(&base) < key(&preview) && key(&preview) < key(&unopt));
        assert!(key(&unopt) < key(&base.clone().profile(None)));
        let cluster = base.clone().scope(Scope::Cluster);
        assert!(key(&unopt) < key(&cluster));
        assert_eq!(
            key(&base).first_difference(&key(&cluster)),
            Some(RankField::Scope)
        );
    }

    #[test]
    fn custom_gpu_order() {
        let p = Preferences::with_gpu_order(["h100", "Instinct MI300X", "H100", " "]);
        assert_eq!(p.gpu_order().len(), 2);
        let h100 = p.rank(&Candidate::new("a").gpu("NVIDIA-H100-80GB-HBM3", 1));
        let mi300x = p.rank(&Candidate::new("a").gpu("MI300X", 1));
        assert!(h100 < mi300x);
    }
}
