//! Template cache compose: one artifact per model source (NOTES row 21). Pure.
//!
//! Contract:
//! - The sources are the spec's, else the template's (inline, else discovered). A template
//!   that does not exist is MissingUpstream `TemplateNotFound`; one without sources that is
//!   not Ready yet is the `Template` component Pending `WaitingForDiscovery`.
//! - For each source the best existing artifact is reused: same `sourceUri`, same storage
//!   class when the cache names one, mode-compatible (a Shared cache takes only artifacts
//!   without a controller owner, a Dedicated cache only the artifacts it owns), best status
//!   (Ready, then Progressing, Pending, Degraded, NotAvailable, Failed). Otherwise an artifact
//!   is planned, named by the upstream rule over (uri, env, storage class[, "dedicated",
//!   cache]); Shared artifacts are created without owner (and kept), Dedicated ones owned by
//!   the cache. Its env is the cache env with the source's env over it, sorted by name.
//! - A shared artifact in use is kept applied by the cache whose name sorts first among those
//!   that created or took it over (its creator label); that cache plans it only when its copy
//!   differs from the artifact as read (labels it sets, or spec), so a read lagging behind a
//!   takeover never undoes it.
//! - Created artifacts carry upstream's labels ([`kinfer_api::labels::aim`]):
//!   `aim.eai.amd.com/template.{name,scope,index}`, `aim.eai.amd.com/template-cache.name=
//!   <creator>` (the finalizer removes its non-Ready ones) and `template-created=true`, so
//!   artifacts the upstream operator created are recognised too.
//! - The `Artifacts` component (`ArtifactsReady`): Ready when every source's artifact is Ready
//!   (or there are no sources); a Failed, Degraded or NotAvailable artifact gives that state
//!   with the artifact's own `Ready` reason and message (the root cause, e.g.
//!   `SourceAuthFailure`); otherwise Progressing (`CreatingArtifacts`, `ArtifactsProgressing`
//!   naming the artifacts not Ready and their phase; no percentage, which lives only in the
//!   artifact's `status.progress`).

use std::collections::BTreeMap;

use kinfer_api::aim::artifact::DEFAULT_MODEL_DOWNLOAD_IMAGE;
use kinfer_api::aim::common::{AIMModelSource, TemplateScope};
use kinfer_api::aim::template_cache::AIMResolvedArtifact;
use kinfer_api::aim::{AIMArtifact, AIMArtifactSpec, AIMTemplateCache, CachingMode};
use kinfer_api::phase::Phase;
use kinfer_builders::kserve::CACHE_PATH;
use kinfer_builders::naming::aim as names;
use kinfer_state::health::ComponentHealth;
use kinfer_state::{CategorizedError, ComponentState, ErrorCategory, Reason};
use kube::ResourceExt;
use kube::api::ObjectMeta;

use super::fetch::TemplateSources;
use crate::runtime_config::Resolved;
use crate::scheme;

/// The artifacts component.
pub const ARTIFACTS: &str = "Artifacts";
/// The template component.
pub const TEMPLATE: &str = "Template";
/// `aim.eai.amd.com/template-cache.name` (upstream's key): the cache that created an artifact.
pub const CREATOR_LABEL: &str = scheme::labels::TEMPLATE_CACHE_NAME;

/// The labels a created artifact gets from its creator: the cache and its template. On a
/// shared artifact they name one of its users (the one kept by the takeover rule of
/// [`artifacts`]), so its children do not inherit them
/// ([`crate::artifact::ArtifactPipeline`]).
pub const CREATOR_LABELS: [&str; 4] = [
    scheme::labels::TEMPLATE_NAME,
    scheme::labels::TEMPLATE_SCOPE,
    scheme::labels::TEMPLATE_INDEX,
    CREATOR_LABEL,
];

/// One source's artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceArtifact {
    /// The source.
    pub source: AIMModelSource,
    /// The artifact in use, when it exists.
    pub live: Option<AIMArtifact>,
    /// The artifact to apply (created, or an owned one kept applied).
    pub desired: Option<AIMArtifact>,
}

fn rank(p: Phase) -> u8 {
    match p {
        Phase::Ready => 5,
        Phase::Progressing => 4,
        Phase::Pending => 3,
        Phase::Degraded => 2,
        Phase::NotAvailable => 1,
        Phase::Failed => 0,
    }
}

fn phase(a: &AIMArtifact) -> Phase {
    a.status.as_ref().map(|s| s.status).unwrap_or_default()
}

