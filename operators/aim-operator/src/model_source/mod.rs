//! AIMClusterModelSource: the registry catalog (NOTES row 24).
//!
//! [`fetch`] lists the registry when a sync is due (never synced, spec changed, or
//! `syncInterval` passed since `lastSyncTime`), [`filter`] holds the pure matching rules, and
//! the pipeline below plans AIMClusterModels without owner references (never deleted), named by
//! `naming::aim::cluster_model_name`, labelled `aim.eai.amd.com/model-source` and
//! `origin=auto-generated`, annotated with registry, repository and tag: the ones it already
//! manages plus new ones until `maxModels`, the newest versions first. Status: counts, `lastSyncTime`, `modelsLimitReached`
//! and the `MaxModelsLimitReached` condition; requeue after `syncInterval`. A reconcile that
//! is not due reads nothing and writes nothing.

pub mod fetch;
pub mod filter;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kinfer_api::aim::model_source::AIMModelSourceState;
use kinfer_api::aim::{
    AIMClusterModel, AIMClusterModelSource, AIMClusterModelSourceStatus, AIMModelSpec,
};
use kinfer_builders::naming::aim::cluster_model_name;
use kinfer_state::clock::elapsed;
use kinfer_state::condition::{ConditionSet, ConditionStatus, ConditionType};
use kinfer_state::health::ComponentHealth;
use kinfer_state::pipeline::{
    ChildKind, Children, DesiredError, DesiredObject, Observation, Pipeline, PlanResult,
};
use kinfer_state::{
    Categorize, CategorizedError, ComponentState, ErrorCategory, OverallStatus, Reason,
};
use kube::api::ObjectMeta;
use kube::{Client, Resource, ResourceExt};

use self::fetch::Image;
use crate::context::Context;
use crate::scheme::{AUTO_GENERATED, MODEL_SOURCE_LABEL, ORIGIN_LABEL, label_value};

/// Parses a Go duration (`1h`, `30m`, `2h30m`, `90s`, `1.5h`) with the one duration parser of
/// kinfer-api; `None` for anything malformed or too large for a `Duration` (never a panic).
pub fn parse_duration(s: &str) -> Option<Duration> {
    let seconds = kinfer_api::schema::parse_duration_seconds(s)?;
    Duration::try_from_secs_f64(seconds).ok()
}

/// The shortest sync interval honoured: `0s` would list the registry on every reconcile.
const MIN_SYNC_INTERVAL: Duration = Duration::from_mins(1);

/// What fetch found.
#[derive(Debug)]
pub enum Fetched {
    /// Not due; check again after this long.
    NotDue(Duration),
    /// The registry was listed at `now`.
    Synced {
        /// Matching images.
        images: Result<BTreeSet<Image>, CategorizedError>,
        /// When.
        now: Timestamp,
    },
}

/// The composed state.
#[derive(Debug, Clone)]
pub struct SourceState {
    /// `None` when not due (status is kept).
    pub synced: Option<(Vec<Image>, Timestamp)>,
    /// Names of the models this source already manages.
    pub existing: BTreeSet<String>,
    /// The planned models, by name.
    pub planned: BTreeMap<String, Image>,
    /// When to sync next.
    pub interval: Duration,
}

