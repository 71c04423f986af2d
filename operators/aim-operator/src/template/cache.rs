//! Template-side caching (NOTES row 20): a namespace template with `spec.caching.enabled`
//! caches its own model sources, so the weights are on a volume before any service asks.
//! Pure.
//!
//! Contract:
//! - Only AIMServiceTemplate has `spec.caching` (an AIMTemplateCache is namespaced: a cluster
//!   template has nowhere to put one).
//! - With caching enabled and the model sources known (discovered, or inline in the spec) the
//!   template applies an AIMTemplateCache named exactly like the template, owned by it (it
//!   goes with the template, and is pruned when caching is turned off), mode `Shared` (its
//!   artifacts have no owner, so the caches of the services using the template reuse them),
//!   env the template's `env` with `spec.caching.env` over it by name (the layering of service
//!   caches), the template's runtime config and pull secrets. Before the sources are first
//!   known nothing is applied (the cache would only wait); once the cache exists it stays
//!   planned while the sources are unknown again (a re-discovery after a spec change), so it
//!   is not pruned and recreated, which would run its finalizer on downloads in flight.
//! - A cache of that name that is not the template's (a user's, e.g. upstream sample 10) is
//!   left alone: nothing is applied and `CacheWarm` is False with reason `CacheNameTaken`;
//!   caching is optional, so the template itself does not fail.
//! - The template's own status does not wait for the cache: selection and serving go on while
//!   the download runs (a service's cache waits for the same artifacts). The cache's state is
//!   reported in the domain condition `CacheWarm` and `status.resolvedCache` names the cache
//!   once it exists.

use kinfer_api::aim::common::{CachingMode, ResolutionScope, ResolvedReference, TemplateScope};
use kinfer_api::aim::template::AIMTemplateCachingConfig;
use kinfer_api::aim::{AIMServiceTemplateSpecCommon, AIMTemplateCache, AIMTemplateCacheSpec};
use kinfer_api::phase::Phase;
use kube::ResourceExt;
use kube::api::ObjectMeta;

/// The domain condition that reports the template's cache.
pub const CACHE_WARM: &str = "CacheWarm";

/// The template's cache: what to apply and what exists.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateCache {
    /// The cache to apply (`None` until the model sources are known, or when the name is
    /// taken).
    pub desired: Option<AIMTemplateCache>,
    /// The live cache, when it exists and is the template's.
    pub live: Option<AIMTemplateCache>,
    /// A cache of the template's name exists that is not the template's.
    pub name_taken: bool,
}

/// What exists under the cache's name.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LiveCache {
    /// Nothing.
    #[default]
    Absent,
    /// The template's own cache.
    Own(Box<AIMTemplateCache>),
    /// Somebody else's cache (no controller reference to the template).
    Foreign,
}

/// The cache of template `name` in `namespace`, when caching is enabled; see the module
/// contract. `sources_known`: the model sources are discovered or inline.
pub fn compose(
    (name, namespace): (&str, &str),
    spec: &AIMServiceTemplateSpecCommon,
    caching: Option<&AIMTemplateCachingConfig>,
    sources_known: bool,
    live: LiveCache,
) -> Option<TemplateCache> {
    let caching = caching.filter(|c| c.enabled)?;
    let (live, name_taken) = match live {
        LiveCache::Absent => (None, false),
        LiveCache::Own(c) => (Some(*c), false),
        LiveCache::Foreign => (None, true),
    };
    let env = crate::env::merge(&[&spec.env, &caching.env]);
    let wanted = !name_taken && (sources_known || live.is_some());
    let desired = wanted.then(|| AIMTemplateCache {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        spec: AIMTemplateCacheSpec {
            download_image: None,
            env,
            image_pull_secrets: spec.image_pull_secrets.clone(),
            mode: CachingMode::Shared,
            // Read from the template by the cache controller each time (a spec list would
            // freeze them).
            model_sources: Vec::new(),
            runtime_config_name: spec.runtime_config_name.clone(),
            storage_class_name: None,
            template_name: name.to_owned(),
            template_scope: TemplateScope::Namespace,
        },
        status: None,
    });
    Some(TemplateCache {
        desired,
        live,
        name_taken,
    })
}

impl TemplateCache {
    /// `status.resolvedCache`: the live cache.
    pub fn reference(&self) -> Option<ResolvedReference> {
        self.live.as_ref().map(|c| ResolvedReference {
            kind: Some("AIMTemplateCache".into()),
            name: Some(c.name_any()),
            namespace: c.namespace(),
            scope: Some(ResolutionScope::Namespace),
            uid: c.uid(),
        })
    }

