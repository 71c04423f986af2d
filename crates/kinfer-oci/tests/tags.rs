//! Tag listing against a real OCI distribution server: pagination through `Link` headers, and
//! the bounds on hostile tag lists.
//!
//! Every test starts its own `docker-registry` (Debian's build of the reference distribution
//! server) on a loopback port and pushes images it builds itself with `oci-client`. Request
//! counts come from a counting proxy on loopback. Nothing sleeps to synchronise: time-to-live
//! expiry is driven by a `ManualClock`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use kinfer_oci::{Credentials, Inspector, InspectorConfig, ManualClock, OciErrorCategory};
use pretty_assertions::assert_eq;
use serde_json::json;

use support::fixtures::{image, inspector};
use support::images::{Pusher, labels};
use support::proxy::Proxy;
use support::registry::Registry;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_listed_across_pages() {
    let registry = Registry::start().await;
    let pusher = Pusher::new(&registry.host);
    let mut expected: Vec<String> = (1..=7).map(|i| format!("0.{i}.0")).collect();
    expected.push("latest".to_owned());
    for tag in &expected {
        pusher
            .push_image("amd/catalog", Some(tag), &labels(&[("tag", tag)]), "amd64")
            .await;
    }
    let inspector = inspector(&[&registry.host], Arc::new(ManualClock::new()));

    // Straight from the registry: distribution 2.8 ignores `n` and answers in one page.
    let mut direct = inspector
        .list_tags(
            &image(&registry.host, "amd/catalog"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap();
    direct.sort();
    assert_eq!(direct, expected);

    // Through a proxy that pages the registry's list three tags at a time, with Link headers.
    let proxy = Proxy::paginating(&registry.host, 3).await;
    let inspector = self::inspector(&[&proxy.host], Arc::new(ManualClock::new()));
    let paged = inspector
        .list_tags(&image(&proxy.host, "amd/catalog"), &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(paged, expected, "every page, in order, no duplicates");
    let requested: Vec<String> = proxy
        .seen()
        .into_iter()
        .filter(|s| s.path.contains("/tags/list"))
        .map(|s| s.path)
        .collect();
    assert_eq!(
        requested,
        [
            "/v2/amd/catalog/tags/list?n=100",
            "/v2/amd/catalog/tags/list?n=3&last=0.3.0",
            "/v2/amd/catalog/tags/list?n=3&last=0.6.0",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_tag_lists_are_bounded() {
    let registry = Registry::start().await;
    let pusher = Pusher::new(&registry.host);
    for tag in ["a", "b", "c"] {
        pusher
            .push_image("team/tags", Some(tag), &labels(&[]), "amd64")
            .await;
    }
    // A 5 MiB page without Content-Length: only the streaming limit can stop it.
    let proxy = Proxy::intercepting(&registry.host, |method, path| {
        (method == "GET" && path.contains("/tags/list")).then(|| {
            let tags: Vec<String> = (0..100_000).map(|i| format!("tag-{i:046}")).collect();
            let body = serde_json::to_vec(&json!({ "name": "team/tags", "tags": tags })).unwrap();
            assert!(body.len() > 5 * 1024 * 1024);
            let mut out =
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                    .to_vec();
            out.extend_from_slice(&body);
            out
        })
    })
    .await;
    let huge = self::inspector(&[&proxy.host], Arc::new(ManualClock::new()))
        .list_tags(&image(&proxy.host, "team/tags"), &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(huge.category(), OciErrorCategory::Infrastructure, "{huge}");
    assert!(huge.to_string().contains("larger than"), "{huge}");

    let config = InspectorConfig {
        insecure_registries: vec![registry.host.clone()],
        max_tags: 2,
        ..InspectorConfig::default()
    };
    let too_many = Inspector::new(config)
        .unwrap()
        .list_tags(&image(&registry.host, "team/tags"), &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(too_many.category(), OciErrorCategory::Infrastructure);
    assert!(
        too_many.to_string().contains("more than 2 tags"),
        "{too_many}"
    );
}
