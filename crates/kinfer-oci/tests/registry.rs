//! kinfer-oci against a real OCI distribution server.
//!
//! Every test starts its own `docker-registry` (Debian's build of the reference distribution
//! server) on a loopback port, pushes images it builds itself with `oci-client`, and inspects
//! them through the public API. Request counts come from a counting proxy on loopback.
//! Nothing sleeps to synchronise: time-to-live expiry is driven by a `ManualClock`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use kinfer_oci::{
    Credentials, DOCKER_CFG, ImageReference, Inspector, InspectorConfig, ManualClock, OciError,
    OciErrorCategory, PullSecret,
};
use oci_client::secrets::RegistryAuth;
use pretty_assertions::assert_eq;
use serde_json::json;

use support::images::{Pusher, labels};
use support::proxy::Proxy;
use support::registry::{PASSWORD, Registry, USER};

const TTL: Duration = Duration::from_mins(5);

fn inspector(hosts: &[&str], clock: Arc<ManualClock>) -> Inspector {
    let config = InspectorConfig {
        insecure_registries: hosts.iter().map(|h| (*h).to_owned()).collect(),
        tag_ttl: TTL,
        timeout: Duration::from_secs(30),
        ..InspectorConfig::default()
    };
    Inspector::with_clock(config, clock).expect("inspector")
}

fn image(host: &str, path: &str) -> ImageReference {
    ImageReference::parse(&format!("{host}/{path}")).expect("reference")
}

