//! Which services and template caches a model or template change concerns, and the one helper
//! that wires a (namespaced, cluster) kind pair's shared watches into a controller.
//!
//! Why: re-enqueueing every service of a namespace (every service, for a cluster kind) on each
//! model or template event made 200 templates' discovery status changes re-enqueue 1,000
//! services each.
//!
//! Contract (`namespace` is the changed object's, `None` for the cluster kinds, which concern
//! every namespace; a deleted object is mapped like a live one):
//! - A model change concerns the services ([`model_concerns`]) that are not `Running` yet
//!   (they may be resolving), that resolved that model (`status.resolvedModel`, same name and
//!   scope), or that name it (`spec.model.name`) or its image (`spec.model.image`,
//!   `spec.model.custom.baseImage`: a new model with the image can make the resolution
//!   ambiguous).
//! - A template change concerns the services ([`template_concerns`]) that are not
//!   `Running` yet, that resolved or selected that template (`status.resolvedTemplate`), that
//!   name it (`spec.template.name`), or whose model is the template's model (its
//!   `spec.modelName` against `status.resolvedModel` and `spec.model.name`: a new or changed
//!   template of their model can change the selection).
//! - A template change concerns the template caches ([`template_concerns_cache`]) that cache that
//!   template (`spec.templateName`, with a scope that does not exclude the template's kind).
//! - A malformed object (one that does not deserialise) is known by name only: it concerns
//!   the objects that reference it by name and those not `Running` yet.

use std::sync::Arc;

use kinfer_api::aim::common::{ResolutionScope, ResolvedReference, TemplateScope};
use kinfer_api::aim::{AIMService, AIMServiceState, AIMTemplateCache};
use kube::runtime::Controller;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};

use super::Guarded;
use super::shared::SharedWatch;
use crate::model::ModelKind;
use crate::template::TemplateKind;

/// A changed model or template, from either scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (`None`: a cluster kind).
    pub namespace: Option<String>,
    /// Models: `spec.image`; templates: `spec.modelName` (`None` when malformed).
    pub key: Option<String>,
}

impl Changed {
    fn of<K: Resource>(g: &Guarded<K>, key: impl FnOnce(&K) -> String) -> Self {
        Self {
            name: g.meta().name.clone().unwrap_or_default(),
            namespace: g.meta().namespace.clone(),
            key: g.0.as_ref().ok().map(key),
        }
    }

    /// A change of an object known by name alone (a runtime config).
    pub fn named<K: Resource>(g: &Guarded<K>) -> Self {
        Self {
            key: None,
            ..Self::of(g, |_| String::new())
        }
    }

    /// A model change.
    pub fn model<K: ModelKind>(g: &Guarded<K>) -> Self {
        Self::of(g, |m| m.model_spec().image.trim().to_owned())
    }

    /// A template change.
    pub fn template<K: TemplateKind>(g: &Guarded<K>) -> Self {
        Self::of(g, |t| t.common().model_name.clone())
    }

    /// Whether `o` is where this change can matter (its namespace; anywhere for a cluster
    /// kind).
    pub fn in_scope<O: Resource>(&self, o: &O) -> bool {
        self.namespace.is_none() || o.meta().namespace == self.namespace
    }

    /// Whether `r` names this object (same name and scope; a reference without a scope
    /// matches either).
    fn named_by(&self, r: Option<&ResolvedReference>) -> bool {
        let scope = if self.namespace.is_some() {
            ResolutionScope::Namespace
        } else {
            ResolutionScope::Cluster
        };
        r.is_some_and(|r| {
            r.name.as_deref() == Some(self.name.as_str()) && r.scope.is_none_or(|s| s == scope)
        })
    }
}

fn running(s: &AIMService) -> bool {
    s.status
        .as_ref()
        .is_some_and(|st| st.status == AIMServiceState::Running)
}

fn resolved_model(s: &AIMService) -> Option<&ResolvedReference> {
    s.status.as_ref().and_then(|st| st.resolved_model.as_ref())
}

/// Whether a model change concerns `s`; see the module contract.
pub fn model_concerns(m: &Changed, s: &AIMService) -> bool {
    let spec = &s.spec.model;
    let image = |i: &str| m.key.as_deref() == Some(i.trim());
    m.in_scope(s)
        && (!running(s)
            || m.named_by(resolved_model(s))
            || spec.name.as_deref() == Some(m.name.as_str())
            || spec.image.as_deref().is_some_and(image)
            || spec.custom.as_ref().is_some_and(|c| image(&c.base_image)))
}

/// Whether a template change concerns `s`; see the module contract.
pub fn template_concerns(t: &Changed, s: &AIMService) -> bool {
    let model = t.key.as_deref();
    t.in_scope(s)
        && (!running(s)
            || t.named_by(
                s.status
                    .as_ref()
                    .and_then(|st| st.resolved_template.as_ref()),
            )
            || s.spec.template.as_ref().and_then(|x| x.name.as_deref()) == Some(t.name.as_str())
            || model.is_some_and(|m| {
                resolved_model(s).and_then(|r| r.name.as_deref()) == Some(m)
                    || s.spec.model.name.as_deref() == Some(m)
            }))
}

