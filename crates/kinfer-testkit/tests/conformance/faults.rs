use std::time::{Duration, Instant};

use kinfer_testkit::Fault;
use serde_json::json;

use crate::common::{create_widget, local_cluster, status_code, widgets};

#[tokio::test]
async fn injected_status_code_once_then_served() {
    let Some((c, client)) = local_cluster("injects faults and reads counters").await else {
        return;
    };
    create_widget(&client, "a", json!({"size": 1})).await;
    c.faults()
        .inject(Fault::status("get", "widgets", 500).times(1));
    let api = widgets(&client);
    assert_eq!(status_code(&api.get("a").await.unwrap_err()), 500);
    api.get("a").await.unwrap();
}

#[tokio::test]
async fn injected_503_is_retried_by_kube_client() {
    let Some((c, client)) = local_cluster("injects faults and reads counters").await else {
        return;
    };
    create_widget(&client, "a", json!({"size": 1})).await;
    c.faults()
        .inject(Fault::status("get", "widgets", 503).times(1));
    widgets(&client).get("a").await.unwrap();
    let snap = c.counters().snapshot();
    assert_eq!(snap.get(&("get".into(), "widgets".into(), 503)), Some(&1));
    assert_eq!(snap.get(&("get".into(), "widgets".into(), 200)), Some(&1));
}

/// One raw HTTP/1.1 request (the kube client retries 429s itself, hiding the answer).
async fn raw_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn injected_429_carries_retry_after_and_a_status_body() {
    let Some((c, _client)) = local_cluster("injects faults").await else {
        return;
    };
    c.faults()
        .inject(Fault::status("list", "widgets", 429).retry_after(2));
    let answer = raw_get(
        c.addr(),
        "/apis/test.kinfer.dev/v1/namespaces/default/widgets",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.to_lowercase().contains("retry-after: 2"), "{answer}");
    let body: serde_json::Value =
        serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["reason"], "TooManyRequests");
    assert_eq!(body["details"]["retryAfterSeconds"], 2);
}

#[tokio::test]
async fn faults_can_target_one_object_name() {
    let Some((c, client)) = local_cluster("injects faults and reads counters").await else {
        return;
    };
    create_widget(&client, "a", json!({"size": 1})).await;
    create_widget(&client, "b", json!({"size": 1})).await;
    c.faults()
        .inject(Fault::status("get", "widgets", 500).named("a"));
    let api = widgets(&client);
    assert_eq!(status_code(&api.get("a").await.unwrap_err()), 500);
    api.get("b").await.unwrap();
    c.faults().clear();
    api.get("a").await.unwrap();
}

#[tokio::test]
async fn injected_latency_delays_answers() {
    let Some((c, client)) = local_cluster("injects faults and reads counters").await else {
        return;
    };
    create_widget(&client, "a", json!({"size": 1})).await;
    c.faults()
        .inject(Fault::latency("get", "widgets", Duration::from_millis(300)));
    let t = Instant::now();
    widgets(&client).get("a").await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn counters_by_verb_resource_and_code() {
    let Some((c, client)) = local_cluster("injects faults and reads counters").await else {
        return;
    };
    c.counters().reset();
    create_widget(&client, "a", json!({"size": 1})).await;
    let api = widgets(&client);
    api.get("a").await.unwrap();
    let _ = api.get("nope").await;
    let snap = c.counters().snapshot();
    assert_eq!(
        snap.get(&("create".into(), "widgets".into(), 201)),
        Some(&1)
    );
    assert_eq!(snap.get(&("get".into(), "widgets".into(), 200)), Some(&1));
    assert_eq!(snap.get(&("get".into(), "widgets".into(), 404)), Some(&1));
    assert_eq!(c.counters().count("get", Some("widgets")), 2);
    assert_eq!(c.counters().writes(), 1);
}

/// Which of `n` GETs the cluster failed, in order.
async fn failures(api: &kube::Api<kube::core::DynamicObject>, n: usize) -> Vec<bool> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(api.get("a").await.is_err());
    }
    out
}

