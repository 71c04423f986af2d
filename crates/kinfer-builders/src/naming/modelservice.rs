//! otterscale model-operator's name rules for ModelService children, so kinfer adopts the
//! objects it created (`../shared/reference/modelservice/NOTES.md` section b rows 1, 9-23).
//!
//! Contract: upstream's name whenever upstream could have created the object (the parent's
//! name is a valid label value, at most 63 characters, because upstream puts it in labels);
//! for longer names, which upstream never served (its objects were rejected), kinfer's hashed
//! [`super::child_name`] form. The EPP family uses upstream's `SanitizeDNS1035Label`
//! ([`super::sanitize_dns1035`]: identical for every valid object name); every other child
//! uses the raw name.

use super::types::{Dns1035Label, Dns1123Subdomain, NameError};
use super::{DNS1123_LABEL_MAX, child_name, sanitize_dns1035};

/// Whether upstream could serve `parent` (its name is also a label value).
fn upstream_fits(parent: &str) -> bool {
    parent.len() <= DNS1123_LABEL_MAX
}

/// Row 19/20: the InferencePool and the HTTPRoute, `<ms>`.
pub fn pool_name(parent: &str) -> Result<Dns1123Subdomain, NameError> {
    if upstream_fits(parent) {
        return Dns1123Subdomain::new(parent);
    }
    Ok(child_name(&[parent], &[parent], DNS1123_LABEL_MAX)?.into())
}

/// Rows 1-2 and 22: the role Deployment and its PodMonitor, `<ms>-decode` / `<ms>-prefill`.
pub fn role_name(parent: &str, role: &str) -> Result<Dns1123Subdomain, NameError> {
    if upstream_fits(parent) {
        return Dns1123Subdomain::new(format!("{parent}-{role}"));
    }
    Ok(child_name(&[parent, role], &[parent], DNS1123_LABEL_MAX)?.into())
}

/// Row 9: the EPP (Deployment, Service, ServiceAccount, Role, RoleBinding, DestinationRule,
/// ServiceMonitor), `<SanitizeDNS1035Label(ms)>-epp`.
pub fn epp_name(parent: &str) -> Result<Dns1035Label, NameError> {
    let name = format!("{}-epp", sanitize_dns1035(parent));
    if upstream_fits(parent) && name.len() <= DNS1123_LABEL_MAX {
        return Dns1035Label::new(name);
    }
    child_name(&[parent, "epp"], &[parent], DNS1123_LABEL_MAX)
}

/// Row 11: the EPP ConfigMap, `<epp>-config`.
pub fn epp_config_name(epp: &Dns1035Label) -> Result<Dns1123Subdomain, NameError> {
    Dns1123Subdomain::new(format!("{epp}-config"))
}

/// Row 15: the metrics token Secret, `<epp>-sa-metrics-reader-secret`.
pub fn epp_token_secret_name(epp: &Dns1035Label) -> Result<Dns1123Subdomain, NameError> {
    Dns1123Subdomain::new(format!("{epp}-sa-metrics-reader-secret"))
}

/// The RoleBinding of the shipped leader-election ClusterRole, `<epp>-leader-election` (upstream
/// puts those rules in the Role `<epp>`; GAIE names its binding alike).
pub fn epp_leader_election_binding_name(epp: &Dns1035Label) -> Result<Dns1123Subdomain, NameError> {
    Dns1123Subdomain::new(format!("{epp}-leader-election"))
}

/// Row 17: the metrics-auth ClusterRoleBinding (and upstream's ClusterRole),
/// `<namespace>-<epp>`.
///
/// Upstream's rule: `-` joins two names that may contain `-`, so namespace `a-b` with EPP
/// `c-epp` and namespace `a` with EPP `b-c-epp` share a ClusterRoleBinding. Kept for adoption (the
/// objects have no owner and upstream's finalizer deletes them by this name); the caller must
/// not delete or overwrite such an object whose binding subject is another namespace's EPP.
pub fn epp_cluster_rbac_name(
    namespace: &str,
    epp: &Dns1035Label,
) -> Result<Dns1123Subdomain, NameError> {
    Dns1123Subdomain::new(format!("{namespace}-{epp}"))
}
