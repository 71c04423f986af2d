//! The restricted security context (Pod Security Standards "restricted") of everything kinfer
//! creates.
//!
//! Contract: pods run as non-root with the RuntimeDefault seccomp profile; containers drop ALL
//! capabilities and cannot escalate privileges; the root filesystem is read-only where the
//! workload allows (the caller says so, and mounts an `emptyDir` where it must write).

use k8s_openapi::api::core::v1::{
    Capabilities, PodSecurityContext, SeccompProfile, SecurityContext,
};
use serde::{Deserialize, Serialize};

/// The user, group and volume group a pod runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodIdentity {
    /// `runAsUser`.
    pub run_as_user: i64,
    /// `runAsGroup`.
    pub run_as_group: i64,
    /// `fsGroup`: group ownership of mounted volumes, so every pod sharing a cache can read
    /// what another wrote.
    pub fs_group: i64,
}

/// AIM's artifact downloader identity (`../shared/reference/aim/NOTES.md` row 22: UID, GID
/// and fsGroup 1000); the cache PVC's files belong to it, so every AIM pod that reads or
/// writes the cache uses it by default.
pub const AIM_CACHE_IDENTITY: PodIdentity = PodIdentity {
    run_as_user: 1000,
    run_as_group: 1000,
    fs_group: 1000,
};

/// The identity of ModelService engine and Endpoint Picker pods unless the operator is told
/// otherwise: distroless's `nonroot` (65532), which the EPP image declares. An explicit
/// non-root user lets images whose `USER` is root (`vllm/vllm-openai`) start under
/// `runAsNonRoot`, which refuses them when no user is set.
pub const SERVING_IDENTITY: PodIdentity = PodIdentity {
    run_as_user: 65532,
    run_as_group: 65532,
    fs_group: 65532,
};

/// [`SERVING_IDENTITY`], the default of the serving builders' `pod_identity`.
#[allow(clippy::unnecessary_wraps)] // a serde default of an `Option` field
pub fn serving_identity() -> Option<PodIdentity> {
    Some(SERVING_IDENTITY)
}

/// The pod-level restricted context as `identity`, or as the user the image or the platform
/// chooses when `None` (OpenShift's restricted SCC assigns one from the namespace's range).
pub fn pod_for(identity: Option<PodIdentity>) -> PodSecurityContext {
    identity.map_or_else(|| pod(None, None), pod_as)
}

impl Default for PodIdentity {
    fn default() -> Self {
        AIM_CACHE_IDENTITY
    }
}

/// The pod-level restricted context running as `identity`.
pub fn pod_as(identity: PodIdentity) -> PodSecurityContext {
    PodSecurityContext {
        run_as_group: Some(identity.run_as_group),
        ..pod(Some(identity.run_as_user), Some(identity.fs_group))
    }
}

/// The pod-level restricted context; `user` and `fs_group` when the image needs fixed IDs.
pub fn pod(user: Option<i64>, fs_group: Option<i64>) -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: user,
        run_as_group: user,
        fs_group,
        seccomp_profile: Some(runtime_default()),
        ..PodSecurityContext::default()
    }
}

/// The container-level restricted context.
pub fn container(read_only_root: bool) -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_owned()]),
            add: None,
        }),
        privileged: Some(false),
        read_only_root_filesystem: Some(read_only_root),
        run_as_non_root: Some(true),
        seccomp_profile: Some(runtime_default()),
        ..SecurityContext::default()
    }
}

fn runtime_default() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".to_owned(),
        localhost_profile: None,
    }
}
