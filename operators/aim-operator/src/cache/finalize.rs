//! The template cache's finalizer (NOTES row 23): what becomes of the non-Ready artifacts a
//! deleted cache created.
//!
//! Contract: the artifacts naming this cache in the creator label
//! (`aim.eai.amd.com/template-cache.name`) that are neither Ready nor terminating are kept
//! when another live cache of the namespace has a use for them, and deleted otherwise
//! ([`crate::service::cleanup::delete_unready`]). A use is
//! - listing the artifact in `status.artifacts` (a shared download in flight for another
//!   cache survives; the creator label names the cache sorting first, so it may name a cache
//!   that merely joined), or
//! - intent ([`Intent`]): a live Shared cache whose status lists no artifact yet (just
//!   created, by a service say) is about to reuse every unowned artifact whose `sourceUri` is
//!   one of its sources (the spec's, else its template's, read then) and whose storage class
//!   is the one its spec names (any when it names none: the runtime config's default is not
//!   resolved here, keeping more rather than less).
//!
//! A kept unowned artifact is handed over: its creator label is set (merge patch, the cache
//! controller's field manager) to the keeper whose label value sorts first, the cache the
//! compose rule labels it with, so that cache's finalizer answers for it from then on (a
//! keeper sorting after this cache never relabels it itself, and would never delete it).
//! The keeper is read again after the patch: when it is gone or terminating (deleted between
//! the list and the patch, its own finalizer may have run and seen nothing of this
//! artifact), the decision is made again without it: the next keeper, else the artifact is
//! deleted here. When that read fails, the label is set back to this cache's (so the retry
//! finds the artifact again) and the error fails the cleanup.
//!
//! A pending cache whose template is absent, not yet discovered or unreadable for a lasting
//! reason (forbidden, malformed: not Infrastructure) intends nothing: it claims nothing until
//! then and creates what it needs later, and another cache's broken template never blocks
//! this deletion. A transient (Infrastructure) read error fails the cleanup, which the engine
//! retries. Dedicated caches never reuse unowned artifacts and intend nothing. The engine
//! skips the cleanup in a terminating namespace (or one it may not read); a cleanup refused
//! with 401/403 keeps the finalizer and is retried (`CleanupForbidden`).

use std::collections::{BTreeMap, BTreeSet};

use kinfer_api::aim::{AIMArtifact, AIMTemplateCache, CachingMode};
use kinfer_state::{CategorizeIn, CategorizedError, Direction, ErrorCategory};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};

use super::compose::CREATOR_LABEL;
use super::fetch;
use crate::scheme;
use crate::service::cleanup::{delete_unready, unready};

/// Runs the finalizer of `object`; see the module contract.
pub async fn finalize(client: &Client, object: &AIMTemplateCache) -> Result<(), CategorizedError> {
    let ns = object.namespace().unwrap_or_default();
    let api: Api<AIMArtifact> = Api::namespaced(client.clone(), &ns);
    let selector = format!(
        "{CREATOR_LABEL}={}",
        scheme::label_value(&object.name_any())
    );
    let others = Api::<AIMTemplateCache>::namespaced(client.clone(), &ns)
        .list(&ListParams::default())
        .await
        .map_err(|e| e.categorize_in(Direction::Downstream))?;
    let keepers = Keepers {
        listed: listed_by_others(object, &others.items),
        intents: intents(client, object, &others.items).await?,
    };
    let caches: Api<AIMTemplateCache> = Api::namespaced(client.clone(), &ns);
    let identities: BTreeMap<String, (String, Option<String>)> = others
        .items
        .iter()
        .map(|c| (scheme::label_value(&c.name_any()), (c.name_any(), c.uid())))
        .collect();
    let mine = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| e.categorize_in(Direction::Downstream))?;
    let me = scheme::label_value(&object.name_any());
    // Keepers found gone or terminating during this run: passed over for every artifact.
    let mut departed = BTreeSet::new();
    for a in mine.items.iter().filter(|a| unready(*a)) {
        if scheme::controller_uid(&a.metadata).is_some() {
            continue;
        }
        while let Some(keeper) = keepers.keeper(a, &departed) {
            let id = identities.get(keeper);
            // Checked before the hand-over (most departures are seen here, and the artifact
            // never leaves this cache's label for them) and after it (the keeper may have
            // gone in between: the artifact then comes back under this cache's label, where
            // this finalizer and its retries find it).
            if !keeper_alive(&caches, id)
                .await
                .map_err(|e| e.categorize_in(Direction::Downstream))?
            {
                departed.insert(keeper.to_owned());
                continue;
            }
            tracing::info!(artifact = %a.name_any(), cache = keeper,
                "handing a non-Ready artifact over to the cache that uses it");
            relabel(&api, a, keeper).await?;
            match keeper_alive(&caches, id).await {
                Ok(true) => break,
                Ok(false) => {
                    tracing::info!(artifact = %a.name_any(), cache = keeper,
                        "the keeper is gone or terminating; deciding again without it");
                    departed.insert(keeper.to_owned());
                    relabel(&api, a, &me).await?;
                }
                Err(e) => {
                    relabel(&api, a, &me).await?;
                    return Err(e.categorize_in(Direction::Downstream));
                }
            }
        }
    }
    delete_unready(&api, &selector, |a: &AIMArtifact| {
        keepers.keeper(a, &departed).is_some()
    })
    .await
}

