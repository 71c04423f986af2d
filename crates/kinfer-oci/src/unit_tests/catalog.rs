//! Unit tests of `catalog.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use reqwest::header::HeaderValue;

use super::*;

#[test]
fn bearer_challenges() {
    let mut h = HeaderMap::new();
    h.append(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"x\""),
    );
    h.append(
        WWW_AUTHENTICATE,
        HeaderValue::from_static(
            "Bearer realm=\"http://127.0.0.1:9/token\",service=\"reg, one\",scope=\"registry:catalog:*\"",
        ),
    );
    assert_eq!(
        bearer_challenge(&h),
        Some(Challenge {
            realm: "http://127.0.0.1:9/token".into(),
            service: Some("reg, one".into()),
        })
    );
    let mut unquoted = HeaderMap::new();
    unquoted.insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("bearer realm=https://auth.example/token"),
    );
    assert_eq!(
        bearer_challenge(&unquoted).map(|c| (c.realm, c.service)),
        Some(("https://auth.example/token".into(), None))
    );
    let mut basic = HeaderMap::new();
    basic.insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"x\""),
    );
    assert_eq!(bearer_challenge(&basic), None);
}

#[test]
fn duplicates_go_and_the_limit_holds() {
    let names = ["a", "b", "a", "c"].map(String::from).to_vec();
    assert_eq!(
        dedup_bounded(names.clone(), 3, "r").unwrap(),
        ["a", "b", "c"]
    );
    let e = dedup_bounded(names, 2, "r").unwrap_err();
    assert_eq!(e.category(), crate::OciErrorCategory::Infrastructure);
}

#[tokio::test]
async fn docker_hub_needs_a_namespace() {
    crate::ensure_crypto_provider();
    let http = reqwest::Client::new();
    let transport = Transport::new(
        &[],
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(1),
    );
    let paging = Paging {
        page_size: 10,
        max_pages: 2,
        max_tags: 10,
    };
    for prefix in ["", "aim-", "*/aim-"] {
        let target = Target {
            registry: "docker.io",
            prefix,
            hub_api: "http://127.0.0.1:9",
        };
        let e = list_repositories(&http, &transport, target, &Credentials::Anonymous, paging)
            .await
            .unwrap_err();
        assert_eq!(
            e.category(),
            crate::OciErrorCategory::InvalidSpec,
            "{prefix}: {e}"
        );
        assert!(e.to_string().contains("per namespace"), "{e}");
    }
}
