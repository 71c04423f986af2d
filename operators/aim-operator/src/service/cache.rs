//! Service caching (NOTES row 20): the AIMTemplateCache a service runs from, its `Cache`
//! component and the volume mounts its artifacts give the InferenceService. Pure.
//!
//! Contract:
//! - The mode is `spec.caching.mode` normalised (legacy `Always`/`Auto` are Shared, `Never`
//!   Dedicated), Shared when unset. Both modes cache: the InferenceService is created only
//!   once the cache is Ready (upstream KW #353), and mounts each cached model at
//!   `/workspace/cache/<modelId>`.
//! - Shared: named `<template>-<hash(namespace)>`, applied without an owner reference and
//!   labelled `aim.eai.amd.com/service=<keeper>`. One cache serves every Shared service of the
//!   template in the namespace; its keeper is the first of them by name (services being
//!   deleted excluded; the others are known by their `status.resolvedTemplate`), which keeps
//!   it applied with its settings, so the spec follows changes and does not depend on which
//!   service reconciled first (when the keeper goes, the next takes over on its next
//!   reconcile). The others create it only while it is absent and otherwise
//!   use it as it is, so services never rewrite each other's cache. Dedicated:
//!   `<template>-<service>-<hash(uid)>` (upstream's name, so existing caches keep theirs),
//!   owned by the service, always applied; when a cut makes that the name of a cache of
//!   another template (the service's cache of its previous template), the name hashing both
//!   full names too (`<cut>-<hash(uid, template, service)>`).
//! - The cache's spec: the template's name and scope (its model sources are read from the
//!   template by the cache controller), the storage class (service storage over runtime
//!   config), the env (template env < template caching env < service env), the runtime config
//!   name and the service's pull secrets.
//! - The `Cache` component follows the live cache: absent is Progressing `CreatingCache`,
//!   Ready is Ready, Failed/Degraded/NotAvailable keep that state with the reason and message
//!   of the cache's `ArtifactsReady` condition (so the artifact's root cause, e.g.
//!   `SourceAuthFailure`, reaches the service), anything else is Progressing `CacheNotReady`.

use std::collections::BTreeMap;

use kinfer_api::aim::common::{CachingMode, ResolutionScope, ResolvedReference, TemplateScope};
use kinfer_api::aim::{AIMService, AIMTemplateCache, AIMTemplateCacheSpec};
use kinfer_api::phase::Phase;
use kinfer_builders::kserve::CacheMount;
use kinfer_builders::naming::aim as names;
use kinfer_state::health::ComponentHealth;
use kinfer_state::{CategorizedError, ComponentState, ErrorCategory, Reason};
use kube::ResourceExt;
use kube::api::ObjectMeta;

use super::fetch::TemplateInfo;
use crate::runtime_config::Resolved;
use crate::scheme;

/// The cache component (`CacheReady`).
pub const CACHE: &str = "Cache";
/// `aim.eai.amd.com/service`: the service that created a template cache (the finalizer
/// removes that service's non-Ready caches).
pub const SERVICE_LABEL: &str = scheme::labels::SERVICE;
/// The template cache's condition that explains its state.
pub const ARTIFACTS_READY: &str = "ArtifactsReady";

/// The service's caching mode; see the module contract.
pub fn mode(svc: &AIMService) -> CachingMode {
    svc.spec
        .caching
        .as_ref()
        .map_or(CachingMode::Shared, |c| c.mode.normalized())
}

/// What the service does about its cache.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheChoice {
    /// The cache's name.
    pub name: String,
    /// Shared or dedicated.
    pub mode: CachingMode,
    /// The cache to apply (`None`: an existing shared cache, used as it is).
    pub desired: Option<AIMTemplateCache>,
    /// The volume mounts, once the cache is Ready.
    pub mounts: Option<Vec<CacheMount>>,
    /// For `status.cache.templateCacheRef`, once the cache exists.
    pub reference: Option<ResolvedReference>,
}

/// The name of the cache `svc` runs template `t` from, given the live `caches` (`None`: no
/// valid name, an error [`compose`] reports).
pub fn name_for(svc: &AIMService, t: &TemplateInfo, caches: &[AIMTemplateCache]) -> Option<String> {
    cache_name(svc, t, mode(svc), caches).ok()
}

/// See the module contract: a Dedicated service whose upstream-named cache serves another
/// template runs `t` from the name that is `t`'s alone.
fn cache_name(
    svc: &AIMService,
    t: &TemplateInfo,
    mode: CachingMode,
    caches: &[AIMTemplateCache],
) -> Result<String, String> {
    let ns = svc.namespace().unwrap_or_default();
    let name = match mode {
        CachingMode::Shared => names::shared_template_cache_name(&t.name, &ns),
        CachingMode::Dedicated => {
            let (service, uid) = (svc.name_any(), svc.uid().unwrap_or_default());
            let upstream = names::dedicated_template_cache_name(&t.name, &service, &uid);
            let taken = upstream.as_ref().is_ok_and(|n| {
                caches
                    .iter()
                    .any(|c| c.name_any() == n.as_str() && !serves(c, t))
            });
            if taken {
                names::dedicated_template_cache_name_of_template(&t.name, &service, &uid)
            } else {
                upstream
            }
        }
    };
    name.map(|n| n.to_string()).map_err(|e| e.to_string())
}

