//! The selection filters, applied to one candidate at a time.
//!
//! Contract: [`check`] returns the first failing filter, in this order: (1) status must be
//! Ready; (2) the profile type must be optimized unless `allowUnoptimized` (preview,
//! unoptimized and unknown are all filtered); (3) the service's overrides: metric and
//! precision must equal the template's (case-insensitively; a template without the value does
//! not match), the GPU model must equal the template's after normalisation and the GPU count
//! the template's, except that a template which pins no model (count 0) passes that override;
//! every mismatching override is reported; (4) the template's GPU model must be present in the
//! cluster; templates without a GPU model pass.

use std::collections::BTreeSet;

use crate::candidate::{Candidate, ProfileType, Request, or_absent};
use crate::gpu::GpuModel;
use crate::verdict::{OverrideField, OverrideMismatch, Rejection};

/// Applies the filters in order; `Err` holds the first one that rejects `c`.
pub(crate) fn check(
    c: &Candidate,
    request: &Request,
    cluster_gpus: &BTreeSet<GpuModel>,
) -> Result<(), Rejection> {
    if let Some(status) = c.status.not_ready() {
        return Err(Rejection::NotReady(status));
    }
    if c.profile_type != Some(ProfileType::Optimized) && !request.allow_unoptimized {
        return Err(Rejection::Unoptimized(c.profile_type));
    }
    let mismatches = override_mismatches(c, request);
    if !mismatches.is_empty() {
        return Err(Rejection::OverridesNotMatched(mismatches));
    }
    match &c.gpu_model {
        Some(model) if !cluster_gpus.contains(model) => {
            Err(Rejection::GpuNotInCluster(model.clone()))
        }
        _ => Ok(()),
    }
}

fn override_mismatches(c: &Candidate, request: &Request) -> Vec<OverrideMismatch> {
    let mut out = Vec::new();
    if let Some(want) = &request.metric
        && c.metric.as_ref() != Some(want)
    {
        out.push(OverrideMismatch {
            field: OverrideField::Metric,
            wanted: want.to_string(),
            actual: or_absent(c.metric.as_ref()),
        });
    }
    if let Some(want) = &request.precision
        && c.precision.as_ref() != Some(want)
    {
        out.push(OverrideMismatch {
            field: OverrideField::Precision,
            wanted: want.to_string(),
            actual: or_absent(c.precision.as_ref()),
        });
    }
    if let (Some(want), Some(have)) = (&request.gpu_model, &c.gpu_model)
        && want != have
    {
        out.push(OverrideMismatch {
            field: OverrideField::GpuModel,
            wanted: want.to_string(),
            actual: have.to_string(),
        });
    }
    if let Some(want) = request.gpu_count.filter(|n| *n > 0)
        && c.gpu_count > 0
        && c.gpu_count != want
    {
        out.push(OverrideMismatch {
            field: OverrideField::GpuCount,
            wanted: want.to_string(),
            actual: c.gpu_count.to_string(),
        });
    }
    out
}
