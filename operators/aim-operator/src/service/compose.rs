//! Service compose: model and template resolution, the routing decision. Pure.
//!
//! Contract:
//! - [`resolve_model`] (NOTES row 13): a previously resolved model is kept while it exists
//!   with the same UID and is Ready; `name`: namespace AIMModel, then AIMClusterModel, else
//!   MissingUpstream `ModelNotFound`; `image`: the models with that image, several is
//!   InvalidSpec `MultipleModelsFound` naming them, none plans an AIMModel named by the
//!   upstream rule (created without owner reference); `custom`: a namespace model with the
//!   same base image and sources, else one is planned (`<modelId>-<hash8>`). The component
//!   `Model` (upstream) follows the model's status (Degraded counts as Ready: some template
//!   works).
//! - [`resolve_template`] (NOTES rows 10-12): a previously resolved template is kept while it
//!   exists with the same UID and is Ready as services see it ([`super::selection::phase`]:
//!   an infrastructure error in the template's own reconcile does not count); an explicit name is looked up in the namespace
//!   (its derived name first when the service has overrides), then the cluster; otherwise
//!   [`kinfer_select::select`] ([`super::selection`]) over the model's namespace and cluster templates (derived ones
//!   excluded) with the cluster's GPUs and the overrides. Every outcome is the `Template`
//!   component with the selection's reason and one-line message naming the candidates:
//!   waiting (`TemplatesExistButNotReady`, no templates yet) is Pending, all filtered is
//!   MissingUpstream `TemplateNotFound`, a tie is InvalidSpec `TemplateSelectionAmbiguous`.
//!   With overrides a derived namespace template is planned from the base (namespace or
//!   cluster scope) and used once Ready.
//! - [`route`] (NOTES rows 17-18): routing on when the service or else the runtime config
//!   enables it; gateway, path template and timeout service over runtime config; annotations
//!   runtime config then service. No gateway is InvalidSpec `GatewayNotConfigured`; a path
//!   template that does not render is the `HTTPRoute` component Degraded with reason
//!   `PathTemplateInvalid` and no route.

use std::collections::BTreeMap;

use kinfer_api::aim::common::{AIMRuntimeParameters, ResolutionScope, ResolvedReference};
use kinfer_api::aim::model::AIMModelCustomConfig;
use kinfer_api::aim::{
    AIMModel, AIMModelSpec, AIMService, AIMServiceTemplate, AIMServiceTemplateSpec,
};
use kinfer_api::phase::Phase;
use kinfer_builders::gateway::{GatewayRef, PredictorRouteInput, Timeouts};
use kinfer_builders::naming::aim as names;
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use kinfer_select::gpu::ClusterGpus;
use kinfer_select::{Outcome, Scope};
use kinfer_state::health::ComponentHealth;
use kinfer_state::{CategorizedError, ComponentState, ErrorCategory, Reason};
use kube::ResourceExt;
use kube::api::ObjectMeta;

use super::fetch::{ModelInfo, TemplateInfo};
use super::path;
use crate::runtime_config::Resolved;
use crate::scheme;

/// The model component.
pub const MODEL: &str = "Model";
/// The template component.
pub const TEMPLATE: &str = "Template";
/// The route component.
pub const HTTP_ROUTE: &str = "HTTPRoute";

/// How the service gets its model.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelChoice {
    /// An existing model.
    Use(Box<ModelInfo>),
    /// A model to create (no owner reference).
    Create(Box<AIMModel>),
}

fn err(category: ErrorCategory, reason: &str, message: String) -> CategorizedError {
    CategorizedError::new(category, message).with_reason(Reason::custom(reason.to_owned()))
}

fn state(c: &str, s: ComponentState, reason: &str, message: String) -> ComponentHealth {
    ComponentHealth::with_state(c.to_owned(), s, Reason::custom(reason.to_owned()), message)
}

