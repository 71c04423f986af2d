//! Inspection against a real OCI distribution server: labels and AIM metadata, image
//! indexes, and the errors (NotFound; InvalidSpec for bad content and hostile sizes;
//! Infrastructure for 5xx, refused connections and hangs).
//!
//! Every test starts its own `docker-registry` (Debian's build of the reference distribution
//! server) on a loopback port and pushes images it builds itself with `oci-client`. Request
//! counts come from a counting proxy on loopback. Nothing sleeps to synchronise: time-to-live
//! expiry is driven by a `ManualClock`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kinfer_oci::{
    Credentials, Inspector, InspectorConfig, ManualClock, OciError, OciErrorCategory,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use support::fixtures::{aim_labels, image, inspector};
use support::images::{Pusher, labels};
use support::proxy::Proxy;
use support::registry::Registry;

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
    assert_eq!(img.labels(), &l);
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
        img.labels()["arch"],
        "amd64",
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
        img.labels()["arch"],
        "s390x",
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
async fn hostile_config_sizes_are_invalid_spec() {
    let registry = Registry::start().await;
    let pusher = Pusher::new(&registry.host);
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Labels": { "padding": "x".repeat(4096) } },
        "rootfs": { "type": "layers", "diff_ids": [] },
    }))
    .unwrap();
    let honest = i64::try_from(config.len()).unwrap();
    for (tag, declared) in [("honest", honest), ("understated", 16), ("negative", -1)] {
        pusher
            .push_declaring_config_size("team/sizes", Some(tag), &config, tag, declared)
            .await;
    }
    let inspector = inspector(&[&registry.host], Arc::new(ManualClock::new()));
    let inspect = |tag: &'static str| {
        let r = image(&registry.host, &format!("team/sizes:{tag}"));
        let inspector = &inspector;
        async move { inspector.inspect(&r, &Credentials::Anonymous).await }
    };
    assert_eq!(
        inspect("honest").await.unwrap().labels()["padding"].len(),
        4096
    );
    for tag in ["understated", "negative"] {
        let err = inspect(tag).await.unwrap_err();
        assert!(
            matches!(err, OciError::UnsupportedImage { .. }),
            "{tag}: {err:?}"
        );
        assert_eq!(
            err.category(),
            OciErrorCategory::InvalidSpec,
            "{tag}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_labels_are_invalid_spec() {
    let registry = Registry::start().await;
    let pusher = Pusher::new(&registry.host);
    let big = "x".repeat(64 * 1024);
    let fits: Vec<(String, String)> = (0..3).map(|i| (format!("l{i}"), big.clone())).collect();
    let too_big: Vec<(String, String)> = (0..5).map(|i| (format!("l{i}"), big.clone())).collect();
    for (tag, l) in [("fits", &fits), ("too-big", &too_big)] {
        pusher
            .push_image(
                "team/labels",
                Some(tag),
                &l.iter().cloned().collect(),
                "amd64",
            )
            .await;
    }
    let inspector = inspector(&[&registry.host], Arc::new(ManualClock::new()));
    let ok = inspector
        .inspect(
            &image(&registry.host, "team/labels:fits"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap();
    assert_eq!(ok.labels().len(), 3);
    assert_eq!(ok.labels(), &ok.metadata.original_labels);
    let err = inspector
        .inspect(
            &image(&registry.host, "team/labels:too-big"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::LabelsTooLarge { .. }), "{err:?}");
    assert_eq!(err.category(), OciErrorCategory::InvalidSpec);
    assert!(err.to_string().contains("image labels too large"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_infrastructure() {
    let registry = Registry::start().await;
    Pusher::new(&registry.host)
        .push_image("team/flaky", Some("v1"), &labels(&[]), "amd64")
        .await;
    let proxy = Proxy::intercepting(&registry.host, |_, path| {
        let (status, body): (&str, &[u8]) = if path.contains("/manifests/") {
            ("503 Service Unavailable", b"upstream busy")
        } else if path.contains("/tags/list") {
            // An OCI error body with a code that says nothing: the status decides.
            (
                "500 Internal Server Error",
                br#"{"errors":[{"code":"UNKNOWN","message":"boom"}]}"#,
            )
        } else {
            return None;
        };
        Some(support::proxy::response(status, "application/json", body))
    })
    .await;
    let inspector = inspector(&[&proxy.host], Arc::new(ManualClock::new()));
    let r = image(&proxy.host, "team/flaky:v1");
    let err = inspector
        .inspect(&r, &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::Infrastructure, "{err}");
    assert!(err.to_string().contains("503"), "{err}");
    let err = inspector
        .list_tags(&r, &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::Infrastructure, "{err}");
    assert!(err.to_string().contains("UNKNOWN: boom"), "{err}");
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

/// Answers every connection with `answer` (a token realm or registry gone hostile).
async fn answering(answer: Vec<u8>) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let task = tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut head = [0u8; 4096];
                let _ = conn.read(&mut head).await;
                let _ = conn.write_all(&answer).await;
            });
        }
    });
    (host, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_manifests_token_answers_and_error_bodies_are_read_within_bounds() {
    let registry = Registry::start().await;
    Pusher::new(&registry.host)
        .push_image("team/app", Some("v1"), &labels(&[]), "amd64")
        .await;
    // A 5 MiB manifest (over the 4 MiB distribution registries accept), and a 2 MiB error
    // body full of line breaks and escapes.
    let manifest = format!(r#"{{"schemaVersion":2,"x":"{}"}}"#, "m".repeat(5 << 20));
    let error_body = "line\nStatus: Ready\r\n\u{1b}[31m".repeat(200_000);
    let proxy = Proxy::intercepting(&registry.host, move |_, path| {
        if path.contains("/manifests/big") {
            Some(support::proxy::response(
                "200 OK",
                "application/vnd.oci.image.manifest.v1+json",
                manifest.as_bytes(),
            ))
        } else if path.contains("/manifests/evil") {
            // An index naming a "digest" that walks out of the repository's paths.
            let index = r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"digest":"sha256:../../_catalog?n=1","size":2}]}"#;
            Some(support::proxy::response(
                "200 OK",
                "application/vnd.oci.image.index.v1+json",
                index.as_bytes(),
            ))
        } else if path.contains("/manifests/broken") {
            Some(support::proxy::response(
                "500 Internal Server Error",
                "text/plain",
                error_body.as_bytes(),
            ))
        } else {
            None
        }
    })
    .await;
    let inspector = inspector(&[&proxy.host], Arc::new(ManualClock::new()));

    let err = inspector
        .inspect(&image(&proxy.host, "team/app:big"), &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::InvalidSpec, "{err}");
    assert!(err.to_string().contains("larger than"), "{err}");

    let err = inspector
        .inspect(
            &image(&proxy.host, "team/app:evil"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::InvalidSpec, "{err}");
    assert!(err.to_string().contains("invalid digest"), "{err}");
    assert_eq!(proxy.count("GET", "_catalog"), 0, "{:?}", proxy.seen());

    let err = inspector
        .inspect(
            &image(&proxy.host, "team/app:broken"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::Infrastructure, "{err}");
    let text = err.to_string();
    assert!(text.len() < 600, "a short excerpt: {} bytes", text.len());
    assert!(
        !text.contains('\n') && !text.contains('\r') && !text.contains('\u{1b}'),
        "{text:?}"
    );

    // A token realm that answers a megabyte: refused while it streams.
    let token = format!(r#"{{"token":"{}"}}"#, "t".repeat(1 << 20));
    let (realm, _task) = answering(support::proxy::response(
        "200 OK",
        "application/json",
        token.as_bytes(),
    ))
    .await;
    let guarded = Registry::start_with_token_realm(&format!("http://{realm}/token")).await;
    let behind_realm = support::fixtures::inspector(&[&guarded.host], Arc::new(ManualClock::new()));
    let err = behind_realm
        .inspect(
            &image(&guarded.host, "team/app:v1"),
            &Credentials::Anonymous,
        )
        .await
        .unwrap_err();
    assert_eq!(err.category(), OciErrorCategory::Infrastructure, "{err}");
    assert!(
        err.to_string().contains("token realm answer is larger"),
        "{err}"
    );
}