/// Errors of the plan step.
#[derive(Debug, thiserror::Error)]
pub enum SourcePlanError {
    /// A model name cannot be built. Category: InvalidSpec.
    #[error("model name for {0}: {1}")]
    Name(String, #[source] kinfer_builders::naming::NameError),
    /// A model does not serialise. Category: InvalidSpec.
    #[error(transparent)]
    Serialize(#[from] DesiredError),
}

impl Categorize for SourcePlanError {
    fn category(&self) -> ErrorCategory {
        ErrorCategory::InvalidSpec
    }
}

/// The model source pipeline.
#[derive(Debug)]
pub struct ModelSourcePipeline {
    ctx: Arc<Context>,
}

impl ModelSourcePipeline {
    /// A pipeline sharing `ctx`.
    pub fn new(ctx: Arc<Context>) -> Self {
        Self { ctx }
    }
}

fn interval(src: &AIMClusterModelSource) -> Duration {
    parse_duration(&src.spec.sync_interval)
        .unwrap_or(Duration::from_hours(1))
        .max(MIN_SYNC_INTERVAL)
}

fn choose(
    src: &AIMClusterModelSource,
    images: &[Image],
    existing: &BTreeSet<String>,
) -> BTreeMap<String, Image> {
    let max = usize::try_from(src.spec.max_models.max(0)).unwrap_or(usize::MAX);
    let mut out = BTreeMap::new();
    let named: Vec<(String, Image)> = images
        .iter()
        .filter_map(|i| {
            cluster_model_name(&i.0, &i.1, &i.2)
                .ok()
                .map(|n| (n.as_str().to_owned(), i.clone()))
        })
        .collect();
    for (n, i) in &named {
        if existing.contains(n) {
            out.insert(n.clone(), i.clone());
        }
    }
    // New models up to the limit, newest version first (tags that are not versions last),
    // then by registry, repository and tag.
    let mut fresh: Vec<(String, Image)> = named
        .into_iter()
        .filter(|(n, _)| !out.contains_key(n))
        .collect();
    fresh.sort_by(|(_, a), (_, b)| {
        filter::version_of(&b.2)
            .cmp(&filter::version_of(&a.2))
            .then_with(|| a.cmp(b))
    });
    let room = max.saturating_sub(existing.len());
    out.extend(fresh.into_iter().take(room));
    out
}

impl Pipeline for ModelSourcePipeline {
    type Object = AIMClusterModelSource;
    type Fetched = Fetched;
    type State = SourceState;
    type PlanError = SourcePlanError;

    fn child_kinds(&self) -> Vec<ChildKind> {
        vec![ChildKind::of::<AIMClusterModel>()]
    }

    async fn fetch(
        &self,
        client: &Client,
        src: &AIMClusterModelSource,
        _children: &Children,
    ) -> Fetched {
        let now = self.ctx.now();
        let status = src.status.as_ref();
        let every = interval(src);
        let current = status.and_then(|s| s.observed_generation) == src.meta().generation;
        if current && let Some(last) = status.and_then(|s| s.last_sync_time.as_ref()) {
            let since = elapsed(last.0, now);
            if since < every {
                return Fetched::NotDue(every.saturating_sub(since));
            }
        }
        Fetched::Synced {
            images: fetch::list(&self.ctx, client, &src.spec).await,
            now,
        }
    }

    fn compose(
        &self,
        src: &AIMClusterModelSource,
        children: &Children,
        fetched: Fetched,
    ) -> Observation<SourceState> {
        let existing: BTreeSet<String> = children
            .iter()
            .filter(|(k, _)| k.kind == "AIMClusterModel")
            .map(|(k, _)| k.name.clone())
            .collect();
        let every = interval(src);
        let mut state = SourceState {
            synced: None,
            existing,
            planned: BTreeMap::new(),
            interval: every,
        };
        let registry = match fetched {
            Fetched::NotDue(left) => {
                state.interval = left;
                ComponentHealth::with_state(
                    "Registry",
                    ComponentState::Ready,
                    Reason::custom("Synced"),
                    "registry listed",
                )
            }
            Fetched::Synced {
                images: Ok(images),
                now,
            } => {
                let images: Vec<Image> = images.into_iter().collect();
                state.planned = choose(src, &images, &state.existing);
                state.synced = Some((images, now));
                ComponentHealth::with_state(
                    "Registry",
                    ComponentState::Ready,
                    Reason::custom("Synced"),
                    "registry listed",
                )
            }
            Fetched::Synced { images: Err(e), .. } => ComponentHealth::new("Registry").error(e),
        };
        let mut obs = Observation::new(state);
        obs.components.push(registry.upstream());
        obs.external = true;
        obs
    }

    fn plan(
        &self,
        src: &AIMClusterModelSource,
        obs: &Observation<SourceState>,
    ) -> Result<PlanResult, SourcePlanError> {
        let mut plan = PlanResult {
            requeue_after: Some(obs.state.interval),
            ..PlanResult::default()
        };
        for (name, (registry, repo, tag)) in &obs.state.planned {
            let mut model = AIMClusterModel::new(
                name,
                AIMModelSpec {
                    image: format!("{registry}/{repo}:{tag}"),
                    image_pull_secrets: src.spec.image_pull_secrets.clone(),
                    ..AIMModelSpec::default()
                }
                .into(),
            );
            model.metadata = ObjectMeta {
                name: Some(name.clone()),
                labels: Some(BTreeMap::from([
                    (MODEL_SOURCE_LABEL.to_owned(), label_value(&src.name_any())),
                    (ORIGIN_LABEL.to_owned(), AUTO_GENERATED.to_owned()),
                ])),
                annotations: Some(BTreeMap::from([
                    (
                        "aim.eai.amd.com/source-registry".to_owned(),
                        registry.clone(),
                    ),
                    ("aim.eai.amd.com/source-repository".to_owned(), repo.clone()),
                    ("aim.eai.amd.com/source-tag".to_owned(), tag.clone()),
                ])),
                ..ObjectMeta::default()
            };
            plan.apply_without_owner
                .push(DesiredObject::from_typed(&model)?);
        }
        Ok(plan)
    }

    fn decorate(
        &self,
        src: &AIMClusterModelSource,
        obs: &Observation<SourceState>,
        conditions: &mut ConditionSet,
    ) {
        let reached = limit_reached(src, obs);
        conditions.set(
            &ConditionType::Domain("MaxModelsLimitReached".into()),
            ConditionStatus::from_bool(reached),
            &Reason::custom(if reached {
                "LimitReached"
            } else {
                "WithinLimit"
            }),
            format!("maxModels is {}", src.spec.max_models),
        );
    }

    fn status(
        &self,
        src: &AIMClusterModelSource,
        obs: &Observation<SourceState>,
        status: OverallStatus,
        conditions: Vec<Condition>,
    ) -> serde_json::Value {
        let previous = src.status.clone().unwrap_or_default();
        let s = match &obs.state.synced {
            Some((images, now)) => AIMClusterModelSourceStatus {
                available_models: i64::try_from(images.len()).ok(),
                conditions,
                discovered_models: i64::try_from(
                    obs.state.planned.len().max(obs.state.existing.len()),
                )
                .ok(),
                last_sync_time: Some(Time(*now)),
                models_limit_reached: Some(limit_reached(src, obs)),
                observed_generation: src.meta().generation,
                status: Some(source_state(status)),
            },
            None => AIMClusterModelSourceStatus {
                conditions,
                observed_generation: src.meta().generation,
                status: Some(source_state(status)),
                ..previous
            },
        };
        serde_json::to_value(s).unwrap_or_default()
    }
}

fn limit_reached(src: &AIMClusterModelSource, obs: &Observation<SourceState>) -> bool {
    match &obs.state.synced {
        Some((images, _)) => {
            let max = usize::try_from(src.spec.max_models.max(0)).unwrap_or(usize::MAX);
            obs.state.planned.len().max(obs.state.existing.len()) >= max
                && images.len() > obs.state.planned.len()
        }
        None => src
            .status
            .as_ref()
            .and_then(|s| s.models_limit_reached)
            .unwrap_or(false),
    }
}

fn source_state(s: OverallStatus) -> AIMModelSourceState {
    match s {
        OverallStatus::Pending => AIMModelSourceState::Pending,
        OverallStatus::Progressing => AIMModelSourceState::Progressing,
        OverallStatus::Ready => AIMModelSourceState::Running,
        OverallStatus::Degraded => AIMModelSourceState::Degraded,
        OverallStatus::Failed => AIMModelSourceState::Failed,
        OverallStatus::NotAvailable => AIMModelSourceState::NotAvailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("1h"), Some(Duration::from_hours(1)));
        assert_eq!(parse_duration("2h30m"), Some(Duration::from_mins(150)));
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("15"), None);
        assert_eq!(parse_duration("x"), None);
        // Huge values are malformed, not a panic.
        assert_eq!(parse_duration("9999999999999999h"), None);
    }