/// Whether the cache `(name, uid)` still exists, the same one, and is not being deleted
/// (`None`: a keeper this run never listed, so not one to hand anything to).
async fn keeper_alive(
    caches: &Api<AIMTemplateCache>,
    id: Option<&(String, Option<String>)>,
) -> Result<bool, kube::Error> {
    let Some((name, uid)) = id else {
        return Ok(false);
    };
    Ok(caches
        .get_opt(name)
        .await?
        .is_some_and(|c| c.uid() == *uid && c.metadata.deletion_timestamp.is_none()))
}

/// Sets `a`'s creator label to `keeper` (a label value).
async fn relabel(
    api: &Api<AIMArtifact>,
    a: &AIMArtifact,
    keeper: &str,
) -> Result<(), CategorizedError> {
    let params = PatchParams {
        field_manager: Some(scheme::manager(super::CONTROLLER)),
        ..PatchParams::default()
    };
    let patch = serde_json::json!({"metadata": {"labels": {CREATOR_LABEL: keeper}}});
    match api
        .patch(&a.name_any(), &params, &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.categorize_in(Direction::Downstream)),
    }
}

/// The other live caches' uses of artifacts, by the label value of each cache's name.
#[derive(Debug, Default)]
struct Keepers {
    /// Each cache with the artifacts its status lists.
    listed: Vec<(String, BTreeSet<String>)>,
    /// Each pending cache's intent.
    intents: Vec<(String, Intent)>,
}

impl Keepers {
    /// The keeper of `a` sorting first, if any cache but those of `gone` has a use for it.
    fn keeper(&self, a: &AIMArtifact, gone: &BTreeSet<String>) -> Option<&str> {
        let name = a.name_any();
        self.listed
            .iter()
            .filter(|(_, names)| names.contains(&name))
            .map(|(c, _)| c.as_str())
            .chain(
                self.intents
                    .iter()
                    .filter(|(_, i)| i.wants(a))
                    .map(|(c, _)| c.as_str()),
            )
            .filter(|c| !gone.contains(*c))
            .min()
    }
}

/// The other live caches of `caches` with the artifacts their status lists.
fn listed_by_others(
    this: &AIMTemplateCache,
    caches: &[AIMTemplateCache],
) -> Vec<(String, BTreeSet<String>)> {
    caches
        .iter()
        .filter(|c| c.uid() != this.uid() && c.metadata.deletion_timestamp.is_none())
        .filter_map(|c| {
            let s = c.status.as_ref()?;
            Some((
                scheme::label_value(&c.name_any()),
                s.artifacts.values().map(|a| a.name.clone()).collect(),
            ))
        })
        .collect()
}

/// The live Shared caches of `caches` other than `this` whose status lists no artifact yet:
/// what they will use is known only from their spec ([`Intent`]).
fn pending<'a>(
    this: &'a AIMTemplateCache,
    caches: &'a [AIMTemplateCache],
) -> impl Iterator<Item = &'a AIMTemplateCache> + 'a {
    caches.iter().filter(move |c| {
        c.uid() != this.uid()
            && c.metadata.deletion_timestamp.is_none()
            && c.spec.mode == CachingMode::Shared
            && c.status.as_ref().is_none_or(|s| s.artifacts.is_empty())
    })
}

/// What a pending cache is about to reuse: the artifacts of its sources' URIs, in the storage
/// class its spec names (`None`: any); see the module contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent {
    /// Its sources' URIs.
    pub uris: BTreeSet<String>,
    /// `spec.storageClassName`.
    pub storage_class: Option<String>,
}

impl Intent {
    /// Whether a Shared cache with this intent would reuse `a` (unowned, same URI, storage
    /// class compatible), as [`super::compose::artifacts`] chooses.
    pub fn wants(&self, a: &AIMArtifact) -> bool {
        scheme::controller_uid(&a.metadata).is_none()
            && self.uris.contains(&a.spec.source_uri)
            && (self.storage_class.is_none() || a.spec.storage_class_name == self.storage_class)
    }
}