/// The cache spec for a service running `t`; see the module contract.
pub fn desired(
    svc: &AIMService,
    t: &TemplateInfo,
    rc: Option<&Resolved>,
    name: &str,
    mode: CachingMode,
) -> AIMTemplateCache {
    let caching_env = t.caching.as_ref().map_or(&[][..], |c| c.env.as_slice());
    let storage_class = svc
        .spec
        .storage
        .as_ref()
        .and_then(|s| s.default_storage_class_name.clone())
        .or_else(|| {
            rc.and_then(|r| r.spec.storage.as_ref())
                .and_then(|s| s.default_storage_class_name.clone())
        });
    AIMTemplateCache {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: svc.namespace(),
            labels: Some(BTreeMap::from([(
                SERVICE_LABEL.to_owned(),
                scheme::label_value(&svc.name_any()),
            )])),
            ..ObjectMeta::default()
        },
        spec: AIMTemplateCacheSpec {
            download_image: None,
            env: crate::env::merge(&[&t.spec.env, caching_env, &svc.spec.env]),
            image_pull_secrets: svc.spec.image_pull_secrets.clone(),
            mode,
            // Left to the cache controller, which reads them from the template each time,
            // so a re-discovered template is followed (a spec list would freeze them).
            model_sources: Vec::new(),
            runtime_config_name: svc.spec.runtime_config_name.clone(),
            storage_class_name: storage_class,
            template_name: t.name.clone(),
            template_scope: scope_of(t),
        },
        status: None,
    }
}

fn health(state: ComponentState, reason: &str, message: String) -> ComponentHealth {
    ComponentHealth::with_state(CACHE, state, Reason::custom(reason.to_owned()), message)
        .downstream()
}

fn mounts(cache: &AIMTemplateCache) -> Vec<CacheMount> {
    cache
        .status
        .iter()
        .flat_map(|s| s.artifacts.values())
        .filter_map(|a| {
            Some(CacheMount {
                claim_name: a.persistent_volume_claim.clone()?,
                model_id: a.model.clone(),
            })
        })
        .collect()
}

fn live_health(cache: &AIMTemplateCache) -> ComponentHealth {
    let name = cache.name_any();
    let status = cache.status.as_ref();
    let phase = status.map(|s| s.status).unwrap_or_default();
    let why = status
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == ARTIFACTS_READY))
        .map(|c| (c.reason.clone(), c.message.clone()));
    let (reason, detail) = why.unwrap_or_default();
    let detail = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    let state = match phase {
        Phase::Ready => {
            return health(
                ComponentState::Ready,
                "CacheReady",
                format!("template cache {name} is Ready"),
            );
        }
        Phase::Failed => ComponentState::Failed,
        Phase::Degraded => ComponentState::Degraded,
        Phase::NotAvailable => ComponentState::NotAvailable,
        Phase::Pending | Phase::Progressing => {
            return health(
                ComponentState::Progressing,
                "CacheNotReady",
                // Not the cache's message: it changes with every download step.
                format!("waiting for template cache {name}"),
            );
        }
    };
    let reason = if reason.is_empty() {
        "CacheFailed".to_owned()
    } else {
        reason
    };
    health(
        state,
        &reason,
        format!("template cache {name} is {phase}{detail}"),
    )
}

/// Whether the live cache `c` is a cache of template `t` (same name and scope).
fn serves(c: &AIMTemplateCache, t: &TemplateInfo) -> bool {
    c.spec.template_name == t.name && c.spec.template_scope == scope_of(t)
}

/// The `templateScope` a cache of `t` carries.
fn scope_of(t: &TemplateInfo) -> TemplateScope {
    match t.scope {
        ResolutionScope::Cluster => TemplateScope::Cluster,
        _ => TemplateScope::Namespace,
    }
}

/// Whether `svc` keeps the shared cache of `t` applied; see the module contract.
fn keeps_shared_cache(svc: &AIMService, t: &TemplateInfo, peers: &[AIMService]) -> bool {
    let me = svc.name_any();
    let reference = t.reference();
    !peers.iter().any(|p| {
        let uses_it = p
            .status
            .as_ref()
            .and_then(|s| s.resolved_template.as_ref())
            .is_some_and(|r| r.name == reference.name && r.scope == reference.scope);
        p.name_any() < me
            && uses_it
            && mode(p) == CachingMode::Shared
            && p.metadata.deletion_timestamp.is_none()
    })
}

