//! Repository listing against the real registry (no auth, htpasswd, bearer-token realm, with
//! pagination) and against a local stand-in for Docker Hub's namespace API.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::sync::Arc;

use kinfer_oci::{Credentials, Inspector, InspectorConfig, ManualClock, OciErrorCategory};
use oci_client::secrets::RegistryAuth;
use support::fixtures::{aim_labels, docker_config, inspector};
use support::images::Pusher;
use support::proxy::response;
use support::registry::{PASSWORD, Registry, USER};
use support::token::TokenRealm;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

async fn push_repositories(pusher: &Pusher) {
    for repo in ["amd/aim-llama", "amd/aim-qwen", "amd/base", "other/aim-x"] {
        pusher
            .push_image(repo, Some("1.0.0"), &aim_labels(), "amd64")
            .await;
    }
}

fn paged(host: &str, page: usize) -> Inspector {
    Inspector::with_clock(
        InspectorConfig {
            insecure_registries: vec![host.to_owned()],
            tags_page_size: page,
            ..InspectorConfig::default()
        },
        Arc::new(ManualClock::new()),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_without_auth_follows_pagination() {
    let registry = Registry::start().await;
    push_repositories(&registry.pusher()).await;
    let all = ["amd/aim-llama", "amd/aim-qwen", "amd/base", "other/aim-x"];
    for page in [1, 3, 100] {
        let repos = paged(&registry.host, page)
            .list_repositories(&registry.host, "amd/aim-", &Credentials::Anonymous)
            .await
            .unwrap();
        assert_eq!(repos, all, "page size {page}");
    }
    let limited = Inspector::new(InspectorConfig {
        insecure_registries: vec![registry.host.clone()],
        tags_page_size: 1,
        max_tag_pages: 2,
        ..InspectorConfig::default()
    })
    .unwrap();
    let e = limited
        .list_repositories(&registry.host, "", &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(e.category(), OciErrorCategory::Infrastructure, "{e}");
    assert!(e.to_string().contains("more than 2 pages"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_with_basic_auth() {
    let registry = Registry::start_with_auth().await;
    push_repositories(&registry.pusher()).await;
    let inspector = inspector(&[&registry.host], Arc::new(ManualClock::new()));
    let e = inspector
        .list_repositories(&registry.host, "amd/", &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(e.category(), OciErrorCategory::Auth, "{e}");
    let basic = Credentials::Basic {
        username: USER.into(),
        password: PASSWORD.into(),
    };
    let repos = inspector
        .list_repositories(&registry.host, "amd/", &basic)
        .await
        .unwrap();
    assert_eq!(repos.len(), 4);
    let secret = docker_config(&registry.host, USER, PASSWORD);
    let repos = inspector
        .list_repositories_with_secrets(&registry.host, "amd/", &[secret])
        .await
        .unwrap();
    assert!(repos.contains(&"amd/aim-qwen".to_owned()));
    let wrong = docker_config(&registry.host, USER, "wrong");
    let e = inspector
        .list_repositories_with_secrets(&registry.host, "amd/", &[wrong])
        .await
        .unwrap_err();
    assert_eq!(e.category(), OciErrorCategory::Auth, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_with_a_bearer_token_challenge() {
    let realm = TokenRealm::start().await;
    let registry = Registry::start_with_token_realm(&realm.url).await;
    push_repositories(&Pusher::with_auth(
        &registry.host,
        RegistryAuth::Basic(USER.to_owned(), PASSWORD.to_owned()),
    ))
    .await;
    let inspector = inspector(&[&registry.host], Arc::new(ManualClock::new()));
    let before = realm.requests().len();
    let secret = docker_config(&registry.host, USER, PASSWORD);
    let repos = inspector
        .list_repositories_with_secrets(&registry.host, "amd/aim-", &[secret])
        .await
        .unwrap();
    assert_eq!(repos.len(), 4);
    let exchanges: Vec<_> = realm.requests().into_iter().skip(before).collect();
    assert!(
        exchanges.iter().any(|t| t.granted
            && t.scope.as_deref() == Some("registry:catalog:*")
            && t.service.as_deref() == Some(support::registry::SERVICE)),
        "{exchanges:?}"
    );
    let wrong = docker_config(&registry.host, USER, "wrong");
    let e = inspector
        .list_repositories_with_secrets(&registry.host, "amd/aim-", &[wrong])
        .await
        .unwrap_err();
    assert_eq!(e.category(), OciErrorCategory::Auth, "{e}");
}

/// A stand-in for Docker Hub's `GET /v2/namespaces/<ns>/repositories`: two pages for
/// `amdenterpriseai` (the first links the second with an absolute `next`), 404 otherwise.
async fn fake_hub() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let next = format!("{base}/v2/namespaces/amdenterpriseai/repositories?page=2&page_size=2");
    let task = tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let next = next.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let target = head.split(' ').nth(1).unwrap_or_default().to_owned();
                let body = if target.starts_with("/v2/namespaces/amdenterpriseai/repositories") {
                    if target.contains("page=2") {
                        serde_json::json!({"count": 3, "next": null, "results": [
                            {"name": "aim-qwen", "namespace": "amdenterpriseai"}]})
                    } else {
                        serde_json::json!({"count": 3, "next": next, "results": [
                            {"name": "aim-llama", "namespace": "amdenterpriseai"},
                            {"name": "base", "namespace": "amdenterpriseai"}]})
                    }
                } else {
                    let _ = conn
                        .write_all(&response("404 Not Found", "application/json", b"{}"))
                        .await;
                    return;
                };
                let _ = conn
                    .write_all(&response(
                        "200 OK",
                        "application/json",
                        body.to_string().as_bytes(),
                    ))
                    .await;
                let _ = conn.shutdown().await;
            });
        }
    });
    (base, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_hub_lists_a_namespace() {
    let (base, task) = fake_hub().await;
    let inspector = Inspector::new(InspectorConfig {
        docker_hub_api: base,
        tags_page_size: 2,
        ..InspectorConfig::default()
    })
    .unwrap();
    let repos = inspector
        .list_repositories("docker.io", "amdenterpriseai/aim-", &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(
        repos,
        [
            "amdenterpriseai/aim-llama",
            "amdenterpriseai/base",
            "amdenterpriseai/aim-qwen"
        ]
    );
    let e = inspector
        .list_repositories("docker.io", "nobody/x", &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(e.category(), OciErrorCategory::NotFound, "{e}");
    task.abort();
}