fn controller_uid(a: &AIMArtifact) -> Option<&str> {
    scheme::controller_uid(&a.metadata)
}

fn storage_class(cache: &AIMTemplateCache, rc: Option<&Resolved>) -> Option<String> {
    cache.spec.storage_class_name.clone().or_else(|| {
        rc.and_then(|r| r.spec.storage.as_ref())
            .and_then(|s| s.default_storage_class_name.clone())
    })
}

fn desired(
    cache: &AIMTemplateCache,
    source: &AIMModelSource,
    index: usize,
    env: Vec<kinfer_api::env::EnvVar>,
    storage_class: Option<String>,
) -> Result<AIMArtifact, String> {
    let dedicated = cache.spec.mode == CachingMode::Dedicated;
    let cache_name = cache.name_any();
    let name = names::artifact_name(
        &source.source_uri,
        &crate::env::k8s_env(&env).map_err(|e| e.to_string())?,
        storage_class.as_deref().unwrap_or_default(),
        dedicated.then_some(cache_name.as_str()),
    )
    .map_err(|e| e.to_string())?;
    let scope = match cache.spec.template_scope {
        TemplateScope::Cluster => "Cluster",
        _ => "Namespace",
    };
    let labels = BTreeMap::from([
        (
            scheme::labels::TEMPLATE_NAME.to_owned(),
            scheme::label_value(&cache.spec.template_name),
        ),
        (scheme::labels::TEMPLATE_SCOPE.to_owned(), scope.to_owned()),
        (scheme::labels::TEMPLATE_INDEX.to_owned(), index.to_string()),
        (CREATOR_LABEL.to_owned(), scheme::label_value(&cache_name)),
        (
            scheme::labels::TEMPLATE_CREATED.to_owned(),
            "true".to_owned(),
        ),
    ]);
    Ok(AIMArtifact {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: cache.namespace(),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: AIMArtifactSpec {
            env,
            image_pull_secrets: cache.spec.image_pull_secrets.clone(),
            model_download_image: cache
                .spec
                .download_image
                .clone()
                .unwrap_or_else(|| DEFAULT_MODEL_DOWNLOAD_IMAGE.to_owned()),
            model_id: Some(source.model_id.clone()),
            runtime_config_name: cache.spec.runtime_config_name.clone(),
            size: source.size.clone(),
            source_uri: source.source_uri.clone(),
            storage_class_name: storage_class,
        },
        status: None,
    })
}

/// The artifact of every source; see the module contract.
pub fn artifacts(
    cache: &AIMTemplateCache,
    sources: &[AIMModelSource],
    existing: &[AIMArtifact],
    rc: Option<&Resolved>,
) -> Result<Vec<SourceArtifact>, CategorizedError> {
    let sc = storage_class(cache, rc);
    let own_uid = cache.uid();
    let dedicated = cache.spec.mode == CachingMode::Dedicated;
    let mut out = Vec::with_capacity(sources.len());
    for (index, source) in sources.iter().enumerate() {
        let compatible = |a: &&AIMArtifact| {
            a.spec.source_uri == source.source_uri
                && (sc.is_none() || a.spec.storage_class_name == sc)
                && a.metadata.deletion_timestamp.is_none()
                && if dedicated {
                    controller_uid(a).is_some() && controller_uid(a) == own_uid.as_deref()
                } else {
                    controller_uid(a).is_none()
                }
        };
        let live = existing
            .iter()
            .filter(compatible)
            .max_by_key(|a| (rank(phase(a)), std::cmp::Reverse(a.name_any())))
            .cloned();
        let mut env = crate::env::merge(&[&cache.spec.env, &source.env]);
        env.sort_by(|a, b| a.name.cmp(&b.name));
        let build = || {
            desired(cache, source, index, env.clone(), sc.clone()).map_err(|e| {
                CategorizedError::new(
                    ErrorCategory::InvalidSpec,
                    format!("artifact for {}: {e}", source.source_uri),
                )
                .with_reason(Reason::custom("InvalidArtifact"))
            })
        };
        let planned = match &live {
            // A shared artifact is kept applied by one cache: the one whose name sorts first
            // among those that created or took it over (its creator label), so its labels and
            // spec do not depend on which cache reconciled first. An artifact without the
            // label (created by another operator) is used as it is.
            //
            // The keeper writes only what changes the artifact as it was read: its read may lag
            // behind a takeover by a cache sorting first, and re-applying its own copy would
            // undo that takeover, which the other cache would redo, and so on while both read
            // stale copies. The taking cache's apply is harmless on a stale read (it converges
            // on the same object).
            Some(a) if !dedicated => match a.labels().get(CREATOR_LABEL) {
                Some(creator) if *creator >= scheme::label_value(&cache.name_any()) => {
                    let mut d = build()?;
                    d.metadata.name = Some(a.name_any());
                    let labelled = d.labels().iter().all(|(k, v)| a.labels().get(k) == Some(v));
                    (!labelled || d.spec != a.spec).then_some(d)
                }
                _ => None,
            },
            // An owned artifact stays planned (so it is not pruned) with what this cache
            // computes, under its live name: never the live labels or spec, which would take
            // over fields others set.
            Some(a) => Some({
                let mut d = build()?;
                d.metadata.name = Some(a.name_any());
                d
            }),
            None => Some(build()?),
        };
        out.push(SourceArtifact {
            source: source.clone(),
            live,
            desired: planned,
        });
    }
    Ok(out)
}

