//! Resolving a `runtimeConfigName` for a model, template or (later) service.
//!
//! Contract: [`fetch`] reads the namespace AIMRuntimeConfig (when the referrer is namespaced)
//! and the AIMClusterRuntimeConfig of that name, capturing each result; [`read`] does the same
//! from the informer caches when both are ready ([`crate::informers`]), else as [`fetch`]; [`resolve`] is pure:
//! both missing is fine for `default` (no config) and a MissingUpstream error with reason
//! `ConfigNotFound` for any other name (the engine turns it into `ConfigValid=False`,
//! `ReferenceNotFound`); otherwise the merged spec and a reference (scope Namespace, Cluster
//! or Merged). The component is `RuntimeConfig`, upstream.

use std::sync::Arc;

use kinfer_api::aim::common::{ResolutionScope, ResolvedReference};
use kinfer_api::aim::{AIMClusterRuntimeConfig, AIMRuntimeConfig, AIMRuntimeConfigSpec};
use kinfer_state::health::ComponentHealth;
use kinfer_state::{
    CategorizeIn, CategorizedError, ComponentState, Direction, ErrorCategory, FetchResult,
    LabelPropagation, Reason,
};
use kube::{Api, Client, ResourceExt};

use super::merge::merge;
use crate::context::Context;
use crate::informers::Informers;

/// The name used when a resource names no runtime config.
pub const DEFAULT_NAME: &str = "default";

/// The component name.
pub const COMPONENT: &str = "RuntimeConfig";

/// What [`fetch`] read.
#[derive(Debug)]
pub struct Fetched {
    /// The name looked up.
    pub name: String,
    /// The namespace config (`Ok(None)` when absent or the referrer is cluster-scoped).
    pub namespaced: FetchResult<AIMRuntimeConfig>,
    /// The cluster config.
    pub cluster: FetchResult<AIMClusterRuntimeConfig>,
}

/// A resolved runtime config.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The merged, migrated spec.
    pub spec: AIMRuntimeConfigSpec,
    /// What was resolved, for `status.resolvedRuntimeConfig`.
    pub reference: ResolvedReference,
}

impl Resolved {
    /// The label propagation rules of this config.
    pub fn propagation(&self) -> LabelPropagation {
        self.spec
            .label_propagation
            .as_ref()
            .map(|p| LabelPropagation {
                enabled: p.enabled,
                patterns: p.r#match.clone(),
            })
            .unwrap_or_default()
    }
}

/// The effective name: `name` unless empty, else `default`.
pub fn effective_name(name: Option<&str>) -> String {
    name.map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_NAME)
        .to_owned()
}

/// Reads both scopes.
pub async fn fetch(client: &Client, namespace: Option<&str>, name: Option<&str>) -> Fetched {
    let name = effective_name(name);
    let namespaced = match namespace {
        Some(ns) => {
            Api::<AIMRuntimeConfig>::namespaced(client.clone(), ns)
                .get_opt(&name)
                .await
        }
        None => Ok(None),
    };
    let cluster = Api::<AIMClusterRuntimeConfig>::all(client.clone())
        .get_opt(&name)
        .await;
    Fetched {
        name,
        namespaced,
        cluster,
    }
}

/// [`fetch`] from the informer caches when both are ready; see the module contract.
pub async fn read(
    ctx: &Context,
    client: &Client,
    namespace: Option<&str>,
    name: Option<&str>,
) -> Fetched {
    // A name no object can have is never put into a request path (`$(rm -rf /)`, `../x`): it
    // resolves to nothing, and the referrer's validation names the field.
    if name.is_some_and(|n| !kinfer_builders::naming::is_dns1123_subdomain(n)) {
        return Fetched {
            name: effective_name(name),
            namespaced: Ok(None),
            cluster: Ok(None),
        };
    }
    let effective = effective_name(name);
    let informers = &ctx.informers;
    let namespaced = match namespace {
        Some(ns) => Informers::get(&informers.runtime_configs, Some(ns), &effective).await,
        None => Some(None),
    };
    let cluster = Informers::get(&informers.cluster_runtime_configs, None, &effective).await;
    match (namespaced, cluster) {
        (Some(namespaced), Some(cluster)) => Fetched {
            name: effective,
            namespaced: Ok(namespaced.map(Arc::unwrap_or_clone)),
            cluster: Ok(cluster.map(Arc::unwrap_or_clone)),
        },
        _ => fetch(client, namespace, name).await,
    }
}

fn reference(
    kind: &str,
    name: &str,
    ns: Option<String>,
    uid: Option<String>,
    scope: ResolutionScope,
) -> ResolvedReference {
    ResolvedReference {
        kind: Some(kind.to_owned()),
        name: Some(name.to_owned()),
        namespace: ns,
        scope: Some(scope),
        uid,
    }
}

/// The component health and the resolved config; see the module contract.
pub fn resolve(f: &Fetched) -> (ComponentHealth, Option<Resolved>) {
    let mut errors = Vec::new();
    if let Err(e) = &f.namespaced {
        errors.push(e.categorize_in(Direction::Upstream));
    }
    if let Err(e) = &f.cluster {
        errors.push(e.categorize_in(Direction::Upstream));
    }
    if !errors.is_empty() {
        let mut h = ComponentHealth::new(COMPONENT).upstream();
        h.errors = errors;
        return (h, None);
    }
    let ns = f.namespaced.as_ref().ok().cloned().flatten();
    let cl = f.cluster.as_ref().ok().cloned().flatten();
    let reference = match (&ns, &cl) {
        (None, None) if f.name == DEFAULT_NAME => {
            let h = ComponentHealth::with_state(
                COMPONENT,
                ComponentState::Ready,
                Reason::custom("DefaultConfigNotFound"),
                "no runtime config named default; built-in defaults apply",
            )
            .upstream();
            return (h, None);
        }
        (None, None) => {
            let e = CategorizedError::new(
                ErrorCategory::MissingUpstreamDependency,
                format!(
                    "runtime config {:?} not found (neither AIMRuntimeConfig nor AIMClusterRuntimeConfig)",
                    f.name
                ),
            )
            .with_reason(Reason::custom("ConfigNotFound"));
            return (ComponentHealth::new(COMPONENT).upstream().error(e), None);
        }
        (Some(n), None) => reference(
            "AIMRuntimeConfig",
            &f.name,
            n.namespace(),
            n.uid(),
            ResolutionScope::Namespace,
        ),
        (None, Some(c)) => reference(
            "AIMClusterRuntimeConfig",
            &f.name,
            None,
            c.uid(),
            ResolutionScope::Cluster,
        ),
        (Some(n), Some(_)) => reference(
            "AIMRuntimeConfig",
            &f.name,
            n.namespace(),
            n.uid(),
            ResolutionScope::Merged,
        ),
    };
    let spec = merge(cl.as_ref().map(|c| &*c.spec), ns.as_ref().map(|n| &n.spec));
    let h = ComponentHealth::with_state(
        COMPONENT,
        ComponentState::Ready,
        Reason::custom("RuntimeConfigResolved"),
        format!("runtime config {} resolved", f.name),
    )
    .upstream();
    (h, Some(Resolved { spec, reference }))
}