fn sticky<'a, T>(
    previous: Option<&ResolvedReference>,
    items: &'a [T],
    reference: impl Fn(&T) -> ResolvedReference,
    ready: impl Fn(&T) -> bool,
) -> Option<&'a T> {
    let p = previous?;
    p.uid.as_ref()?;
    items.iter().find(|i| {
        let r = reference(i);
        r.uid == p.uid && r.name == p.name && r.scope == p.scope && ready(i)
    })
}

fn model_health(m: &ModelInfo) -> ComponentHealth {
    let name = &m.name;
    let (s, reason) = match m.phase {
        Phase::Ready | Phase::Degraded => (ComponentState::Ready, "ModelResolved"),
        Phase::Pending | Phase::Progressing => (ComponentState::Progressing, "ModelNotReady"),
        Phase::NotAvailable => (ComponentState::NotAvailable, "ModelNotAvailable"),
        Phase::Failed => (ComponentState::Failed, "ModelFailed"),
    };
    state(MODEL, s, reason, format!("model {name} is {:?}", m.phase)).upstream()
}

fn new_model(
    name: &str,
    ns: &str,
    labels: BTreeMap<String, String>,
    spec: AIMModelSpec,
) -> AIMModel {
    AIMModel {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(ns.to_owned()),
            labels: (!labels.is_empty()).then_some(labels),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    }
}

/// The spec of the AIMModel a service naming `image` creates: the service's pull secrets,
/// ServiceAccount and runtime config go with it, as AIM Engine copies them, so a private
/// image's inspection uses the service's credentials.
fn image_model_spec(svc: &AIMService, image: &str) -> AIMModelSpec {
    AIMModelSpec {
        image: image.to_owned(),
        image_pull_secrets: svc.spec.image_pull_secrets.clone(),
        service_account_name: svc.spec.service_account_name.clone(),
        runtime_config_name: svc.spec.runtime_config_name.clone(),
        ..AIMModelSpec::default()
    }
}

