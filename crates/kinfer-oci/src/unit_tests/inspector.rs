//! Unit tests of `inspector.rs`: the offline switch.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;

use super::*;

/// A loopback listener nobody answers: an inspector that connected would show up as a
/// pending connection.
fn silent_registry() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let host = listener.local_addr().unwrap().to_string();
    (listener, host)
}

fn offline() -> Inspector {
    Inspector::new(InspectorConfig {
        offline: true,
        ..InspectorConfig::default()
    })
    .unwrap()
}

fn assert_offline(e: &OciError, target: &str) {
    assert!(
        matches!(e, OciError::Offline { reference } if reference.contains(target)),
        "{e:?}"
    );
    assert_eq!(e.category(), OciErrorCategory::InvalidSpec);
    let message = e.to_string();
    assert!(message.contains("offline"), "{message}");
    assert!(
        message.contains("render does not contact registries"),
        "{message}"
    );
}

#[tokio::test]
async fn offline_inspector_never_connects() {
    let (listener, host) = silent_registry();
    let inspector = Inspector::new(InspectorConfig {
        offline: true,
        insecure_registries: vec![host.clone()],
        ..InspectorConfig::default()
    })
    .unwrap();
    let image = ImageReference::parse(&format!("{host}/team/model:1.0")).unwrap();

    let e = inspector
        .inspect(&image, &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_offline(&e, "team/model:1.0");
    let e = inspector
        .list_tags(&image, &Credentials::Anonymous)
        .await
        .unwrap_err();
    assert_offline(&e, "team/model");

    let err = listener.accept().map(|_| ()).unwrap_err();
    assert_eq!(
        err.kind(),
        std::io::ErrorKind::WouldBlock,
        "no connection was made"
    );
}

#[tokio::test]
async fn offline_is_reported_before_pull_secrets_are_read() {
    let inspector = offline();
    let image = ImageReference::parse("registry.example/team/model:1.0").unwrap();
    let broken = PullSecret::docker_config_json("broken", "not json");
    let e = inspector
        .inspect_with_secrets(&image, std::slice::from_ref(&broken))
        .await
        .unwrap_err();
    assert_offline(&e, "registry.example/team/model:1.0");
    let e = inspector
        .list_tags_with_secrets(&image, &[broken])
        .await
        .unwrap_err();
    assert_offline(&e, "registry.example/team/model");
}

#[test]
fn online_by_default() {
    assert!(!InspectorConfig::default().offline);
}