#[tokio::test]
async fn percentage_faults_fire_on_that_share_reproducibly_from_a_seed() {
    let Some((c, client)) = local_cluster("injects faults").await else {
        return;
    };
    create_widget(&client, "a", json!({"size": 1})).await;
    let api = widgets(&client);
    c.faults()
        .inject(Fault::status("get", "widgets", 500).percent(10.0));
    c.faults().seed(7);
    let first = failures(&api, 400).await;
    let failed = first.iter().filter(|f| **f).count();
    // 10% of 400 is 40; a fair SplitMix64 sequence stays well inside 20..=60.
    assert!((20..=60).contains(&failed), "{failed} of 400 failed");
    assert_eq!(c.faults().fired(), failed as u64);
    c.faults().seed(7);
    assert_eq!(
        failures(&api, 400).await,
        first,
        "same seed, same decisions"
    );
    c.faults().seed(8);
    assert_ne!(
        failures(&api, 400).await,
        first,
        "another seed, other decisions"
    );
}

#[tokio::test]
async fn a_percentage_rule_that_does_not_fire_keeps_its_budget_and_lets_later_rules_match() {
    let Some((c, client)) = local_cluster("injects faults").await else {
        return;
    };
    create_widget(&client, "a", json!({"size": 1})).await;
    let api = widgets(&client);
    c.faults()
        .inject(Fault::status("get", "widgets", 500).percent(0.0).times(1));
    c.faults()
        .inject(Fault::status("get", "widgets", 404).times(1));
    assert_eq!(status_code(&api.get("a").await.unwrap_err()), 404);
    api.get("a").await.unwrap();
    c.faults().clear();
    c.faults()
        .inject(Fault::status("get", "widgets", 500).percent(100.0).times(2));
    assert_eq!(failures(&api, 3).await, [true, true, false]);
}