/// Whether a template change concerns template cache `c`; see the module contract.
pub fn template_concerns_cache(t: &Changed, c: &AIMTemplateCache) -> bool {
    let excluded = if t.namespace.is_some() {
        TemplateScope::Cluster
    } else {
        TemplateScope::Namespace
    };
    t.in_scope(c) && c.spec.template_name == t.name && c.spec.template_scope != excluded
}

/// A mapper for [`Pair::trigger`]: the objects of `store` that `concerns` says a change
/// concerns.
pub(super) fn concerned<K>(
    store: Store<Guarded<K>>,
    concerns: impl Fn(&Changed, &K) -> bool + Send + Sync + Clone + 'static,
) -> impl Fn(&Changed) -> Vec<ObjectRef<Guarded<K>>> + Send + Sync + Clone + 'static
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    Guarded<K>: Resource<DynamicType = ()>,
{
    move |changed: &Changed| {
        store
            .state()
            .iter()
            .filter_map(|g| g.0.as_ref().ok())
            .filter(|o| concerns(changed, o))
            .map(|o| super::object_ref::<K>(&o.name_any(), o.meta().namespace.as_deref()))
            .collect()
    }
}

/// How an object of kind `K` is seen as a change ([`Changed::model`], [`Changed::template`]).
pub(super) type ToChanged<K> = fn(&Guarded<K>) -> Changed;

/// A namespaced kind and its cluster-scoped twin (AIMModel and AIMClusterModel, the two
/// template kinds), each on its shared watch.
pub(super) struct Pair<'a, N, C>
where
    N: Resource<DynamicType = ()> + Clone + 'static,
    C: Resource<DynamicType = ()> + Clone + 'static,
{
    /// The namespaced kind's watch.
    pub namespaced: &'a SharedWatch<N>,
    /// The cluster kind's watch.
    pub cluster: &'a SharedWatch<C>,
}

impl<N, C> Pair<'_, N, C>
where
    N: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    N: Send + Sync + 'static,
    C: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    C: Send + Sync + 'static,
{
    /// `c` re-enqueued by both kinds' events (deletions included): each object is turned into
    /// a [`Changed`] by `of_n` / `of_c` and mapped to `c`'s objects by `map`.
    pub(super) fn trigger<K>(
        &self,
        c: Controller<Guarded<K>>,
        (of_n, of_c): (ToChanged<N>, ToChanged<C>),
        map: impl Fn(&Changed) -> Vec<ObjectRef<Guarded<K>>> + Send + Sync + Clone + 'static,
    ) -> Controller<Guarded<K>>
    where
        K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        K: Send + Sync + 'static,
    {
        let map_c = map.clone();
        c.watches_shared_stream(
            self.namespaced.subscribe(true),
            move |o: Arc<Guarded<N>>| map(&of_n(&o)),
        )
        .watches_shared_stream(self.cluster.subscribe(true), move |o: Arc<Guarded<C>>| {
            map_c(&of_c(&o))
        })
    }
}

#[cfg(test)]
mod tests {
    use kinfer_api::aim::{AIMClusterServiceTemplate, AIMModel};
    use serde_json::{Value, json};

    use super::*;

