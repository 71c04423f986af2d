//! Unit tests of `catalog.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

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
    let transport = Transport::new(&[]);
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
