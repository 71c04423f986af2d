//! Template cache fetch: the runtime config, the template's model sources (when the cache's
//! spec lists none) and the namespace's artifacts.
//!
//! Contract: reads only, each item's error captured. The template is looked up by
//! `spec.templateScope` (Namespace: the AIMServiceTemplate; Cluster: the
//! AIMClusterServiceTemplate; unset: namespace first, then cluster). Every AIMArtifact of the
//! namespace is read: a shared cache reuses artifacts it did not create. Both come from the
//! informer caches when the controllers run ([`crate::informers`]; the decisions made from
//! them are idempotent applies), else from the API server. A lagging read may apply again an
//! artifact another cache created a moment ago, under this cache's creator label: the
//! takeover rule of [`super::compose::artifacts`] brings the label back to the cache sorting
//! first, and the artifact's children never carry it ([`crate::artifact`]).

use kinfer_api::aim::common::{AIMModelSource, TemplateScope};
use kinfer_api::aim::{
    AIMArtifact, AIMClusterServiceTemplate, AIMServiceTemplate, AIMServiceTemplateStatus,
    AIMTemplateCache,
};
use kinfer_state::{CategorizeIn, CategorizedError, Direction};
use std::sync::Arc;

use kube::{Api, Client, ResourceExt};

use crate::context::Context;
use crate::informers::Informers;
use crate::runtime_config::resolve;

/// The template a cache caches.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateSources {
    /// `AIMServiceTemplate` or `AIMClusterServiceTemplate`.
    pub kind: &'static str,
    /// Inline sources, else the discovered ones.
    pub sources: Vec<AIMModelSource>,
    /// The template's `status.status` is Ready.
    pub ready: bool,
}

/// What the cache's fetch step read.
#[derive(Debug)]
pub struct Fetched {
    /// The runtime config.
    pub runtime_config: resolve::Fetched,
    /// The template (`None` when the spec lists the sources; `Ok(None)` when not found).
    pub template: Option<Result<Option<TemplateSources>, CategorizedError>>,
    /// The namespace's artifacts.
    pub artifacts: Result<Vec<AIMArtifact>, CategorizedError>,
}

fn sources(
    kind: &'static str,
    inline: Vec<AIMModelSource>,
    status: Option<AIMServiceTemplateStatus>,
) -> TemplateSources {
    let ready = status
        .as_ref()
        .is_some_and(|s| s.status == kinfer_api::phase::Phase::Ready);
    let sources = if inline.is_empty() {
        status.map(|s| s.model_sources).unwrap_or_default()
    } else {
        inline
    };
    TemplateSources {
        kind,
        sources,
        ready,
    }
}

/// The template `name` of `scope`, as a cache reads it (`Ok(None)`: not found).
pub(crate) async fn template(
    client: &Client,
    ns: &str,
    name: &str,
    scope: TemplateScope,
) -> Result<Option<TemplateSources>, kube::Error> {
    if scope != TemplateScope::Cluster
        && let Some(t) = Api::<AIMServiceTemplate>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await?
    {
        return Ok(Some(sources(
            "AIMServiceTemplate",
            t.spec.common.model_sources,
            t.status,
        )));
    }
    if scope == TemplateScope::Namespace {
        return Ok(None);
    }
    Ok(Api::<AIMClusterServiceTemplate>::all(client.clone())
        .get_opt(name)
        .await?
        .map(|t| {
            sources(
                "AIMClusterServiceTemplate",
                t.spec.0.model_sources,
                t.status,
            )
        }))
}

/// [`template`] from the informer caches when they are ready (the fetch step's read; the
/// finalizer's decisions read the API server).
async fn cached_template(
    ctx: &Context,
    client: &Client,
    ns: &str,
    name: &str,
    scope: TemplateScope,
) -> Result<Option<TemplateSources>, kube::Error> {
    let informers = &ctx.informers;
    let namespaced = if scope == TemplateScope::Cluster {
        Some(None)
    } else {
        Informers::get(&informers.templates, Some(ns), name).await
    };
    let found = match namespaced {
        None => return template(client, ns, name, scope).await,
        Some(Some(t)) => {
            let t = Arc::unwrap_or_clone(t);
            return Ok(Some(sources(
                "AIMServiceTemplate",
                t.spec.common.model_sources,
                t.status,
            )));
        }
        Some(None) if scope == TemplateScope::Namespace => return Ok(None),
        Some(None) => Informers::get(&informers.cluster_templates, None, name).await,
    };
    match found {
        None => template(client, ns, name, scope).await,
        Some(t) => Ok(t.map(|t| {
            let t = Arc::unwrap_or_clone(t);
            sources(
                "AIMClusterServiceTemplate",
                t.spec.0.model_sources,
                t.status,
            )
        })),
    }
}

/// Reads everything; see the module contract.
pub async fn fetch(ctx: &Context, client: &Client, cache: &AIMTemplateCache) -> Fetched {
    let ns = cache.namespace().unwrap_or_default();
    let spec = &cache.spec;
    let template_read = async {
        if spec.model_sources.is_empty() {
            Some(
                cached_template(ctx, client, &ns, &spec.template_name, spec.template_scope)
                    .await
                    .map_err(|e| e.categorize_in(Direction::Upstream)),
            )
        } else {
            None
        }
    };
    let artifacts = async {
        let api = Api::<AIMArtifact>::namespaced(client.clone(), &ns);
        Informers::list(&ctx.informers.artifacts, api, Some(&ns))
            .await
            .map_err(|e| e.categorize_in(Direction::Downstream))
    };
    let (runtime_config, template, artifacts) = futures::join!(
        resolve::read(ctx, client, Some(&ns), spec.runtime_config_name.as_deref()),
        template_read,
        artifacts,
    );
    Fetched {
        runtime_config,
        template,
        artifacts,
    }
}
