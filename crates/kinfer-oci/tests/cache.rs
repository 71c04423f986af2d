//! The digest cache and tag TTL against a real OCI distribution server, counted by a proxy:
//! cache hits send nothing, a re-pushed tag is noticed after the TTL, a failed re-check serves
//! the cached result on Infrastructure errors only, label failures are cached by digest.
//!
//! Every test starts its own `docker-registry` (Debian's build of the reference distribution
//! server) on a loopback port and pushes images it builds itself with `oci-client`. Request
//! counts come from a counting proxy on loopback. Nothing sleeps to synchronise: time-to-live
//! expiry is driven by a `ManualClock`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kinfer_oci::{Credentials, ManualClock, OciError, OciErrorCategory};
use pretty_assertions::assert_eq;

use support::fixtures::{TTL, aim_labels, image, inspector};
use support::images::{Pusher, labels};
use support::proxy::Proxy;
use support::registry::Registry;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_cache_hit_makes_no_second_manifest_request() {
    let registry = Registry::start().await;
    let proxy = Proxy::start(&registry.host).await;
    Pusher::new(&registry.host)
        .push_image("team/cached", Some("v1"), &aim_labels(), "amd64")
        .await;
    let clock = Arc::new(ManualClock::new());
    let inspector = inspector(&[&proxy.host], clock.clone());
    let r = image(&proxy.host, "team/cached:v1");

    let first = inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(proxy.count("GET", "/manifests/"), 1, "{:?}", proxy.seen());
    assert_eq!(
        proxy.count("GET", "/blobs/"),
        1,
        "only the config blob, no layer"
    );
    assert_eq!(
        proxy.count("HEAD", "/manifests/"),
        0,
        "a new tag is fetched directly"
    );

    proxy.clear();
    let again = inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap();
    let pinned = r.with_digest(&first.digest).unwrap();
    let by_digest = inspector
        .inspect(&pinned, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(proxy.seen(), [], "cache hits send nothing to the registry");
    assert_eq!((&again, &by_digest), (&first, &first));

    clock.advance(TTL + Duration::from_secs(1));
    let after_ttl = inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(after_ttl, first);
    assert_eq!(
        proxy.count("HEAD", "/manifests/v1"),
        1,
        "{:?}",
        proxy.seen()
    );
    assert_eq!(
        proxy.count("GET", "/manifests/"),
        0,
        "unchanged digest: no manifest GET"
    );
    assert_eq!(
        proxy.count("GET", "/blobs/"),
        0,
        "unchanged digest: no config GET"
    );

    proxy.clear();
    inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(proxy.seen(), [], "the re-resolution restarted the TTL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_pushed_tag_is_noticed_after_ttl() {
    let registry = Registry::start().await;
    let pusher = Pusher::new(&registry.host);
    let d1 = pusher
        .push_image(
            "team/app",
            Some("stable"),
            &labels(&[("build", "1")]),
            "amd64",
        )
        .await;
    let clock = Arc::new(ManualClock::new());
    let inspector = inspector(&[&registry.host], clock.clone());
    let r = image(&registry.host, "team/app:stable");
    let first = inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(
        (first.digest.as_str(), first.labels()["build"].as_str()),
        (d1.as_str(), "1")
    );

    let d2 = pusher
        .push_image(
            "team/app",
            Some("stable"),
            &labels(&[("build", "2")]),
            "amd64",
        )
        .await;
    assert_ne!(d1, d2);
    clock.advance(TTL.saturating_sub(Duration::from_secs(1)));
    let within_ttl = inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(within_ttl.digest, d1, "within the TTL the tag is trusted");

    clock.advance(Duration::from_secs(1));
    let after_ttl = inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(
        (
            after_ttl.digest.as_str(),
            after_ttl.labels()["build"].as_str()
        ),
        (d2.as_str(), "2")
    );

    let old = r.with_digest(&d1).unwrap();
    let old = inspector
        .inspect(&old, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(
        old.labels()["build"],
        "1",
        "the old digest stays addressable"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tag_re_check_serves_the_cached_result_only_on_infrastructure_errors() {
    let registry = Registry::start().await;
    Pusher::new(&registry.host)
        .push_image("team/app", Some("v1"), &labels(&[("build", "1")]), "amd64")
        .await;
    // Manifest requests (the HEAD, and oci-client's GET fallback when the HEAD carries no
    // digest) answer with the status in `head_status`, when set.
    let head_status = Arc::new(Mutex::new(None::<&'static str>));
    let status = head_status.clone();
    let proxy = Proxy::intercepting(&registry.host, move |_, path| {
        let status = (*status.lock().unwrap())?;
        path.contains("/manifests/")
            .then(|| support::proxy::response(status, "application/json", b""))
    })
    .await;
    let clock = Arc::new(ManualClock::new());
    let inspector = inspector(&[&proxy.host], clock.clone());
    let r = image(&proxy.host, "team/app:v1");
    let first = inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap();

    for (status, served) in [
        ("503 Service Unavailable", Ok(())),
        ("502 Bad Gateway", Ok(())),
        ("401 Unauthorized", Err(OciErrorCategory::Auth)),
        ("404 Not Found", Err(OciErrorCategory::NotFound)),
    ] {
        *head_status.lock().unwrap() = Some(status);
        clock.advance(TTL + Duration::from_secs(1));
        proxy.clear();
        let got = inspector.inspect(&r, &Credentials::Anonymous).await;
        assert_eq!(
            proxy.count("HEAD", "/manifests/v1"),
            1,
            "{status}: the stale tag is re-checked every time"
        );
        match served {
            Ok(()) => assert_eq!(got.unwrap(), first, "{status}"),
            Err(category) => assert_eq!(got.unwrap_err().category(), category, "{status}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_label_results_are_cached_by_digest() {
    let registry = Registry::start().await;
    let proxy = Proxy::start(&registry.host).await;
    let label = "com.amd.aim.model.recommendedDeployments";
    let digest = Pusher::new(&registry.host)
        .push_image(
            "team/bad",
            Some("v1"),
            &labels(&[(label, "{'gpuCount': ")]),
            "amd64",
        )
        .await;
    let clock = Arc::new(ManualClock::new());
    let inspector = inspector(&[&proxy.host], clock.clone());
    let by_tag = image(&proxy.host, "team/bad:v1");
    let by_digest = by_tag.with_digest(&digest).unwrap();
    let invalid = |e: OciError| matches!(&e, OciError::InvalidLabel { label: l, .. } if l == label);

    assert!(invalid(
        inspector
            .inspect(&by_tag, &Credentials::Anonymous)
            .await
            .unwrap_err()
    ));
    assert_eq!(proxy.count("GET", "/blobs/"), 1);
    proxy.clear();
    assert!(invalid(
        inspector
            .inspect(&by_tag, &Credentials::Anonymous)
            .await
            .unwrap_err()
    ));
    assert!(invalid(
        inspector
            .inspect(&by_digest, &Credentials::Anonymous)
            .await
            .unwrap_err()
    ));
    assert_eq!(proxy.seen(), [], "the failure is served from the cache");

    clock.advance(TTL + Duration::from_secs(1));
    assert!(invalid(
        inspector
            .inspect(&by_tag, &Credentials::Anonymous)
            .await
            .unwrap_err()
    ));
    assert_eq!(
        proxy.count("HEAD", "/manifests/v1"),
        1,
        "{:?}",
        proxy.seen()
    );
    assert_eq!(
        proxy.count("GET", "/manifests/") + proxy.count("GET", "/blobs/"),
        0,
        "after the TTL only the tag is re-checked: {:?}",
        proxy.seen()
    );
}