fn aim_labels() -> BTreeMap<String, String> {
    labels(&[
        ("com.amd.aim.title", "aim-llama-test"),
        (
            "com.amd.aim.model.canonicalName",
            "meta-llama/Llama-3.1-8B-Instruct",
        ),
        (
            "com.amd.aim.model.source",
            "hf://meta-llama/Llama-3.1-8B-Instruct",
        ),
        (
            "com.amd.aim.model.tags",
            " text-generation ,chat,  instruction ",
        ),
        ("com.amd.aim.hfToken.required", "True"),
        ("org.amd.silogen.model.versions", "1.0, 1.1"),
        (
            "com.amd.aim.model.recommendedDeployments",
            r#"{'gpuModel': 'MI300X', 'gpuCount': 1, 'precision': 'fp8', 'metric': 'latency', 'description': "Meta's Llama on MI300X, tuned for latency"}, {'gpuModel': 'MI325X', 'gpuCount': 2, 'precision': 'fp16', 'metric': 'throughput', 'description': 'It\'s the "fast" one', 'profileId': 'mi325x-fp16-throughput'}"#,
        ),
        ("org.opencontainers.image.version", "0.8.5"),
        ("org.opencontainers.image.vendor", "AMD"),
        ("maintainer", "kinfer tests"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_labels_and_aim_metadata() {
    let registry = Registry::start().await;
    let l = aim_labels();
    let digest = Pusher::new(&registry.host)
        .push_image("amd/aim-llama", Some("0.8.5"), &l, "amd64")
        .await;
    let inspector = inspector(&[&registry.host], Arc::new(ManualClock::new()));
    let r = image(&registry.host, "amd/aim-llama:0.8.5");

    let img = inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(img.digest, digest);
    assert_eq!(img.manifest_digest, digest);
    assert_eq!(img.labels, l);
    assert_eq!(img.metadata.original_labels, l);
    let model = img.metadata.model.clone().expect("AIM labels parsed");
    assert_eq!(model.title.as_deref(), Some("aim-llama-test"));
    assert_eq!(model.tags, ["text-generation", "chat", "instruction"]);
    assert_eq!(model.versions, ["1.0", "1.1"], "legacy prefix fallback");
    assert_eq!(model.hf_token_required, Some(true));
    let deployments = &model.recommended_deployments;
    assert_eq!(deployments.len(), 2);
    assert_eq!(
        deployments[0].description.as_deref(),
        Some("Meta's Llama on MI300X, tuned for latency"),
        "apostrophe inside a double-quoted Python string survives"
    );
    assert_eq!(
        deployments[1].description.as_deref(),
        Some(r#"It's the "fast" one"#)
    );
    assert_eq!(deployments[1].gpu_count, Some(2));
    assert_eq!(
        deployments[1].profile_id.as_deref(),
        Some("mi325x-fp16-throughput")
    );
    let oci = img.metadata.oci.clone().expect("OCI labels parsed");
    assert_eq!(
        (oci.version.as_deref(), oci.vendor.as_deref()),
        (Some("0.8.5"), Some("AMD"))
    );

    let pinned = r.with_digest(&digest).unwrap();
    assert_eq!(
        inspector
            .inspect(&pinned, &Credentials::Anonymous)
            .await
            .unwrap(),
        img
    );
}

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
        (first.digest.as_str(), first.labels["build"].as_str()),
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
            after_ttl.labels["build"].as_str()
        ),
        (d2.as_str(), "2")
    );

    let old = r.with_digest(&d1).unwrap();
    let old = inspector
        .inspect(&old, &Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(old.labels["build"], "1", "the old digest stays addressable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_index_resolves_linux_amd64_then_first() {
    let registry = Registry::start().await;
    let pusher = Pusher::new(&registry.host);
    let mut digests = BTreeMap::new();
    for arch in ["arm64", "amd64", "s390x"] {
        let d = pusher
            .push_image("team/multi", None, &labels(&[("arch", arch)]), arch)
            .await;
        digests.insert(arch, d);
    }
    let both = pusher
        .push_index(
            "team/multi",
            "both",
            &[
                (digests["arm64"].clone(), "arm64"),
                (digests["amd64"].clone(), "amd64"),
            ],
        )
        .await;
    let no_amd64 = pusher
        .push_index(
            "team/multi",
            "no-amd64",
            &[
                (digests["s390x"].clone(), "s390x"),
                (digests["arm64"].clone(), "arm64"),
            ],
        )
        .await;
    let inspector = inspector(&[&registry.host], Arc::new(ManualClock::new()));

    let img = inspector
        .inspect(
            &image(&registry.host, "team/multi:both"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap();
    assert_eq!(
        img.labels["arch"], "amd64",
        "linux/amd64 wins although listed second"
    );
    assert_eq!(
        (img.digest.as_str(), img.manifest_digest.as_str()),
        (both.as_str(), digests["amd64"].as_str())
    );

    let img = inspector
        .inspect(
            &image(&registry.host, "team/multi:no-amd64"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap();
    assert_eq!(
        img.labels["arch"], "s390x",
        "without linux/amd64 the first entry is used"
    );
    assert_eq!(
        (img.digest.as_str(), img.manifest_digest.as_str()),
        (no_amd64.as_str(), digests["s390x"].as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_tags_repositories_and_digests_are_not_found() {
    let registry = Registry::start().await;
    Pusher::new(&registry.host)
        .push_image("team/app", Some("v1"), &labels(&[]), "amd64")
        .await;
    let inspector = inspector(&[&registry.host], Arc::new(ManualClock::new()));
    let absent_digest = format!("team/app@sha256:{}", "0".repeat(64));
    for path in [
        "team/app:missing",
        "team/nothing:v1",
        absent_digest.as_str(),
    ] {
        let err = inspector
            .inspect(&image(&registry.host, path), &Credentials::Anonymous)
            .await
            .unwrap_err();
        assert_eq!(err.category(), OciErrorCategory::NotFound, "{path}: {err}");
        assert!(matches!(err, OciError::NotFound { .. }), "{err:?}");
    }
    let err = inspector
        .list_tags(
            &image(&registry.host, "team/nothing"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::NotFound, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_labels_and_configs_are_invalid_spec() {
    let registry = Registry::start().await;
    let pusher = Pusher::new(&registry.host);
    let label = "com.amd.aim.model.recommendedDeployments";
    pusher
        .push_image(
            "team/bad",
            Some("labels"),
            &labels(&[(label, "{'gpuModel': 'MI300X', 'gpuCount': 'two'}")]),
            "amd64",
        )
        .await;
    pusher
        .push_raw_image(
            "team/bad",
            Some("config"),
            b"this is not an image config",
            "x",
        )
        .await;
    let inspector = inspector(&[&registry.host], Arc::new(ManualClock::new()));

    let err = inspector
        .inspect(
            &image(&registry.host, "team/bad:labels"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::InvalidSpec);
    assert!(
        matches!(&err, OciError::InvalidLabel { label: l, .. } if l == label),
        "{err}"
    );

    let err = inspector
        .inspect(
            &image(&registry.host, "team/bad:config"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::InvalidSpec, "{err}");
}

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

fn docker_config(host: &str, user: &str, password: &str) -> PullSecret {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let config = json!({ "auths": { format!("http://{host}"): { "auth": auth } } });
    PullSecret::docker_config_json("regcred", config.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_secrets_authenticate_against_an_htpasswd_registry() {
    let registry = Registry::start_with_auth().await;
    let host = registry.host.clone();
    Pusher::with_auth(
        &host,
        RegistryAuth::Basic(USER.to_owned(), PASSWORD.to_owned()),
    )
    .push_image("private/app", Some("v1"), &aim_labels(), "amd64")
    .await;
    let inspector = inspector(&[&host], Arc::new(ManualClock::new()));
    let r = image(&host, "private/app:v1");

    let right = [docker_config(&host, USER, PASSWORD)];
    let img = inspector.inspect_with_secrets(&r, &right).await.unwrap();
    assert_eq!(img.labels, aim_labels());

    let legacy_cfg = json!({ host.clone(): { "username": USER, "password": PASSWORD } });
    let legacy = PullSecret::new(
        "legacy",
        DOCKER_CFG,
        BTreeMap::from([(".dockercfg".to_owned(), legacy_cfg.to_string().into_bytes())]),
    );
    assert_eq!(
        inspector.inspect_with_secrets(&r, &[legacy]).await.unwrap(),
        img
    );

    // No secret, a secret for another registry, a wrong password: all Auth, none served from
    // the cache filled with the right credentials.
    let elsewhere = [docker_config("other.registry.io", USER, PASSWORD)];
    let wrong = [docker_config(&host, USER, "wrong-password")];
    for (case, secrets) in [
        ("none", &[][..]),
        ("elsewhere", &elsewhere[..]),
        ("wrong", &wrong[..]),
    ] {
        let err = inspector
            .inspect_with_secrets(&r, secrets)
            .await
            .unwrap_err();
        assert_eq!(err.category(), OciErrorCategory::Auth, "{case}: {err}");
        assert!(!err.to_string().contains("wrong-password"), "{err}");
    }

    let basic = Credentials::Basic {
        username: USER.to_owned(),
        password: PASSWORD.to_owned(),
    };
    assert_eq!(inspector.list_tags(&r, &basic).await.unwrap(), ["v1"]);
    let err = inspector
        .list_tags(&r, &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::Auth, "{err}");
}

#[tokio::test]
async fn unreachable_and_hung_registries_are_infrastructure() {
    // Nothing listens: connection refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_host = closed.local_addr().unwrap().to_string();
    drop(closed);
    let inspector = inspector(&[&closed_host], Arc::new(ManualClock::new()));
    let err = inspector
        .inspect(&image(&closed_host, "a/b:c"), &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::Infrastructure, "{err}");

    // Accepts connections (kernel backlog) but never answers: the call's deadline fires.
    let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hung_host = hung.local_addr().unwrap().to_string();
    let config = InspectorConfig {
        insecure_registries: vec![hung_host.clone()],
        timeout: Duration::from_millis(300),
        ..InspectorConfig::default()
    };
    let inspector = Inspector::new(config).unwrap();
    let err = inspector
        .inspect(&image(&hung_host, "a/b:c"), &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::Timeout { .. }), "{err:?}");
    assert_eq!(err.category(), OciErrorCategory::Infrastructure);
    drop(hung);
}