    fn from<K: serde::de::DeserializeOwned>(v: Value) -> K {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn service(name: &str, ns: &str, model: &Value, status: &Value) -> AIMService {
        from(
            json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMService",
            "metadata": {"name": name, "namespace": ns}, "spec": {"model": model}, "status": status}),
        )
    }

    fn reference(kind: &str, name: &str, ns: Option<&str>) -> Value {
        let scope = if ns.is_some() { "Namespace" } else { "Cluster" };
        json!({"kind": kind, "name": name, "namespace": ns, "scope": scope})
    }

    fn running(model: &Value, template: &Value) -> Value {
        json!({"status": "Running", "resolvedModel": model, "resolvedTemplate": template})
    }

    fn names(services: &[AIMService], hit: impl Fn(&AIMService) -> bool) -> Vec<String> {
        services
            .iter()
            .filter(|s| hit(s))
            .map(ResourceExt::name_any)
            .collect()
    }

    #[test]
    fn model_events_reach_only_the_services_concerned() {
        let m: Guarded<AIMModel> = from(json!({"apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMModel", "metadata": {"name": "m", "namespace": "ns"},
            "spec": {"image": " reg/m:1 "}}));
        let changed = Changed::model(&m);
        assert_eq!(changed.key.as_deref(), Some("reg/m:1"));
        let other = reference("AIMModel", "o", Some("ns"));
        let t = reference("AIMServiceTemplate", "t", Some("ns"));
        let services = vec![
            service(
                "resolved",
                "ns",
                &json!({"image": "x"}),
                &running(&reference("AIMModel", "m", Some("ns")), &t),
            ),
            service("by-name", "ns", &json!({"name": "m"}), &running(&other, &t)),
            service(
                "by-image",
                "ns",
                &json!({"image": "reg/m:1"}),
                &running(&other, &t),
            ),
            service(
                "custom",
                "ns",
                &json!({"custom": {"baseImage": "reg/m:1", "hardware": {}, "modelSources": []}}),
                &running(&other, &t),
            ),
            service(
                "starting",
                "ns",
                &json!({"name": "o"}),
                &json!({"status": "Starting"}),
            ),
            service("new", "ns", &json!({"name": "o"}), &Value::Null),
            service(
                "unrelated",
                "ns",
                &json!({"name": "o"}),
                &running(&other, &t),
            ),
            // The cluster model of the same name is another model.
            service(
                "cluster-m",
                "ns",
                &json!({"image": "x"}),
                &running(&reference("AIMClusterModel", "m", None), &t),
            ),
            service(
                "elsewhere",
                "other",
                &json!({"name": "m"}),
                &json!({"status": "Starting"}),
            ),
        ];
        assert_eq!(
            names(&services, |s| model_concerns(&changed, s)),
            [
                "resolved", "by-name", "by-image", "custom", "starting", "new"
            ]
        );
    }

    #[test]
    fn template_events_reach_only_the_services_concerned() {
        let t: Guarded<AIMClusterServiceTemplate> = from(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMClusterServiceTemplate",
            "metadata": {"name": "t"}, "spec": {"modelName": "m"}}));
        let changed = Changed::template(&t);
        assert_eq!(
            (changed.namespace.as_deref(), changed.key.as_deref()),
            (None, Some("m"))
        );
        let m = reference("AIMClusterModel", "m", None);
        let o = reference("AIMClusterModel", "o", None);
        let other_t = reference("AIMClusterServiceTemplate", "x", None);
        let mut named = service("named", "b", &json!({"name": "o"}), &running(&o, &other_t));
        named.spec.template = Some(from(json!({"name": "t"})));
        let services = vec![
            service(
                "selected",
                "a",
                &json!({"name": "o"}),
                &running(&o, &reference("AIMClusterServiceTemplate", "t", None)),
            ),
            named,
            service(
                "same-model",
                "b",
                &json!({"image": "i"}),
                &running(&m, &other_t),
            ),
            service(
                "names-model",
                "c",
                &json!({"name": "m"}),
                &running(&o, &other_t),
            ),
            service(
                "starting",
                "c",
                &json!({"name": "o"}),
                &json!({"status": "Pending"}),
            ),
            service(
                "unrelated",
                "a",
                &json!({"name": "o"}),
                &running(&o, &other_t),
            ),
            // A namespace template of the same name is another template.
            service(
                "ns-t",
                "a",
                &json!({"name": "o"}),
                &running(&o, &reference("AIMServiceTemplate", "t", Some("a"))),
            ),
        ];
        assert_eq!(
            names(&services, |s| template_concerns(&changed, s)),
            ["selected", "named", "same-model", "names-model", "starting"]
        );
    }

    #[test]
    fn a_malformed_template_reaches_the_services_naming_it_and_those_starting() {
        let t: Guarded<kinfer_api::aim::AIMServiceTemplate> = from(json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMServiceTemplate",
            "metadata": {"name": "t", "namespace": "a"}, "spec": {"modelName": 7}}));
        assert!(t.0.is_err());
        let changed = Changed::template(&t);
        let m = reference("AIMModel", "m", Some("a"));
        let services = vec![
            service(
                "selected",
                "a",
                &json!({"name": "m"}),
                &running(&m, &reference("AIMServiceTemplate", "t", Some("a"))),
            ),
            service(
                "same-model",
                "a",
                &json!({"name": "m"}),
                &running(&m, &reference("AIMServiceTemplate", "x", Some("a"))),
            ),
            service(
                "starting",
                "a",
                &json!({"name": "m"}),
                &json!({"status": "Starting"}),
            ),
            service(
                "elsewhere",
                "b",
                &json!({"name": "m"}),
                &json!({"status": "Starting"}),
            ),
        ];
        assert_eq!(
            names(&services, |s| template_concerns(&changed, s)),
            ["selected", "starting"]
        );
    }

    #[test]
    fn template_events_reach_the_caches_of_that_template() {
        let cache = |name: &str, ns: &str, template: &str, scope: &str| -> AIMTemplateCache {
            from(
                json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMTemplateCache",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"templateName": template, "templateScope": scope}}),
            )
        };
        let caches = [
            cache("ns", "a", "t", "Namespace"),
            cache("cluster", "a", "t", "Cluster"),
            cache("unknown", "b", "t", "Unknown"),
            cache("other", "a", "x", "Namespace"),
        ];
        let names = |c: &Changed| -> Vec<String> {
            caches
                .iter()
                .filter(|x| template_concerns_cache(c, x))
                .map(ResourceExt::name_any)
                .collect()
        };
        let ns_t = Changed {
            name: "t".into(),
            namespace: Some("a".into()),
            key: None,
        };
        let cluster_t = Changed {
            name: "t".into(),
            namespace: None,
            key: None,
        };
        assert_eq!(names(&ns_t), ["ns"]);
        assert_eq!(names(&cluster_t), ["cluster", "unknown"]);
    }
}
