//! Build: the resolved inputs to the objects one ModelService should own.
//!
//! Contract: pure (no client, no clock). Calls the `kinfer_builders` functions with the
//! resolved inputs, unchanged (routing-sidecar flags, tracing env, the PodMonitor endpoint and
//! the GKE provider are builder inputs). Objects whose CRD is missing were resolved away already.
//! Cluster-scoped RBAC is returned apart: it gets no owner reference and is removed by the
//! finalizer ([`crate::finalizer`]).

use kinfer_builders::deployment::{self, Role};
use kinfer_builders::{epp, gateway, inference_pool, monitoring};
use kinfer_state::pipeline::DesiredObject;

use super::BuildError;
use super::resolve::Resolved;

/// The names compose looks children up by.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Names {
    /// `<ms>-decode`.
    pub decode: String,
    /// `<ms>-prefill` when `spec.prefill` is set.
    pub prefill: Option<String>,
    /// `<ms>-epp` (sanitised).
    pub epp: String,
    /// `<ms>` (InferencePool and HTTPRoute).
    pub pool: String,
    /// `<namespace>-<epp>`, when metrics auth asks for cluster RBAC.
    pub cluster_rbac: Option<String>,
}

/// What one ModelService should own, plus what the user should be told.
#[derive(Debug, Clone, Default)]
pub struct Desired {
    /// Namespaced children, applied with a controller owner reference.
    pub owned: Vec<DesiredObject>,
    /// Cluster-scoped RBAC, applied without an owner reference.
    pub cluster: Vec<DesiredObject>,
    /// Names of the children.
    pub names: Names,
    /// Builder warnings (a user-set accelerator count).
    pub warnings: Vec<String>,
    /// An owned object of a kind the controllers do not watch (the token Secret) is planned:
    /// the plan asks for a periodic recheck.
    pub unwatched: bool,
}

/// Builds every object; the metrics-auth ClusterRoleBinding only with
/// `cluster_rbac` (false while the finalizer is missing, or when another ModelService holds
/// the name: NOTES section b row 17, upstream's name is ambiguous).
pub fn build(r: &Resolved, cluster_rbac: bool) -> Result<Desired, BuildError> {
    let mut d = Desired::default();
    let decode = deployment::model_deployment(&r.decode)?;
    d.warnings.extend(
        decode
            .warnings
            .iter()
            .map(|w| format!("spec.decode.resources: {w}")),
    );
    let decode_deployment = decode.deployment;
    d.names.decode = name_of(&decode_deployment.metadata);
    d.owned.push(DesiredObject::from_typed(&decode_deployment)?);
    if let Some(input) = &r.prefill {
        let prefill = deployment::model_deployment(input)?;
        d.warnings.extend(
            prefill
                .warnings
                .iter()
                .map(|w| format!("spec.prefill.resources: {w}")),
        );
        d.names.prefill = Some(name_of(&prefill.deployment.metadata));
        d.owned
            .push(DesiredObject::from_typed(&prefill.deployment)?);
    }

    let bundle = epp::epp_bundle(&r.epp)?;
    d.names.epp = name_of(&bundle.deployment.metadata);
    d.names.pool = inference_pool::pool_name(&r.parent)?.to_string();
    d.owned
        .push(DesiredObject::from_typed(&bundle.service_account)?);
    d.owned.push(DesiredObject::from_typed(&bundle.config_map)?);
    d.owned.push(DesiredObject::from_typed(&bundle.deployment)?);
    d.owned.push(DesiredObject::from_typed(&bundle.service)?);
    d.owned.push(DesiredObject::from_typed(&bundle.role)?);
    d.owned
        .push(DesiredObject::from_typed(&bundle.role_binding)?);
    if let Some(binding) = &bundle.leader_election_binding {
        d.owned.push(DesiredObject::from_typed(binding)?);
    }
    if let Some(secret) = &bundle.token_secret {
        d.unwatched = true;
        d.owned
            .push(DesiredObject::from_typed(secret)?.by_metadata());
    }
    if let Some(sm) = &bundle.service_monitor {
        d.owned.push(DesiredObject::from_typed(sm)?);
    }
    if let Some(dr) = &bundle.destination_rule {
        d.owned.push(DesiredObject::from_typed(dr)?);
    }
    if let Some(binding) = &bundle.cluster_role_binding {
        d.names.cluster_rbac = Some(name_of(&binding.metadata));
        if cluster_rbac {
            d.cluster.push(DesiredObject::from_typed(binding)?);
        }
    }

    if let Some(pool) = &r.pool {
        d.owned
            .push(DesiredObject::from_typed(&inference_pool::inference_pool(
                pool,
            )?)?);
    }
    if let Some(route) = &r.route {
        d.owned
            .push(DesiredObject::from_typed(&gateway::pool_route(route)?)?);
    }
    if let (Some(target), true) = (&r.monitoring, r.crds.monitoring) {
        let mut roles = vec![Role::Decode];
        if r.prefill.is_some() {
            roles.push(Role::Prefill);
        }
        for role in roles {
            let monitor = monitoring::role_pod_monitor(&r.parent, role, target)?;
            d.owned.push(DesiredObject::from_typed(&monitor)?);
        }
    }
    Ok(d)
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}
