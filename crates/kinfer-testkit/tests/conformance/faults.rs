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
