//! What a no-op reconcile of a ModelService sends: one GET of its token Secret's metadata,
//! nothing else.
//! Its namespaced children come from
//! the controllers' label-scoped watch caches, and so does its cluster-scoped metrics-auth
//! ClusterRoleBinding (applied without an owner reference, labelled with its parent): the engine reads a planned object by name only when no cache holds it (a new
//! object, or a foreign one of the same name, which it must refuse rather than take over).
//! The Endpoint Picker's token Secret, of a kind the operator does not watch (no cluster-wide
//! Secret access), is read by name on every reconcile: nothing else would show it gone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::{Harness, minimal};
use kinfer_api::modelservice::ModelService;
use kube::api::{Api, Patch, PatchParams};
use modelservice_operator::reconciler::label_scheme;

/// Sets (`Some`) or removes (`None`) the annotation `key` of the ModelService `name`.
async fn annotate(api: &Api<ModelService>, name: &str, key: &str, value: Option<&str>) {
    let patch = serde_json::json!({"metadata": {"annotations": {key: value}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("annotate");
}

/// Converges `name`, pauses it (the reconcile of the paused copy runs after every earlier one
/// of the object, so none is in flight afterwards), resets the counters, resumes it and waits
/// for the reconcile of the resumed, otherwise unchanged, object. Returns what was sent
/// meanwhile beyond the test's own resume patch.
async fn requests_of_a_noop_reconcile(h: &Harness, name: &str) -> BTreeMap<String, u64> {
    let api = Api::<ModelService>::namespaced(h.client.clone(), "default");
    let paused = label_scheme().paused_annotation();
    annotate(&api, name, &paused, Some("true")).await;
    h.eventually("the paused copy was skipped", |h| {
        h.metric("kinfer_paused_total") >= 1
    })
    .await;
    let before = h.metric("kinfer_reconciles_total");
    h.cluster.counters().reset();
    annotate(&api, name, &paused, None).await;
    h.eventually("the resumed copy was reconciled", |h| {
        h.metric("kinfer_reconciles_total") > before
    })
    .await;
    let mut sent: BTreeMap<String, u64> = h
        .cluster
        .counters()
        .snapshot()
        .into_iter()
        .map(|((verb, resource, code), n)| (format!("{verb} {resource} {code}"), n))
        .collect();
    assert_eq!(
        sent.remove("patch modelservices 200"),
        Some(1),
        "the resume patch"
    );
    sent
}

#[tokio::test]
async fn a_reconcile_of_an_unchanged_model_service_sends_only_the_token_secret_read() {
    let h = Harness::start().await;
    h.create(&minimal("noop", "default")).await;
    h.wait_ready("default", "noop").await;
    let sent = requests_of_a_noop_reconcile(&h, "noop").await;
    let expected: BTreeMap<String, u64> = [("get secrets 200".to_owned(), 1)].into();
    assert_eq!(sent, expected, "requests of a no-op reconcile");
    assert_eq!(
        h.cluster.counters().metadata_reads("secrets"),
        1,
        "the token never reaches the operator: the Secret is read as metadata only"
    );
}