    /// The `CacheWarm` condition: (true, reason, message).
    pub fn condition(&self) -> (bool, &'static str, String) {
        if self.name_taken {
            return (
                false,
                "CacheNameTaken",
                "an AIMTemplateCache of the template's name exists that is not the template's; \
                 it is left alone"
                    .into(),
            );
        }
        match (&self.live, &self.desired) {
            (None, None) => (
                false,
                "AwaitingModelSources",
                "the cache is created once the model sources are known".into(),
            ),
            (None, Some(d)) => (
                false,
                "CreatingCache",
                format!("creating template cache {}", d.name_any()),
            ),
            (Some(c), _) => {
                let phase = c.status.as_ref().map(|s| s.status).unwrap_or_default();
                if phase == Phase::Ready {
                    (
                        true,
                        "CacheReady",
                        format!("template cache {} is Ready", c.name_any()),
                    )
                } else {
                    (
                        false,
                        "CacheNotReady",
                        format!("template cache {} is {phase}", c.name_any()),
                    )
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kinfer_api::env::EnvVar;

    use super::*;

    fn enabled() -> AIMTemplateCachingConfig {
        AIMTemplateCachingConfig {
            enabled: true,
            env: Vec::new(),
        }
    }

    /// Template `t` in `ns` with a default spec and caching enabled.
    fn enabled_with(sources_known: bool, live: LiveCache) -> TemplateCache {
        let spec = AIMServiceTemplateSpecCommon::default();
        compose(("t", "ns"), &spec, Some(&enabled()), sources_known, live)
            .unwrap_or_else(|| panic!("caching is enabled"))
    }

    fn env(name: &str) -> EnvVar {
        serde_json::from_value(serde_json::json!({"name": name, "value": "v"}))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn only_an_enabled_template_with_known_sources_applies_its_cache() {
        let spec = AIMServiceTemplateSpecCommon {
            env: vec![env("TEMPLATE")],
            runtime_config_name: Some("rc".into()),
            ..AIMServiceTemplateSpecCommon::default()
        };
        let off = AIMTemplateCachingConfig::default();
        assert_eq!(
            compose(("t", "ns"), &spec, Some(&off), true, LiveCache::Absent),
            None
        );
        assert_eq!(
            compose(("t", "ns"), &spec, None, true, LiveCache::Absent),
            None
        );

        let on = enabled();
        let waiting = compose(("t", "ns"), &spec, Some(&on), false, LiveCache::Absent).unwrap();
        assert_eq!(waiting.desired, None);
        assert_eq!(waiting.condition().1, "AwaitingModelSources");

        let c = compose(("t", "ns"), &spec, Some(&on), true, LiveCache::Absent).unwrap();
        let d = c.desired.clone().unwrap();
        assert_eq!(d.name_any(), "t", "named exactly like the template");
        assert_eq!(d.spec.template_name, "t");
        assert_eq!(d.spec.mode, CachingMode::Shared);
        assert_eq!(
            d.spec.env[0].name, "TEMPLATE",
            "the template's env by default"
        );
        assert_eq!(d.spec.runtime_config_name.as_deref(), Some("rc"));
        assert_eq!(c.condition().1, "CreatingCache");
        assert_eq!(c.reference(), None);

        let with_env = AIMTemplateCachingConfig {
            enabled: true,
            env: vec![env("CACHING")],
        };
        let c = compose(("t", "ns"), &spec, Some(&with_env), true, LiveCache::Absent).unwrap();
        let names: Vec<String> = c
            .desired
            .unwrap()
            .spec
            .env
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(
            names,
            ["TEMPLATE", "CACHING"],
            "caching.env layered over the template's env"
        );
    }

    #[test]
    fn caching_env_overrides_the_template_env_by_name() {
        let mut over = env("TEMPLATE");
        over.value = Some("caching".into());
        let spec = AIMServiceTemplateSpecCommon {
            env: vec![env("TEMPLATE")],
            ..AIMServiceTemplateSpecCommon::default()
        };
        let on = AIMTemplateCachingConfig {
            enabled: true,
            env: vec![over],
        };
        let c = compose(("t", "ns"), &spec, Some(&on), true, LiveCache::Absent).unwrap();
        let env = c.desired.unwrap().spec.env;
        assert_eq!(env.len(), 1);
        assert_eq!(env[0].value.as_deref(), Some("caching"));
    }

    #[test]
    fn an_existing_cache_stays_planned_while_the_sources_are_rediscovered() {
        let live = AIMTemplateCache::new("t", AIMTemplateCacheSpec::default());
        let c = enabled_with(false, LiveCache::Own(Box::new(live)));
        assert!(c.desired.is_some(), "not pruned during re-discovery");
    }

    #[test]
    fn a_foreign_cache_of_the_name_is_left_alone_without_failing() {
        let c = enabled_with(true, LiveCache::Foreign);
        assert_eq!(c.desired, None);
        assert_eq!(c.reference(), None);
        let (ok, reason, _) = c.condition();
        assert!(!ok);
        assert_eq!(reason, "CacheNameTaken");
    }

    #[test]
    fn the_live_cache_is_reported() {
        let mut live = AIMTemplateCache::new("t", AIMTemplateCacheSpec::default());
        live.metadata.namespace = Some("ns".into());
        live.metadata.uid = Some("u".into());
        let c = enabled_with(true, LiveCache::Own(Box::new(live.clone())));
        assert_eq!(c.condition().1, "CacheNotReady");
        assert_eq!(c.reference().unwrap().uid.as_deref(), Some("u"));
        live.status = Some(kinfer_api::aim::template_cache::AIMTemplateCacheStatus {
            status: Phase::Ready,
            ..Default::default()
        });
        let c = enabled_with(true, LiveCache::Own(Box::new(live)));
        assert_eq!(
            c.condition(),
            (true, "CacheReady", "template cache t is Ready".into())
        );
    }
}