/// The cache of a service running template `t`: the choice and the `Cache` component.
pub fn compose(
    svc: &AIMService,
    t: &TemplateInfo,
    rc: Option<&Resolved>,
    caches: &[AIMTemplateCache],
    peers: &[AIMService],
) -> (ComponentHealth, Option<CacheChoice>) {
    let mode = mode(svc);
    let name = match cache_name(svc, t, mode, caches) {
        Ok(n) => n,
        Err(e) => {
            let error = CategorizedError::new(
                ErrorCategory::InvalidSpec,
                format!("template cache name: {e}"),
            )
            .with_reason(Reason::custom("NameTooLong"));
            return (ComponentHealth::new(CACHE).downstream().error(error), None);
        }
    };
    let live = caches.iter().find(|c| c.name_any() == name);
    if let Some(other) = live.filter(|c| !serves(c, t)) {
        // Another template's cache holds the name (created by hand, or by an operator
        // naming caches differently): never mount its volumes, never apply over it.
        let message = format!(
            "template cache {name} exists for template {} ({:?}), not {}: rename or delete it",
            other.spec.template_name, other.spec.template_scope, t.name
        );
        let health = health(ComponentState::Failed, "CacheNameTaken", message);
        let choice = CacheChoice {
            name,
            mode,
            desired: None,
            mounts: None,
            reference: None,
        };
        return (health, Some(choice));
    }
    let planned = match (mode, live) {
        (CachingMode::Shared, Some(_)) if !keeps_shared_cache(svc, t, peers) => None,
        _ => Some(desired(svc, t, rc, &name, mode)),
    };
    let (health, mounts, reference) = match live {
        None => (
            health(
                ComponentState::Progressing,
                "CreatingCache",
                format!("creating {mode:?} template cache {name}"),
            ),
            None,
            None,
        ),
        Some(c) => {
            let h = live_health(c);
            let ready = h.effective_state() == ComponentState::Ready;
            let reference = ResolvedReference {
                kind: Some("AIMTemplateCache".into()),
                name: Some(name.clone()),
                namespace: c.namespace(),
                scope: Some(ResolutionScope::Namespace),
                uid: c.uid(),
            };
            (h, ready.then(|| mounts(c)), Some(reference))
        }
    };
    (
        health,
        Some(CacheChoice {
            name,
            mode,
            desired: planned,
            mounts,
            reference,
        }),
    )
}

#[cfg(test)]
mod tests {
    use kinfer_api::aim::AIMServiceTemplate;
    use serde_json::json;

    use super::*;

    /// A namespace template of `name` (long names: the upstream rule cuts them).
    fn template(name: &str) -> TemplateInfo {
        let t: AIMServiceTemplate = serde_json::from_value(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"modelName": "m"}}))
        .expect("template");
        TemplateInfo::from(t)
    }

    fn dedicated_service() -> AIMService {
        serde_json::from_value(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
            "metadata": {"name": "svc-2", "namespace": "ns", "uid": "uid-svc-2"},
            "spec": {"model": {"name": "m"}, "caching": {"mode": "Dedicated"}}}))
        .expect("service")
    }

    /// The live cache `name` of template `t` for `svc`.
    fn live(svc: &AIMService, t: &TemplateInfo, name: &str) -> AIMTemplateCache {
        desired(svc, t, None, name, CachingMode::Dedicated)
    }

    #[test]
    fn a_dedicated_cache_keeps_upstreams_name_unless_its_previous_template_holds_it() {
        let stem = "amdenterpriseai-aim-matrix-model-0-8-5-1x-mi300x";
        let (lat, thr) = (
            template(&format!("{stem}-lat-fp8-db72")),
            template(&format!("{stem}-thr-fp16-fd35")),
        );
        let svc = dedicated_service();
        let upstream = |t: &TemplateInfo| {
            names::dedicated_template_cache_name(&t.name, "svc-2", "uid-svc-2")
                .expect("derives")
                .to_string()
        };
        assert_eq!(upstream(&lat), upstream(&thr), "the names collide upstream");

        // No cache yet, or the service's existing (upstream-named) cache of the same template:
        // upstream's name, so caches created before keep their downloads.
        assert_eq!(name_for(&svc, &lat, &[]), Some(upstream(&lat)));
        let previous = live(&svc, &lat, &upstream(&lat));
        let caches = [previous];
        assert_eq!(name_for(&svc, &lat, &caches), Some(upstream(&lat)));

        // The template changed: upstream's name holds the previous template's cache, so the
        // new one gets the name that is its alone and is created, not reported taken.
        let own = names::dedicated_template_cache_name_of_template(&thr.name, "svc-2", "uid-svc-2")
            .expect("derives")
            .to_string();
        assert_ne!(own, upstream(&thr));
        assert_eq!(name_for(&svc, &thr, &caches), Some(own.clone()));
        let (health, choice) = compose(&svc, &thr, None, &caches, &[]);
        let reason = health.reason.as_ref().map(ToString::to_string);
        assert_eq!(reason.as_deref(), Some("CreatingCache"), "{health:?}");
        let choice = choice.expect("a choice");
        assert_eq!(choice.name, own);
        let desired = choice.desired.expect("applied");
        assert_eq!(desired.spec.template_name, thr.name);
    }
}