/// The intents of the pending caches of `caches`, with each cache's label value (templates
/// read when their spec lists no sources; see the module contract for read errors).
async fn intents(
    client: &Client,
    this: &AIMTemplateCache,
    caches: &[AIMTemplateCache],
) -> Result<Vec<(String, Intent)>, CategorizedError> {
    let ns = this.namespace().unwrap_or_default();
    let mut out = Vec::new();
    for c in pending(this, caches) {
        let sources = if c.spec.model_sources.is_empty() {
            match fetch::template(client, &ns, &c.spec.template_name, c.spec.template_scope).await {
                Ok(t) => t.map(|t| t.sources).unwrap_or_default(),
                Err(e) => {
                    let e = e.categorize_in(Direction::Upstream);
                    if e.category == ErrorCategory::Infrastructure {
                        return Err(e);
                    }
                    // The category and reason only: an API message is not ours to log.
                    tracing::info!(cache = %c.name_any(), category = ?e.category,
                        "another cache's template is unreadable; it intends nothing");
                    Vec::new()
                }
            }
        } else {
            c.spec.model_sources.clone()
        };
        out.push((
            scheme::label_value(&c.name_any()),
            Intent {
                uris: sources.into_iter().map(|s| s.source_uri).collect(),
                storage_class: c.spec.storage_class_name.clone(),
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cache(name: &str, mode: &str, status: Option<serde_json::Value>) -> AIMTemplateCache {
        let mut v = json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMTemplateCache",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
            "spec": {"templateName": "t", "templateScope": "Namespace", "mode": mode}});
        if let Some(s) = status {
            v["status"] = s;
        }
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    fn artifact(uri: &str, storage_class: Option<&str>, owned: bool) -> AIMArtifact {
        let mut v = json!({"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMArtifact",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": {"sourceUri": uri, "storageClassName": storage_class}});
        if owned {
            v["metadata"]["ownerReferences"] = json!([{"apiVersion": "aim.eai.amd.com/v1alpha1",
                "kind": "AIMTemplateCache", "name": "d", "uid": "uid-d", "controller": true}]);
        }
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn only_live_shared_caches_without_artifacts_in_status_are_pending() {
        let listed = json!({"status": "Progressing", "artifacts": {"m": {
            "model": "m", "name": "x", "status": "Progressing", "uid": "u"}}});
        let mut leaving = cache("leaving", "Shared", None);
        leaving.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        let this = cache("this", "Shared", None);
        let caches = [
            this.clone(),
            cache("new", "Shared", None),
            cache("empty", "Shared", Some(json!({"status": "Pending"}))),
            cache("listed", "Shared", Some(listed)),
            cache("dedicated", "Dedicated", None),
            leaving,
        ];
        let names: Vec<String> = pending(&this, &caches).map(ResourceExt::name_any).collect();
        assert_eq!(names, ["new", "empty"]);
    }

    #[test]
    fn an_intent_wants_unowned_artifacts_of_its_sources_and_storage_class() {
        let any_class = Intent {
            uris: BTreeSet::from(["hf://org/m".to_owned()]),
            storage_class: None,
        };
        assert!(any_class.wants(&artifact("hf://org/m", None, false)));
        assert!(any_class.wants(&artifact("hf://org/m", Some("fast"), false)));
        assert!(!any_class.wants(&artifact("hf://org/other", None, false)));
        assert!(
            !any_class.wants(&artifact("hf://org/m", None, true)),
            "a dedicated artifact is its cache's"
        );
        let fast = Intent {
            storage_class: Some("fast".into()),
            ..any_class
        };
        assert!(fast.wants(&artifact("hf://org/m", Some("fast"), false)));
        assert!(!fast.wants(&artifact("hf://org/m", Some("slow"), false)));
        assert!(!fast.wants(&artifact("hf://org/m", None, false)));
    }

    #[test]
    fn the_keeper_is_the_user_sorting_first() {
        let wants = |uri: &str| Intent {
            uris: BTreeSet::from([uri.to_owned()]),
            storage_class: None,
        };
        let keepers = Keepers {
            listed: vec![
                ("zeta".into(), BTreeSet::from(["a".to_owned()])),
                ("beta".into(), BTreeSet::from(["other".to_owned()])),
            ],
            intents: vec![
                ("omega".into(), wants("hf://org/m")),
                ("alpha".into(), wants("hf://org/none")),
            ],
        };
        let a = artifact("hf://org/m", None, false);
        assert_eq!(
            keepers.keeper(&a, &BTreeSet::new()),
            Some("omega"),
            "before zeta, alpha wants others"
        );
        assert_eq!(
            keepers.keeper(&a, &BTreeSet::from(["omega".to_owned()])),
            Some("zeta"),
            "a departed keeper is passed over"
        );
        let listed_only = Keepers {
            intents: Vec::new(),
            ..keepers
        };
        assert_eq!(listed_only.keeper(&a, &BTreeSet::new()), Some("zeta"));
        assert_eq!(Keepers::default().keeper(&a, &BTreeSet::new()), None);
    }
}
