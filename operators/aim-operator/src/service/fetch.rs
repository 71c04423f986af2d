//! Service fetch: everything an AIMService depends on.
//!
//! Contract: reads only, never fails as a whole (each item's error is captured). The models,
//! templates, template caches and peer services come from the informer caches when the
//! controllers run ([`crate::informers`]: a cached read may lag a write by the watch's latency;
//! every decision made from them is an idempotent apply), else from the API server. Reads the
//! runtime config (namespace over cluster); the AIMModels of the service's namespace and the
//! AIMClusterModels (to resolve by name or by image); the AIMServiceTemplates of the namespace
//! and the AIMClusterServiceTemplates (explicit lookup or selection happens in
//! [`super::compose`]); the Nodes' labels (informer cache when available) for the cluster's
//! GPU models; the AIMTemplateCaches and AIMServices of the namespace (a shared cache has no
//! owner; the first service by name that uses it keeps it applied) and the
//! InferenceService's pods (label `serving.kserve.io/inferenceservice`). A cache the service
//! would create is first looked up on the API server ([`confirm_cache`]). The InferenceService,
//! HTTPRoute, HPA and dedicated caches are read by the engine as children.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use kinfer_api::aim::common::AIMGpuRequirements;
use kinfer_api::aim::common::{ResolutionScope, ResolvedReference};
use kinfer_api::aim::template::{AIMProfileMetadata, AIMTemplateCachingConfig};
use kinfer_api::aim::{
    AIMClusterServiceTemplate, AIMModelSpec, AIMService, AIMServiceTemplate,
    AIMServiceTemplateSpecCommon, AIMServiceTemplateStatus, AIMTemplateCache,
};
use kinfer_api::phase::Phase;
use kinfer_select::gpu::ClusterGpus;
use kinfer_state::{CategorizeIn, CategorizedError, Direction};
use kube::api::ListParams;
use kube::{Api, Client, Resource, ResourceExt};

use crate::context::Context;
use crate::informers::Informers;
use crate::runtime_config::resolve;
use crate::scheme;

/// A model a service can use.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// `metadata.name`.
    pub name: String,
    /// For `status.resolvedModel`.
    pub reference: ResolvedReference,
    /// The spec.
    pub spec: AIMModelSpec,
    /// `status.status`.
    pub phase: Phase,
}

/// A template a service can use.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateInfo {
    /// `metadata.name`.
    pub name: String,
    /// Namespace or cluster.
    pub scope: ResolutionScope,
    /// Namespace (namespace templates).
    pub namespace: Option<String>,
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// The shared spec.
    pub spec: AIMServiceTemplateSpecCommon,
    /// `spec.caching` (namespace templates).
    pub caching: Option<AIMTemplateCachingConfig>,
    /// The status.
    pub status: Option<AIMServiceTemplateStatus>,
    /// Labelled `aim.eai.amd.com/origin=derived`.
    pub derived: bool,
}

impl TemplateInfo {
    /// `status.status` (Pending when unset).
    pub fn phase(&self) -> Phase {
        self.status.as_ref().map(|s| s.status).unwrap_or_default()
    }

    /// The discovered profile's metadata.
    pub fn profile_metadata(&self) -> Option<&AIMProfileMetadata> {
        self.status
            .as_ref()
            .and_then(|s| s.profile.as_ref())
            .and_then(|p| p.metadata.as_ref())
    }

    /// The GPU: `status.resolvedHardware`, else the spec's hardware.
    pub fn gpu(&self) -> Option<&AIMGpuRequirements> {
        self.status
            .as_ref()
            .and_then(|s| s.resolved_hardware.as_ref())
            .or(self.spec.parameters.hardware.as_ref())
            .and_then(|h| h.gpu.as_ref())
    }

    /// The metric: the spec's, else the discovered profile's.
    pub fn metric(&self) -> Option<String> {
        self.spec
            .parameters
            .metric
            .clone()
            .or_else(|| wire_name(self.profile_metadata().and_then(|m| m.metric)))
    }

    /// The precision: the spec's, else the discovered profile's.
    pub fn precision(&self) -> Option<String> {
        self.spec
            .parameters
            .precision
            .clone()
            .or_else(|| wire_name(self.profile_metadata().and_then(|m| m.precision)))
    }

