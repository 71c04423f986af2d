//! What the operator owns, read in-process from the test cluster's store (no request, so the
//! fault injection and the counters see none of it): managed children by owner, and the check
//! that nothing of ours is left after deletion. Shared by the fault matrix and the bad-input
//! suite.

use std::collections::{BTreeMap, BTreeSet};

use kinfer_testkit::TestCluster;
use modelservice_operator::OptionalCrds;
use modelservice_operator::reconciler::{self, MANAGER};
use serde_json::Value;

/// `(group, plural)`.
pub type Kind = (String, String);

/// `(group, plural)` of every namespaced kind a ModelService owns: the listed child kinds and
/// the Endpoint Picker's token Secret (owned, not listed).
pub fn namespaced_kinds() -> Vec<Kind> {
    reconciler::child_kinds(OptionalCrds::all())
        .into_iter()
        .map(|k| (k.resource.group, k.resource.plural))
        .chain([(String::new(), "secrets".to_owned())])
        .collect()
}

/// The cluster-scoped RBAC kinds the operator creates and the finalizer cleans up (the
/// ClusterRoles it binds ship with the install), and ClusterRoles, which it must never create.
pub fn cluster_rbac_kinds() -> [Kind; 2] {
    [
        (
            "rbac.authorization.k8s.io".to_owned(),
            "clusterrolebindings".to_owned(),
        ),
        (
            "rbac.authorization.k8s.io".to_owned(),
            "clusterroles".to_owned(),
        ),
    ]
}

/// Whether the operator manages `o`.
pub fn managed(o: &Value) -> bool {
    o["metadata"]["labels"][kinfer_state::labels::MANAGED_BY] == MANAGER
}

pub use kinfer_testkit::operator::controllers;

/// Every managed namespaced object in `ns` whose controller is `uid`, as
/// `(group, plural, name)`; an object with more than one controller is an error.
pub fn owned_by(
    cluster: &TestCluster,
    ns: &str,
    uid: &str,
) -> Result<BTreeSet<(String, String, String)>, String> {
    let mut out = BTreeSet::new();
    for (group, plural) in namespaced_kinds() {
        for o in cluster.objects(&group, &plural) {
            if o["metadata"]["namespace"] != ns || !managed(&o) {
                continue;
            }
            let owners = controllers(&o);
            if owners.len() > 1 {
                return Err(format!(
                    "{plural} {}: {} controllers",
                    o["metadata"]["name"],
                    owners.len()
                ));
            }
            if owners.first().is_some_and(|r| r["uid"] == uid) {
                let name = o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                out.insert((group.clone(), plural.clone(), name));
            }
        }
    }
    Ok(out)
}

/// Managed namespaced objects per kind and controller UID, for kinds `kinds`, in `ns`.
pub fn count_by_owner(
    cluster: &TestCluster,
    ns: &str,
    kinds: &[Kind],
) -> BTreeMap<Kind, BTreeMap<String, usize>> {
    let mut out: BTreeMap<Kind, BTreeMap<String, usize>> = BTreeMap::new();
    for kind in kinds {
        let per_owner = out.entry(kind.clone()).or_default();
        for o in cluster.objects(&kind.0, &kind.1) {
            if o["metadata"]["namespace"] != ns || !managed(&o) {
                continue;
            }
            for owner in controllers(&o) {
                let uid = owner["uid"].as_str().unwrap_or_default().to_owned();
                *per_owner.entry(uid).or_default() += 1;
            }
        }
    }
    out
}

/// Nothing of ours is left: no ModelService (none held by a finalizer), no managed child, no
/// managed cluster RBAC.
pub fn gone(cluster: &TestCluster) -> Result<(), String> {
    if let Some(s) = cluster
        .objects("model.otterscale.io", "modelservices")
        .first()
    {
        return Err(format!(
            "{} left with finalizers {}",
            s["metadata"]["name"], s["metadata"]["finalizers"]
        ));
    }
    for (group, plural) in namespaced_kinds().into_iter().chain(cluster_rbac_kinds()) {
        if let Some(o) = cluster.objects(&group, &plural).iter().find(|o| managed(o)) {
            return Err(format!("{plural} {} left", o["metadata"]["name"]));
        }
    }
    Ok(())
}