/// Resolves the service's model; see the module contract.
pub fn resolve_model(
    svc: &AIMService,
    models: &[ModelInfo],
) -> (ComponentHealth, Option<ModelChoice>) {
    let ns = svc.namespace().unwrap_or_default();
    let previous = svc.status.as_ref().and_then(|s| s.resolved_model.as_ref());
    if let Some(m) = sticky(
        previous,
        models,
        |m| m.reference.clone(),
        |m| m.phase == Phase::Ready,
    ) {
        return (model_health(m), Some(ModelChoice::Use(Box::new(m.clone()))));
    }
    let spec = &svc.spec.model;
    let fail = |e: CategorizedError| (ComponentHealth::new(MODEL).upstream().error(e), None);
    let namespaced = |m: &&ModelInfo| m.reference.scope == Some(ResolutionScope::Namespace);
    if let Some(name) = &spec.name {
        let found = models
            .iter()
            .filter(|m| &m.name == name)
            .min_by_key(|m| !namespaced(m));
        return match found {
            Some(m) => (model_health(m), Some(ModelChoice::Use(Box::new(m.clone())))),
            None => fail(err(
                ErrorCategory::MissingUpstreamDependency,
                "ModelNotFound",
                format!(
                    "spec.model.name: no AIMModel {name:?} in namespace {ns} and no AIMClusterModel {name:?}"
                ),
            )),
        };
    }
    if let Some(image) = &spec.image {
        let image = image.trim();
        let matches: Vec<&ModelInfo> = models
            .iter()
            .filter(|m| m.spec.image.trim() == image)
            .collect();
        return match matches.as_slice() {
            [m] => (
                model_health(m),
                Some(ModelChoice::Use(Box::new((*m).clone()))),
            ),
            [] => match names::image_model_name(image) {
                Ok(name) => (
                    state(
                        MODEL,
                        ComponentState::Progressing,
                        "CreatingModel",
                        format!(
                            "creating AIMModel {name} for image {}",
                            kinfer_api::aim::shown(image)
                        ),
                    )
                    .upstream(),
                    Some(ModelChoice::Create(Box::new(new_model(
                        name.as_str(),
                        &ns,
                        BTreeMap::from([(
                            scheme::ORIGIN_LABEL.to_owned(),
                            scheme::AUTO_GENERATED.to_owned(),
                        )]),
                        image_model_spec(svc, image),
                    )))),
                ),
                // The only failure: no name and tag to derive from (the error would repeat
                // the whole value).
                Err(_) => fail(err(
                    ErrorCategory::InvalidSpec,
                    "InvalidImage",
                    format!(
                        "spec.model.image: {} is not an image reference",
                        kinfer_api::aim::shown(image)
                    ),
                )),
            },
            many => fail(err(
                ErrorCategory::InvalidSpec,
                "MultipleModelsFound",
                format!(
                    "spec.model.image: multiple models found with the same image {}: {}; name one in spec.model.name",
                    kinfer_api::aim::shown(image),
                    many.iter()
                        .map(|m| m.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        };
    }
    if let Some(custom) = &spec.custom {
        let same_sources = |m: &ModelInfo| {
            m.spec.model_sources.len() == custom.model_sources.len()
                && m.spec
                    .model_sources
                    .iter()
                    .zip(&custom.model_sources)
                    .all(|(a, b)| a.model_id == b.model_id && a.source_uri == b.source_uri)
        };
        if let Some(m) = models
            .iter()
            .filter(|m| namespaced(m))
            .find(|m| m.spec.image == custom.base_image && same_sources(m))
        {
            return (model_health(m), Some(ModelChoice::Use(Box::new(m.clone()))));
        }
        let first = custom.model_sources.first();
        let id = first.map_or("custom", |s| s.model_id.as_str());
        let uri = first.map(|s| s.source_uri.as_str()).unwrap_or_default();
        let name = names::generate_derived_name(
            &[id],
            &[custom.base_image.as_str().into(), uri.into()],
            8,
            63,
        );
        return match name {
            Ok(name) => {
                let labels = BTreeMap::from([
                    (scheme::labels::CUSTOM_MODEL.to_owned(), "true".to_owned()),
                    (
                        scheme::labels::SERVICE.to_owned(),
                        scheme::label_value(&svc.name_any()),
                    ),
                ]);
                let spec = AIMModelSpec {
                    image: custom.base_image.clone(),
                    model_sources: custom.model_sources.clone(),
                    custom: Some(AIMModelCustomConfig {
                        hardware: Some(custom.hardware.clone()),
                        ..AIMModelCustomConfig::default()
                    }),
                    ..AIMModelSpec::default()
                };
                (
                    state(
                        MODEL,
                        ComponentState::Progressing,
                        "CreatingModel",
                        format!("creating custom AIMModel {name}"),
                    )
                    .upstream(),
                    Some(ModelChoice::Create(Box::new(new_model(
                        name.as_str(),
                        &ns,
                        labels,
                        spec,
                    )))),
                )
            }
            Err(e) => fail(err(
                ErrorCategory::InvalidSpec,
                "InvalidCustomModel",
                format!("spec.model.custom: custom model name: {e}"),
            )),
        };
    }
    fail(err(
        ErrorCategory::InvalidSpec,
        "InvalidModelReference",
        "spec.model names no model (set name, image or custom)".into(),
    ))
}

/// The outcome of template resolution.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TemplateChoice {
    /// The Ready template to run with.
    pub template: Option<TemplateInfo>,
    /// The derived template to keep applied.
    pub derived: Option<AIMServiceTemplate>,
}

fn has_overrides(o: Option<&AIMRuntimeParameters>) -> bool {
    o.is_some_and(|o| o.metric.is_some() || o.precision.is_some() || o.hardware.is_some())
}

/// The derived template's name for `base` and the service's overrides.
pub fn derived_name(base: &str, o: &AIMRuntimeParameters) -> Result<Dns1123Label, String> {
    let gpu = o.hardware.as_ref().and_then(|h| h.gpu.as_ref());
    names::derived_template_name(
        base,
        names::Overrides {
            gpu_model: gpu.and_then(|g| g.model.as_deref()),
            gpu_count: gpu.and_then(|g| g.requests).map_or(0, i64::from),
            precision: o.precision.as_deref(),
            metric: o.metric.as_deref(),
        },
    )
    .map_err(|e| e.to_string())
}

/// The derived template: the base spec with the overrides, the service's pull secrets and
/// resources, caching on for Shared services (NOTES row 12).
pub fn derived_template(svc: &AIMService, base: &TemplateInfo, name: &str) -> AIMServiceTemplate {
    let mut common = base.spec.clone();
    if let Some(o) = &svc.spec.overrides {
        if o.metric.is_some() {
            common.parameters.metric.clone_from(&o.metric);
        }
        if o.precision.is_some() {
            common.parameters.precision.clone_from(&o.precision);
        }
        if let Some(h) = &o.hardware {
            let hw = common
                .parameters
                .hardware
                .get_or_insert_with(Default::default);
            if h.cpu.is_some() {
                hw.cpu.clone_from(&h.cpu);
            }
            if let Some(g) = &h.gpu {
                let target = hw.gpu.get_or_insert_with(Default::default);
                if g.model.is_some() {
                    target.model.clone_from(&g.model);
                    target.min_vram = None;
                }
                if g.min_vram.is_some() {
                    target.min_vram.clone_from(&g.min_vram);
                    target.model = None;
                }
                if g.requests.is_some() {
                    target.requests = g.requests;
                }
                target.resource_name.clone_from(&g.resource_name);
            }
        }
    }
    for s in &svc.spec.image_pull_secrets {
        if !common.image_pull_secrets.contains(s) {
            common.image_pull_secrets.push(s.clone());
        }
    }
    if svc.spec.resources.is_some() {
        common.resources.clone_from(&svc.spec.resources);
    }
    let shared = svc
        .spec
        .caching
        .as_ref()
        .is_none_or(|c| c.mode.normalized() == kinfer_api::aim::CachingMode::Shared);
    let caching = if shared {
        let mut c = base.caching.clone().unwrap_or_default();
        c.enabled = true;
        Some(c)
    } else {
        base.caching.clone()
    };
    AIMServiceTemplate {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: svc.namespace(),
            labels: Some(BTreeMap::from([(
                scheme::ORIGIN_LABEL.to_owned(),
                super::DERIVED.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        spec: AIMServiceTemplateSpec { common, caching },
        status: None,
    }
}

fn use_template(t: &TemplateInfo, how: &str) -> (ComponentHealth, Option<TemplateInfo>) {
    let scope = format!("{:?}", t.scope).to_lowercase();
    let phase = super::selection::phase(t);
    use_template_saying(t, format!("{how} {scope} template {} ({phase:?})", t.name))
}

/// The message of `svc`'s `TemplateReady` condition while it is True (`Resolved`).
fn resolved_message(svc: &AIMService) -> Option<String> {
    let kind = format!("{TEMPLATE}Ready");
    svc.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == kind && c.status == "True" && c.reason == "Resolved")
        .map(|c| c.message.clone())
}

fn use_template_saying(t: &TemplateInfo, msg: String) -> (ComponentHealth, Option<TemplateInfo>) {
    let phase = super::selection::phase(t);
    let (s, reason, ready) = match phase {
        Phase::Ready => (ComponentState::Ready, "Resolved", true),
        Phase::Pending | Phase::Progressing => {
            (ComponentState::Progressing, "TemplateNotReady", false)
        }
        Phase::NotAvailable => (ComponentState::NotAvailable, "TemplateNotAvailable", false),
        Phase::Degraded => (ComponentState::Degraded, "TemplateDegraded", false),
        Phase::Failed => (ComponentState::Failed, "TemplateFailed", false),
    };
    (
        state(TEMPLATE, s, reason, msg).upstream(),
        ready.then(|| t.clone()),
    )
}

/// Resolves the template; see the module contract.
pub fn resolve_template(
    svc: &AIMService,
    model: &ModelInfo,
    templates: &[TemplateInfo],
    gpus: &ClusterGpus,
) -> (ComponentHealth, TemplateChoice) {
    let previous = svc
        .status
        .as_ref()
        .and_then(|s| s.resolved_template.as_ref());
    if let Some(t) = sticky(previous, templates, TemplateInfo::reference, |t| {
        super::selection::phase(t) == Phase::Ready
    }) {
        // A kept Ready template keeps the message it was resolved with ("Selected …"): a
        // message turning into "keeping …" on the next reconcile cost every service a second
        // status write.
        let (h, template) = match resolved_message(svc) {
            Some(msg) if super::selection::phase(t) == Phase::Ready => use_template_saying(t, msg),
            _ => use_template(t, "keeping resolved"),
        };
        return (
            h,
            TemplateChoice {
                template,
                derived: None,
            },
        );
    }
    let ns = svc.namespace().unwrap_or_default();
    let overrides = svc
        .spec
        .overrides
        .as_ref()
        .filter(|o| has_overrides(Some(o)));
    let explicit = svc.spec.template.as_ref().and_then(|t| t.name.as_deref());
    let base: &TemplateInfo = if let Some(name) = explicit {
        let in_ns = |n: &str| {
            templates
                .iter()
                .find(|t| t.scope == ResolutionScope::Namespace && t.name == n)
        };
        let derived = overrides
            .and_then(|o| derived_name(name, o).ok())
            .and_then(|d| in_ns(d.as_str()).cloned());
        if let Some(d) = derived.filter(|d| super::selection::phase(d) == Phase::Ready) {
            let (h, template) = use_template(&d, "using derived");
            return (
                h,
                TemplateChoice {
                    template,
                    derived: None,
                },
            );
        }
        if let Some(t) = in_ns(name).or_else(|| {
            templates
                .iter()
                .find(|t| t.scope == ResolutionScope::Cluster && t.name == name)
        }) {
            t
        } else {
            let e = err(
                ErrorCategory::MissingUpstreamDependency,
                "TemplateNotFound",
                format!(
                    "spec.template.name: no AIMServiceTemplate {name:?} in namespace {ns} and no AIMClusterServiceTemplate {name:?}"
                ),
            );
            return (
                ComponentHealth::new(TEMPLATE).upstream().error(e),
                TemplateChoice::default(),
            );
        }
    } else {
        let (pool, candidates, request) =
            super::selection::selection_inputs(svc, &model.name, templates);
        let selection = kinfer_select::select(&candidates, &request, &gpus.model_set());
        let reason = selection.outcome.reason().to_string();
        let message = selection.message();
        match &selection.outcome {
            Outcome::Chosen(c) => {
                // The first choice is kept while it stays Ready, so it is made only once no
                // template of the model is still being discovered: otherwise the choice would
                // depend on which discovery finished first, not on the ranking.
                let discovering: Vec<&str> = pool
                    .iter()
                    .filter(|t| {
                        matches!(
                            super::selection::phase(t),
                            Phase::Pending | Phase::Progressing
                        )
                    })
                    .map(|t| t.name.as_str())
                    .collect();
                if !discovering.is_empty() {
                    return (
                        state(
                            TEMPLATE,
                            ComponentState::Pending,
                            &kinfer_select::OutcomeReason::TemplatesExistButNotReady.to_string(),
                            format!(
                                "{} ranks first among the Ready templates; waiting for the discovery of {} before choosing",
                                c.name,
                                discovering.join(", ")
                            ),
                        )
                        .upstream(),
                        TemplateChoice::default(),
                    );
                }
                let found = pool.iter().find(|t| {
                    t.name == c.name
                        && (t.scope == ResolutionScope::Cluster) == (c.scope == Scope::Cluster)
                });
                match found {
                    Some(t) => {
                        if overrides.is_none() {
                            let (_, template) = use_template(t, "selected");
                            let h =
                                state(TEMPLATE, ComponentState::Ready, &reason, message).upstream();
                            return (
                                h,
                                TemplateChoice {
                                    template,
                                    derived: None,
                                },
                            );
                        }
                        t
                    }
                    None => {
                        return (
                            state(TEMPLATE, ComponentState::Pending, &reason, message).upstream(),
                            TemplateChoice::default(),
                        );
                    }
                }
            }
            Outcome::NoCandidates | Outcome::NoneReady { .. } => {
                let msg = if matches!(selection.outcome, Outcome::NoCandidates) {
                    format!("waiting for templates of model {}: {message}", model.name)
                } else {
                    message
                };
                return (
                    state(TEMPLATE, ComponentState::Pending, &reason, msg).upstream(),
                    TemplateChoice::default(),
                );
            }
            Outcome::AllFiltered { removed } => {
                let e = err(
                    ErrorCategory::MissingUpstreamDependency,
                    &reason,
                    filtered_by_fields(removed, message),
                );
                return (
                    ComponentHealth::new(TEMPLATE).upstream().error(e),
                    TemplateChoice::default(),
                );
            }
            Outcome::Ambiguous { .. } => {
                let e = err(
                    ErrorCategory::InvalidSpec,
                    &reason,
                    format!("spec.template.name: {message}"),
                );
                return (
                    ComponentHealth::new(TEMPLATE).upstream().error(e),
                    TemplateChoice::default(),
                );
            }
        }
    };
    let Some(o) = overrides else {
        let (h, template) = use_template(base, "using");
        return (
            h,
            TemplateChoice {
                template,
                derived: None,
            },
        );
    };
    if super::selection::phase(base) != Phase::Ready {
        let (h, _) = use_template(base, "waiting for base");
        return (h, TemplateChoice::default());
    }
    let name = match derived_name(&base.name, o) {
        Ok(n) => n,
        Err(e) => {
            let e = err(
                ErrorCategory::InvalidSpec,
                "InvalidDerivedTemplateName",
                format!("spec.overrides: derived template name: {e}"),
            );
            return (
                ComponentHealth::new(TEMPLATE).upstream().error(e),
                TemplateChoice::default(),
            );
        }
    };
    let desired = derived_template(svc, base, name.as_str());
    let live = templates
        .iter()
        .find(|t| t.scope == ResolutionScope::Namespace && t.name == name.as_str());
    let (h, template) = match live {
        Some(t) => use_template(t, &format!("derived from {} ->", base.name)),
        None => (
            state(
                TEMPLATE,
                ComponentState::Progressing,
                "CreatingDerivedTemplate",
                format!("creating derived template {name} from {}", base.name),
            )
            .upstream(),
            None,
        ),
    };
    (
        h,
        TemplateChoice {
            template,
            derived: Some(desired),
        },
    )
}

/// `message` of a selection that filtered every candidate, after the spec fields whose
/// values filtered some (`spec.overrides`, `spec.template.allowUnoptimized`); a GPU missing
/// from the cluster or a template not Ready is no field's fault.
fn filtered_by_fields(
    removed: &[(&kinfer_select::Candidate, kinfer_select::Filter)],
    message: String,
) -> String {
    use kinfer_select::Filter;
    let fields: Vec<&str> = [
        (Filter::Overrides, "spec.overrides"),
        (Filter::Unoptimized, "spec.template.allowUnoptimized"),
    ]
    .into_iter()
    .filter(|(f, _)| removed.iter().any(|(_, r)| r == f))
    .map(|(_, field)| field)
    .collect();
    if fields.is_empty() {
        message
    } else {
        format!("{}: {message}", fields.join(", "))
    }
}

/// The routing decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// Routing is off.
    Off,
    /// Routing is on but no route can be built: the `HTTPRoute` component says why.
    Broken(Box<ComponentHealth>),
    /// The route to build.
    On(Box<PredictorRouteInput>),
}

/// Decides routing; see the module contract.
pub fn route(svc: &AIMService, rc: Option<&Resolved>, manager: &str) -> Route {
    let s = svc.spec.routing.as_ref();
    let c = rc.and_then(|r| r.spec.routing.as_ref());
    let enabled = s
        .and_then(|r| r.enabled)
        .or_else(|| c.and_then(|r| r.enabled))
        .unwrap_or(false);
    if !enabled {
        return Route::Off;
    }
    let Some(gw) = s
        .and_then(|r| r.gateway_ref.as_ref())
        .or_else(|| c.and_then(|r| r.gateway_ref.as_ref()))
    else {
        return Route::Broken(Box::new(ComponentHealth::new(HTTP_ROUTE).downstream().error(err(
            ErrorCategory::InvalidSpec,
            "GatewayNotConfigured",
            "spec.routing.gatewayRef: routing is enabled but neither the service nor its runtime config names a gatewayRef"
                .into(),
        ))));
    };
    let ns = svc.namespace().unwrap_or_default();
    let template = s
        .and_then(|r| r.path_template.as_deref())
        .or_else(|| c.and_then(|r| r.path_template.as_deref()));
    let rc_name = || {
        rc.and_then(|r| r.reference.name.clone())
            .unwrap_or_default()
    };
    // The field a user changes: the service's own, else the runtime config's.
    let field = |own: bool, name: &str| {
        if own {
            format!("spec.routing.{name}")
        } else {
            format!(
                "spec.runtimeConfigName: runtime config {:?} spec.routing.{name}",
                rc_name()
            )
        }
    };
    let path = match template {
        Some(t) => {
            let json = serde_json::to_value(svc).unwrap_or_default();
            match path::render(t, &json) {
                Ok(p) => p,
                Err(e) => {
                    let own = s.and_then(|r| r.path_template.as_deref()).is_some();
                    return Route::Broken(Box::new(
                        state(
                            HTTP_ROUTE,
                            ComponentState::Degraded,
                            "PathTemplateInvalid",
                            format!(
                                "{}: {}: {e}; no route is created",
                                field(own, "pathTemplate"),
                                kinfer_api::aim::shown(t)
                            ),
                        )
                        .downstream(),
                    ));
                }
            }
        }
        None => path::default_path(&ns, &svc.uid().unwrap_or_default()),
    };
    let mut annotations = c.map(|r| r.annotations.clone()).unwrap_or_default();
    annotations.extend(s.map(|r| r.annotations.clone()).unwrap_or_default());
    let (Ok(name), Ok(namespace)) = (Dns1123Subdomain::new(svc.name_any()), Dns1123Label::new(ns))
    else {
        return Route::Off;
    };
    let input = PredictorRouteInput {
        parent: kinfer_builders::Parent {
            name,
            namespace,
            managed_by: manager.to_owned(),
        },
        path,
        gateway: GatewayRef {
            name: gw.name.clone(),
            namespace: gw.namespace.clone(),
            section_name: gw.section_name.clone(),
        },
        timeouts: Timeouts {
            request: s
                .and_then(|r| r.request_timeout.clone())
                .or_else(|| c.and_then(|r| r.request_timeout.clone())),
            backend_request: None,
        },
        annotations,
    };
    // Built here too (pure), so a value the route cannot carry names its field and leaves
    // the rest of the plan alone, instead of failing the plan with the builder's field.
    match kinfer_builders::gateway::predictor_route(&input) {
        Ok(_) => Route::On(Box::new(input)),
        Err(e) => {
            let message = match (&e, &input.timeouts.request) {
                (
                    kinfer_builders::Error::Input {
                        field: "timeouts.request",
                        ..
                    },
                    Some(v),
                ) => {
                    let own = s.and_then(|r| r.request_timeout.as_deref()).is_some();
                    format!(
                        "{}: {} is not a Gateway API duration such as \"300s\" or \"5m\"",
                        field(own, "requestTimeout"),
                        kinfer_api::aim::shown(v)
                    )
                }
                _ => format!("spec.routing: {e}"),
            };
            Route::Broken(Box::new(
                ComponentHealth::new(HTTP_ROUTE).downstream().error(err(
                    ErrorCategory::InvalidSpec,
                    "InvalidRoute",
                    message,
                )),
            ))
        }
    }
}

#[cfg(test)]
#[path = "compose_tests.rs"]
mod tests;
