//! Plan: the desired objects of a valid ModelService as a [`PlanResult`].
//!
//! Contract: pure (no client, no clock, no randomness). Namespaced children are applied with a
//! controller owner reference (garbage-collected with the ModelService; the engine deletes the
//! ones no longer planned: a removed prefill role, disabled monitors, a dropped route); the
//! cluster RBAC is applied without one and removed by the finalizer ([`crate::finalizer`]); what
//! an earlier operator left for this one to replace is retired first ([`super::legacy`]). An
//! invalid spec plans nothing and fails with [`PlanError::InvalidSpec`], so existing children
//! keep serving until the spec is fixed. When an owned object of an unwatched kind is planned
//! (the Endpoint Picker's token Secret: watching Secrets would need cluster-wide list/watch of
//! every Secret), the plan asks to be run again after `recheck`, so a deleted or edited token
//! Secret is repaired within that interval; a steady recheck writes nothing.

use std::time::Duration;

use kinfer_state::pipeline::PlanResult;

use super::{PlanError, State};

/// Plan; see the module contract.
pub fn plan(state: &State, recheck: Duration) -> Result<PlanResult, PlanError> {
    if let Some(invalid) = &state.invalid {
        return Err(PlanError::InvalidSpec(invalid.clone()));
    }
    let Some(desired) = &state.desired else {
        return Err(PlanError::InvalidSpec(
            "the spec could not be resolved".to_owned(),
        ));
    };
    Ok(PlanResult {
        apply: desired.owned.clone(),
        apply_without_owner: desired.cluster.clone(),
        retire: state.retire.clone(),
        requeue_after: desired.unwatched.then_some(recheck),
        ..PlanResult::default()
    })
}