    #[test]
    fn max_models_keeps_the_newest_versions() {
        let src: AIMClusterModelSource = serde_json::from_value(serde_json::json!({
            "apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMClusterModelSource",
            "metadata": {"name": "s"},
            "spec": {"registry": "ghcr.io", "maxModels": 2, "filters": [{"image": "org/aim"}]}
        }))
        .unwrap();
        let images: Vec<Image> = ["0.8.5", "0.9.0", "0.10.0", "latest"]
            .into_iter()
            .map(|t| ("ghcr.io".to_owned(), "org/aim".to_owned(), t.to_owned()))
            .collect();
        let tags = |chosen: &BTreeMap<String, Image>| {
            let mut t: Vec<String> = chosen.values().map(|i| i.2.clone()).collect();
            t.sort();
            t
        };
        let chosen = choose(&src, &images, &BTreeSet::new());
        assert_eq!(
            tags(&chosen),
            ["0.10.0", "0.9.0"],
            "not lexicographic (0.8.5 < 0.9.0)"
        );
        // A model it already manages stays, whatever its version; the rest fill up newest first.
        let old = cluster_model_name("ghcr.io", "org/aim", "0.8.5").unwrap();
        let chosen = choose(&src, &images, &BTreeSet::from([old.as_str().to_owned()]));
        assert_eq!(tags(&chosen), ["0.10.0", "0.8.5"]);
    }
}