    /// For `status.resolvedTemplate`.
    pub fn reference(&self) -> ResolvedReference {
        ResolvedReference {
            kind: Some(
                match self.scope {
                    ResolutionScope::Cluster => "AIMClusterServiceTemplate",
                    _ => "AIMServiceTemplate",
                }
                .into(),
            ),
            name: Some(self.name.clone()),
            namespace: self.namespace.clone(),
            scope: Some(self.scope),
            uid: self.uid.clone(),
        }
    }
}

/// An enum's serialised name (`latency`, `fp8`).
fn wire_name<T: serde::Serialize>(v: Option<T>) -> Option<String> {
    v.and_then(|v| serde_json::to_value(v).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
}

/// What the service's fetch step read.
#[derive(Debug)]
pub struct Fetched {
    /// The runtime config.
    pub runtime_config: resolve::Fetched,
    /// Namespace models then cluster models.
    pub models: Result<Vec<ModelInfo>, CategorizedError>,
    /// Namespace templates then cluster templates.
    pub templates: Result<Vec<TemplateInfo>, CategorizedError>,
    /// The GPU models the cluster's Nodes carry.
    pub gpus: Result<ClusterGpus, CategorizedError>,
    /// The namespace's template caches.
    pub caches: Result<Vec<AIMTemplateCache>, CategorizedError>,
    /// The namespace's services (who keeps a shared cache applied).
    pub peers: Result<Vec<AIMService>, CategorizedError>,
    /// The InferenceService's pods (empty without an InferenceService name).
    pub pods: Result<Vec<Pod>, CategorizedError>,
}

#[allow(clippy::needless_pass_by_value)] // used as `map_err(up)`
fn up(e: kube::Error) -> CategorizedError {
    e.categorize_in(Direction::Upstream)
}

fn model_ref(kind: &str, name: &str, ns: Option<&str>, uid: Option<String>) -> ResolvedReference {
    ResolvedReference {
        kind: Some(kind.into()),
        name: Some(name.into()),
        namespace: ns.map(str::to_owned),
        scope: Some(if ns.is_some() {
            ResolutionScope::Namespace
        } else {
            ResolutionScope::Cluster
        }),
        uid,
    }
}

async fn models(
    ctx: &Context,
    client: &Client,
    ns: &str,
) -> Result<Vec<ModelInfo>, CategorizedError> {
    let informers = &ctx.informers;
    let slots = (&informers.models, &informers.cluster_models);
    let (namespaced, cluster) = Informers::list_pair(client, ns, slots).await;
    let mut out: Vec<ModelInfo> = namespaced
        .map_err(up)?
        .into_iter()
        .map(|m| ModelInfo {
            name: m.name_any(),
            reference: model_ref("AIMModel", &m.name_any(), Some(ns), m.uid()),
            phase: m.status.as_ref().map(|s| s.status).unwrap_or_default(),
            spec: m.spec,
        })
        .collect();
    out.extend(cluster.map_err(up)?.into_iter().map(|m| ModelInfo {
        name: m.name_any(),
        reference: model_ref("AIMClusterModel", &m.name_any(), None, m.uid()),
        phase: m.status.as_ref().map(|s| s.status).unwrap_or_default(),
        spec: m.spec.0,
    }));
    Ok(out)
}

fn is_derived<K: Resource>(t: &K) -> bool {
    t.meta()
        .labels
        .as_ref()
        .and_then(|l| l.get(scheme::ORIGIN_LABEL))
        .is_some_and(|v| v == super::DERIVED)
}

impl From<AIMServiceTemplate> for TemplateInfo {
    fn from(t: AIMServiceTemplate) -> Self {
        Self {
            name: t.name_any(),
            scope: ResolutionScope::Namespace,
            namespace: t.namespace(),
            uid: t.uid(),
            derived: is_derived(&t),
            spec: t.spec.common,
            caching: t.spec.caching,
            status: t.status,
        }
    }
}

impl From<AIMClusterServiceTemplate> for TemplateInfo {
    fn from(t: AIMClusterServiceTemplate) -> Self {
        Self {
            name: t.name_any(),
            scope: ResolutionScope::Cluster,
            namespace: None,
            uid: t.uid(),
            derived: is_derived(&t),
            spec: t.spec.0,
            caching: None,
            status: t.status,
        }
    }
}

async fn templates(
    ctx: &Context,
    client: &Client,
    ns: &str,
) -> Result<Vec<TemplateInfo>, CategorizedError> {
    let informers = &ctx.informers;
    let slots = (&informers.templates, &informers.cluster_templates);
    let (namespaced, cluster) = Informers::list_pair(client, ns, slots).await;
    let mut out: Vec<TemplateInfo> = namespaced
        .map_err(up)?
        .into_iter()
        .map(TemplateInfo::from)
        .collect();
    out.extend(cluster.map_err(up)?.into_iter().map(TemplateInfo::from));
    Ok(out)
}

async fn gpus(ctx: &Context, client: &Client) -> Result<ClusterGpus, CategorizedError> {
    let labels: Vec<BTreeMap<String, String>> = if let Some(store) = &ctx.nodes
        && crate::informers::ready(store).await
    {
        store.state().iter().map(|n| n.labels().clone()).collect()
    } else {
        Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map_err(up)?
            .items
            .iter()
            .map(|n| n.labels().clone())
            .collect()
    };
    Ok(ClusterGpus::from_nodes(labels.iter()))
}

async fn caches(
    ctx: &Context,
    client: &Client,
    ns: &str,
) -> Result<Vec<AIMTemplateCache>, CategorizedError> {
    let api = Api::<AIMTemplateCache>::namespaced(client.clone(), ns);
    Informers::list(&ctx.informers.caches, api, Some(ns))
        .await
        .map_err(|e| e.categorize_in(Direction::Downstream))
}

async fn peers(
    ctx: &Context,
    client: &Client,
    ns: &str,
) -> Result<Vec<AIMService>, CategorizedError> {
    let api = Api::<AIMService>::namespaced(client.clone(), ns);
    Informers::list(&ctx.informers.services, api, Some(ns))
        .await
        .map_err(|e| e.categorize_in(Direction::Downstream))
}

async fn pods(
    ctx: &Context,
    client: &Client,
    ns: &str,
    isvc: Option<&str>,
) -> Result<Vec<Pod>, CategorizedError> {
    let Some(isvc) = isvc else {
        return Ok(Vec::new());
    };
    let label = super::runtime::ISVC_POD_LABEL;
    if let Some(store) = ctx.informers.pods.ready().await {
        return Ok(store
            .state()
            .iter()
            .filter(|p| p.meta().namespace.as_deref() == Some(ns))
            .filter(|p| p.labels().get(label).map(String::as_str) == Some(isvc))
            .map(|p| Pod::clone(p))
            .collect());
    }
    let lp = ListParams::default().labels(&format!("{label}={isvc}"));
    Api::<Pod>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .map(|l| l.items)
        .map_err(|e| e.categorize_in(Direction::Downstream))
}

/// Adds the cache `name` to `fetched.caches` when the read lacks it and the API server has
/// it. A cached read can lag a cache's creation by the watch's latency, and a cache the read
/// lacks is one the service would create: the server's answer lets the `CacheNameTaken`
/// guard ([`super::cache`]) see a cache someone created a moment ago, so the service never
/// applies over it.
pub async fn confirm_cache(client: &Client, namespace: &str, name: &str, fetched: &mut Fetched) {
    let Ok(caches) = fetched.caches.as_mut() else {
        return;
    };
    if caches.iter().any(|c| c.name_any() == name) {
        return;
    }
    match Api::<AIMTemplateCache>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
    {
        Ok(Some(live)) => caches.push(live),
        Ok(None) => {}
        Err(e) => fetched.caches = Err(e.categorize_in(Direction::Downstream)),
    }
}

/// Reads everything; see the module contract.
pub async fn fetch(
    ctx: &Context,
    client: &Client,
    namespace: &str,
    runtime_config: Option<&str>,
    isvc: Option<&str>,
) -> Fetched {
    let (rc, models, templates, gpus, (caches, peers), pods) = futures::join!(
        resolve::read(ctx, client, Some(namespace), runtime_config),
        models(ctx, client, namespace),
        templates(ctx, client, namespace),
        gpus(ctx, client),
        async {
            futures::join!(
                caches(ctx, client, namespace),
                peers(ctx, client, namespace)
            )
        },
        pods(ctx, client, namespace, isvc),
    );
    Fetched {
        runtime_config: rc,
        models,
        templates,
        gpus,
        caches,
        peers,
        pods,
    }
}