#[tokio::test]
async fn an_injected_410_on_a_watch_is_an_expired_error_event() {
    use futures::TryStreamExt;
    use kube::api::{WatchEvent, WatchParams};
    let Some((c, client)) = local_cluster("injects faults").await else {
        return;
    };
    let api = widgets(&client);
    c.faults().inject(Fault::watch_gone("widgets").times(1));
    let mut s = Box::pin(api.watch(&WatchParams::default(), "0").await.unwrap());
    let first = tokio::time::timeout(Duration::from_secs(10), s.try_next())
        .await
        .expect("an answer in time")
        .expect("a 200 stream");
    match first {
        Some(WatchEvent::Error(e)) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("{other:?}"),
    }
    let next = tokio::time::timeout(Duration::from_secs(10), s.try_next()).await;
    assert!(matches!(next, Ok(Ok(None))), "the stream ends: {next:?}");
    let snap = c.counters().snapshot();
    assert_eq!(snap.get(&("watch".into(), "widgets".into(), 410)), Some(&1));
    // The next watch is served again.
    create_widget(&client, "a", json!({"size": 1})).await;
    let mut s = Box::pin(api.watch(&WatchParams::default(), "0").await.unwrap());
    let again = tokio::time::timeout(Duration::from_secs(10), s.try_next()).await;
    assert!(
        matches!(again, Ok(Ok(Some(WatchEvent::Added(_))))),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_cut_watch_is_served_then_ends() {
    use futures::TryStreamExt;
    use kube::api::{WatchEvent, WatchParams};
    let Some((c, client)) = local_cluster("injects faults").await else {
        return;
    };
    create_widget(&client, "a", json!({"size": 1})).await;
    let api = widgets(&client);
    c.faults()
        .inject(Fault::cut_watch("widgets", Duration::from_millis(200)));
    let started = Instant::now();
    let mut s = Box::pin(api.watch(&WatchParams::default(), "0").await.unwrap());
    let first = tokio::time::timeout(Duration::from_secs(10), s.try_next()).await;
    assert!(
        matches!(first, Ok(Ok(Some(WatchEvent::Added(_))))),
        "{first:?}"
    );
    let end = tokio::time::timeout(Duration::from_secs(10), s.try_next()).await;
    assert!(matches!(end, Ok(Ok(None))), "the watch was cut: {end:?}");
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn a_410_on_continue_hits_only_later_pages() {
    use kube::api::ListParams;
    let Some((c, client)) = local_cluster("injects faults").await else {
        return;
    };
    create_widget(&client, "a", json!({"size": 1})).await;
    create_widget(&client, "b", json!({"size": 1})).await;
    let api = widgets(&client);
    c.faults().inject(Fault::continue_gone("widgets").times(1));
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    let token = first.metadata.continue_.clone().expect("a second page");
    let err = api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 410);
    // Budget spent: the same token now works, and unpaged lists were never touched.
    let second = api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(second.items.len(), 1);
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        2
    );
}

/// A client of `c` impersonating `user` (its kubeconfig's `as:`).
async fn client_as(c: &kinfer_testkit::TestCluster, user: &str) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&c.kubeconfig_yaml_as(user)).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn requests_are_counted_per_client_and_conflicts_name_both_sides() {
    let Some((c, _client)) = local_cluster("reads per-client counters").await else {
        return;
    };
    let (alice, bob) = (client_as(&c, "alice").await, client_as(&c, "bob").await);
    let apply = |manager: &str, size: i64| {
        (
            kube::api::PatchParams::apply(manager),
            kube::api::Patch::Apply(json!({
                "apiVersion": "test.kinfer.dev/v1", "kind": "Widget",
                "metadata": {"name": "a"}, "spec": {"size": size}
            })),
        )
    };
    let (pp, patch) = apply("alice-manager", 2);
    widgets(&alice).patch("a", &pp, &patch).await.unwrap();
    widgets(&alice).get("a").await.unwrap();
    let (pp, patch) = apply("bob-manager", 3);
    assert_eq!(
        status_code(&widgets(&bob).patch("a", &pp, &patch).await.unwrap_err()),
        409
    );
    assert_eq!(c.counters().client_writes("alice"), 1);
    assert_eq!(c.counters().client_writes("bob"), 0);
    let by = c.counters().by_client();
    assert_eq!(
        by["alice"].get(&("get".into(), "widgets".into(), 200)),
        Some(&1)
    );
    assert_eq!(
        by["bob"].get(&("patch".into(), "widgets".into(), 409)),
        Some(&1)
    );
    let conflicts = c.counters().conflicts();
    assert_eq!(conflicts.len(), 1, "{conflicts:?}");
    assert_eq!(c.counters().answered(409), 1);
    let k = &conflicts[0];
    assert_eq!((k.client.as_str(), k.verb.as_str()), ("bob", "patch"));
    assert!(k.object.ends_with("/a"), "{k:?}");
    assert!(k.message.contains("alice-manager"), "{k:?}");
    // Discovery and paths the server does not serve are counted per client too.
    bob.apiserver_version().await.unwrap();
    let nowhere = kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
        "nowhere.example",
        "v1",
        "Thing",
    ));
    let missing = kube::Api::<kube::core::DynamicObject>::all_with(bob.clone(), &nowhere)
        .get("x")
        .await
        .unwrap_err();
    assert_eq!(status_code(&missing), 404);
    let bob_counts = &c.counters().by_client()["bob"];
    assert_eq!(
        bob_counts.get(&("discovery".into(), "/version".into(), 200)),
        Some(&1),
        "{bob_counts:?}"
    );
    assert_eq!(
        bob_counts
            .iter()
            .filter(|((verb, _, code), _)| verb == "unknown" && *code == 404)
            .count(),
        1,
        "{bob_counts:?}"
    );
    // The totals include every client; a reset clears both.
    assert!(c.counters().writes() >= 1);
    c.counters().reset();
    assert!(c.counters().by_client().is_empty() && c.counters().conflicts().is_empty());
}
