//! The AIM label keys (`aim.eai.amd.com/*`), spelled as upstream's aim-engine spells them
//! (`internal/constants`), so objects the upstream operator created are recognised by ours and
//! the other way round.
//!
//! Contract: every AIM label key the operator writes or selects on is defined here once; the
//! controller labels `aim.eai.amd.com/<controller>.name` are the reconcile engine's (its label
//! scheme) and [`TEMPLATE_CACHE_NAME`] is the template-cache controller's one, written
//! explicitly on shared artifacts because the engine stamps it only on owned children. No
//! older spelling is read: none ever shipped (the operator was never released with another).

/// The AIM label domain.
pub const DOMAIN: &str = crate::aim::GROUP;
/// `aim.eai.amd.com/model`: the model a generated template belongs to.
pub const MODEL: &str = "aim.eai.amd.com/model";
/// `aim.eai.amd.com/origin`: how an object came to be (`auto-generated`, `derived`).
pub const ORIGIN: &str = "aim.eai.amd.com/origin";
/// The value of [`ORIGIN`] on objects the operator generates.
pub const ORIGIN_AUTO_GENERATED: &str = "auto-generated";
/// The value of [`ORIGIN`] on templates derived from a service's overrides.
pub const ORIGIN_DERIVED: &str = "derived";
/// `aim.eai.amd.com/template.alias`: a custom template's declared name.
pub const TEMPLATE_ALIAS: &str = "aim.eai.amd.com/template.alias";
/// `aim.eai.amd.com/model-source`: the AIMClusterModelSource a catalog model came from.
pub const MODEL_SOURCE: &str = "aim.eai.amd.com/model-source";
/// `aim.eai.amd.com/service`: the AIMService a template cache (or an inference pod) belongs
/// to; a service's finalizer removes the non-Ready caches carrying its name.
pub const SERVICE: &str = "aim.eai.amd.com/service";
/// `aim.eai.amd.com/custom-model`: `"true"` on the AIMModel a service's inline custom model
/// created.
pub const CUSTOM_MODEL: &str = "aim.eai.amd.com/custom-model";
/// `aim.eai.amd.com/template`: the template a discovery Job or inference pod runs.
pub const TEMPLATE: &str = "aim.eai.amd.com/template";
/// `aim.eai.amd.com/template.name`: the template whose model source an artifact caches.
pub const TEMPLATE_NAME: &str = "aim.eai.amd.com/template.name";
/// `aim.eai.amd.com/template.scope`: `Namespace` or `Cluster`, the scope of that template.
pub const TEMPLATE_SCOPE: &str = "aim.eai.amd.com/template.scope";
/// `aim.eai.amd.com/template.index`: the index of that model source in the template.
pub const TEMPLATE_INDEX: &str = "aim.eai.amd.com/template.index";
/// `aim.eai.amd.com/template-cache.name`: the template cache that created an artifact (its
/// finalizer removes the non-Ready artifacts carrying its name).
pub const TEMPLATE_CACHE_NAME: &str = "aim.eai.amd.com/template-cache.name";
/// `template-created` (no domain, upstream's backward-compatible marker): `"true"` on
/// artifacts a template cache created.
pub const TEMPLATE_CREATED: &str = "template-created";