fn ready_condition(a: &AIMArtifact) -> (String, String) {
    a.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

fn health(state: ComponentState, reason: &str, message: String) -> ComponentHealth {
    ComponentHealth::with_state(ARTIFACTS, state, Reason::custom(reason.to_owned()), message)
        .downstream()
}

/// The `Artifacts` component; see the module contract.
pub fn artifacts_health(list: &[SourceArtifact]) -> ComponentHealth {
    if list.is_empty() {
        return health(
            ComponentState::Ready,
            "NoModelSources",
            "the template has no model sources to cache".into(),
        );
    }
    let missing: Vec<&str> = list
        .iter()
        .filter(|s| s.live.is_none())
        .map(|s| s.source.source_uri.as_str())
        .collect();
    let live: Vec<&AIMArtifact> = list.iter().filter_map(|s| s.live.as_ref()).collect();
    if let Some(worst) = live
        .iter()
        .filter(|a| phase(a).is_error())
        .min_by_key(|a| rank(phase(a)))
    {
        let (reason, message) = ready_condition(worst);
        let p = phase(worst);
        let state = match p {
            Phase::Failed => ComponentState::Failed,
            Phase::NotAvailable => ComponentState::NotAvailable,
            _ => ComponentState::Degraded,
        };
        let reason = if reason.is_empty() {
            format!("Artifact{p}")
        } else {
            reason
        };
        return health(
            state,
            &reason,
            format!(
                "artifact {} ({}) is {p}: {message}",
                worst.name_any(),
                worst.spec.source_uri
            ),
        );
    }
    if !missing.is_empty() {
        return health(
            ComponentState::Progressing,
            "CreatingArtifacts",
            format!("creating artifacts for {}", missing.join(", ")),
        );
    }
    let ready = live.iter().filter(|a| phase(a) == Phase::Ready).count();
    if ready == live.len() {
        return health(
            ComponentState::Ready,
            "AllArtifactsReady",
            format!("{ready}/{} artifacts ready", live.len()),
        );
    }
    // Phases only: the download percentage stays in the artifact's `status.progress` (a
    // progress tick must not rewrite every status up the chain).
    let waiting: Vec<String> = live
        .iter()
        .filter(|a| phase(a) != Phase::Ready)
        .map(|a| format!("{} {}", a.name_any(), phase(a)))
        .collect();
    health(
        ComponentState::Progressing,
        "ArtifactsProgressing",
        format!(
            "{ready}/{} artifacts ready; {}",
            live.len(),
            waiting.join(", ")
        ),
    )
}

/// `status.artifacts`: the artifact of each cached model, keyed by model id.
pub fn status_artifacts(list: &[SourceArtifact]) -> BTreeMap<String, AIMResolvedArtifact> {
    list.iter()
        .filter_map(|s| {
            let a = s.live.as_ref()?;
            let st = a.status.as_ref();
            Some((
                s.source.model_id.clone(),
                AIMResolvedArtifact {
                    model: s.source.model_id.clone(),
                    mount_point: Some(format!("{CACHE_PATH}/{}", s.source.model_id)),
                    name: a.name_any(),
                    persistent_volume_claim: st.and_then(|s| s.persistent_volume_claim.clone()),
                    status: phase(a).to_string(),
                    uid: a.uid().unwrap_or_default(),
                },
            ))
        })
        .collect()
}

/// The `Template` component from what was read about the template.
pub fn template_health(
    name: &str,
    read: Option<&Result<Option<TemplateSources>, CategorizedError>>,
) -> (
    ComponentHealth,
    Option<Vec<AIMModelSource>>,
    Option<&'static str>,
) {
    let h = |s, reason: &str, msg: String| {
        ComponentHealth::with_state(TEMPLATE, s, Reason::custom(reason.to_owned()), msg).upstream()
    };
    match read {
        None => (
            h(
                ComponentState::Ready,
                "SourcesInSpec",
                "the cache lists its model sources".into(),
            ),
            None,
            None,
        ),
        Some(Err(e)) => (
            ComponentHealth::new(TEMPLATE).upstream().error(e.clone()),
            None,
            None,
        ),
        Some(Ok(None)) => (
            ComponentHealth::new(TEMPLATE).upstream().error(
                CategorizedError::new(
                    ErrorCategory::MissingUpstreamDependency,
                    format!("template {name} not found"),
                )
                .with_reason(Reason::custom("TemplateNotFound")),
            ),
            None,
            None,
        ),
        Some(Ok(Some(t))) if t.sources.is_empty() && !t.ready => (
            h(
                ComponentState::Pending,
                "WaitingForDiscovery",
                format!("template {name} has not discovered its model sources yet"),
            ),
            None,
            Some(t.kind),
        ),
        Some(Ok(Some(t))) => (
            h(
                ComponentState::Ready,
                "TemplateFound",
                format!("{} {name}", t.kind),
            ),
            Some(t.sources.clone()),
            Some(t.kind),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn download_progress_does_not_reach_the_cache_condition() {
        let artifact = |pct: &str| -> AIMArtifact {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
                "metadata": {"name": "a", "namespace": "ns"},
                "spec": {"sourceUri": "hf://org/m"},
                "status": {"status": "Progressing",
                           "progress": {"percentage": 42, "displayPercentage": pct}}}))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let source: AIMModelSource = serde_json::from_value(
            serde_json::json!({"name": "org/m", "modelId": "org/m", "sourceUri": "hf://org/m"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let messages: Vec<String> = ["42%", "43%"]
            .into_iter()
            .map(|pct| {
                let list = [SourceArtifact {
                    source: source.clone(),
                    live: Some(artifact(pct)),
                    desired: None,
                }];
                artifacts_health(&list).message.unwrap_or_default()
            })
            .collect();
        assert_eq!(
            messages[0], messages[1],
            "no status churn per progress tick"
        );
        assert!(!messages[0].contains('%'), "{}", messages[0]);
    }

    fn cache(name: &str, env: &[(&str, &str)]) -> AIMTemplateCache {
        let env: Vec<_> = env
            .iter()
            .map(|(n, v)| serde_json::json!({"name": n, "value": v}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMTemplateCache",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"templateName": format!("t-{name}"), "templateScope": "Namespace",
                     "mode": "Shared", "env": env}}))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The shared artifact `cache` would create for `source`, as the API server returns it.
    fn created_by(cache: &AIMTemplateCache, source: &AIMModelSource) -> AIMArtifact {
        let list = artifacts(cache, std::slice::from_ref(source), &[], None)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut a = list[0].desired.clone().unwrap_or_else(|| panic!("planned"));
        a.metadata.resource_version = Some("7".into());
        a
    }

    fn plans(cache: &AIMTemplateCache, source: &AIMModelSource, live: &AIMArtifact) -> bool {
        artifacts(
            cache,
            std::slice::from_ref(source),
            std::slice::from_ref(live),
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"))[0]
            .desired
            .is_some()
    }

    /// Two shared caches of one source: the one sorting first takes the artifact over; the
    /// other writes it only when its own copy changes, so a read lagging behind the takeover
    /// does not undo it.
    #[test]
    fn a_keeper_reading_its_own_copy_writes_nothing() {
        let source: AIMModelSource = serde_json::from_value(
            serde_json::json!({"name": "org/m", "modelId": "org/m", "sourceUri": "hf://org/m"}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let (first, second) = (cache("a-cache", &[]), cache("g-cache", &[]));
        let by_second = created_by(&second, &source);
        assert!(
            plans(&first, &source, &by_second),
            "the first cache takes over"
        );
        assert!(
            !plans(&second, &source, &by_second),
            "the creator's own copy, as read (possibly before a takeover): nothing to write"
        );
        assert!(
            !plans(&second, &source, &created_by(&first, &source)),
            "taken over: the second cache leaves it"
        );
        let changed = cache("g-cache", &[("HF_HUB_OFFLINE", "1")]);
        assert!(
            plans(&changed, &source, &by_second),
            "a keeper whose own inputs changed applies them"
        );
    }
}
