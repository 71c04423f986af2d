//! The identity an artifact's download pod reports its progress with: a ServiceAccount, a Role
//! and a RoleBinding, all named `<artifact>-status-updater-<h>` ([`progress_name`]). This is
//! the one home of the design; docs/aim.md describes the behaviour a user sees.
//!
//! Why: the downloader image (`ghcr.io/silogen/aim-artifact-downloader`, upstream's) writes
//! `status.progress` itself with `kubectl patch aimartifact <name> --subresource=status`
//! (NOTES row 22). Upstream grants that by binding a ClusterRole to the namespace's `default`
//! ServiceAccount, so every pod of the namespace may patch every artifact's status. Here the
//! grant is per artifact and per download: the Role allows `get` and `patch` on
//! `aimartifacts/status` of this one artifact (`resourceNames`), nothing else, and only the
//! download pod asks for the ServiceAccount's token (the ServiceAccount itself does not
//! automount it, so a pod naming it gets a token only by asking, as the download pod does).
//!
//! Contract:
//! - The three carry the artifact's standard labels (component `status-updater`); the Role's
//!   one rule is [`progress_rule`]; owner references are the caller's (the artifact).
//! - The ServiceAccount carries `account_pull_secrets`: the caller passes those of the
//!   namespace's `default` ServiceAccount, which the download pod would otherwise have run
//!   as, so a registry mirror configured there keeps working. Nothing else of `default` is
//!   copied (cloud workload identity annotations included): download credentials go through
//!   the artifact's `spec.env`.
//! - Lifecycle (the caller's): applied from the moment the download Job is planned (before
//!   it, by the engine's apply order) while the Job is neither Complete nor Failed, deleted
//!   once it is, so no credential outlives the download; a retry applies them again.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};

use crate::error::Error;
use crate::meta::{Parent, object_meta};
use crate::naming::{self, Dns1123Label};

/// The component label of the three objects, and the name's stage.
pub const PROGRESS_COMPONENT: &str = "status-updater";

/// The ServiceAccount, Role and RoleBinding of one download; see the module contract.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressReporter {
    /// The download pod's ServiceAccount.
    pub service_account: ServiceAccount,
    /// `get`/`patch` of this artifact's status.
    pub role: Role,
    /// The Role bound to the ServiceAccount.
    pub binding: RoleBinding,
}

/// The one name of the ServiceAccount, Role and RoleBinding: `[artifact, "status-updater"]`
/// hashed over the artifact's UID, by the rule of the artifact's other children.
pub fn progress_name(artifact: &str, uid: &str) -> Result<Dns1123Label, Error> {
    Ok(naming::aim::artifact_child_name(
        artifact,
        uid,
        PROGRESS_COMPONENT,
    )?)
}

/// The Role's only rule: `get` and `patch` of `aimartifacts/status`, for `artifact` only.
pub fn progress_rule(artifact: &str) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![kinfer_api::aim::GROUP.to_owned()]),
        resources: Some(vec!["aimartifacts/status".to_owned()]),
        resource_names: Some(vec![artifact.to_owned()]),
        verbs: vec!["get".to_owned(), "patch".to_owned()],
        non_resource_urls: None,
    }
}

/// The three objects for `parent` (the artifact, whose UID is `uid`), the ServiceAccount with
/// `account_pull_secrets`; see the module contract. An [`Error`] when the name cannot be made.
pub fn progress_reporter(
    parent: &Parent,
    uid: &str,
    account_pull_secrets: &[String],
) -> Result<ProgressReporter, Error> {
    let name = progress_name(parent.name.as_str(), uid)?;
    let ns = parent.namespace.as_str();
    let meta = || {
        object_meta(
            name.as_str(),
            Some(ns),
            parent.labels(crate::kserve::APP, PROGRESS_COMPONENT).all(),
            BTreeMap::new(),
        )
    };
    Ok(ProgressReporter {
        service_account: ServiceAccount {
            metadata: meta(),
            // The pod asks for its token (`automountServiceAccountToken` on the pod).
            automount_service_account_token: Some(false),
            image_pull_secrets: crate::pod::pull_secrets(account_pull_secrets),
            ..ServiceAccount::default()
        },
        role: Role {
            metadata: meta(),
            rules: Some(vec![progress_rule(parent.name.as_str())]),
        },
        binding: RoleBinding {
            metadata: meta(),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".to_owned(),
                kind: "Role".to_owned(),
                name: name.to_string(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".to_owned(),
                name: name.to_string(),
                namespace: Some(ns.to_owned()),
                api_group: None,
            }]),
        },
    })
}
