//! Registry authentication against real OCI distribution servers: pull secrets on an htpasswd
//! registry (every matching credential tried in turn), and the bearer token exchange with a
//! token realm served in-process.
//!
//! Every test starts its own `docker-registry` (Debian's build of the reference distribution
//! server) on a loopback port and pushes images it builds itself with `oci-client`. Request
//! counts come from a counting proxy on loopback. Nothing sleeps to synchronise: time-to-live
//! expiry is driven by a `ManualClock`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use kinfer_oci::{Credentials, DOCKER_CFG, ManualClock, OciErrorCategory, PullSecret};
use oci_client::secrets::RegistryAuth;
use pretty_assertions::assert_eq;
use serde_json::json;

use support::fixtures::{aim_labels, docker_config, image, inspector};
use support::images::Pusher;
use support::proxy::Proxy;
use support::registry::{PASSWORD, Registry, USER};
use support::token::TokenRealm;

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
    assert_eq!(img.labels(), &aim_labels());

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

    // Every matching credential is tried in turn, like the kubelet: a stale secret listed
    // first does not hide the right one.
    let stale_then_right = [
        docker_config(&host, USER, "stale-password"),
        docker_config(&host, USER, PASSWORD),
    ];
    let fresh = self::inspector(&[&host], Arc::new(ManualClock::new()));
    assert_eq!(
        fresh
            .inspect_with_secrets(&r, &stale_then_right)
            .await
            .unwrap(),
        img
    );
    assert_eq!(
        fresh
            .list_tags_with_secrets(&r, &stale_then_right)
            .await
            .unwrap(),
        ["v1"]
    );

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_token_exchange_with_a_token_realm() {
    let realm = TokenRealm::start().await;
    let registry = Registry::start_with_token_realm(&realm.url).await;
    Pusher::with_auth(
        &registry.host,
        RegistryAuth::Basic(USER.to_owned(), PASSWORD.to_owned()),
    )
    .push_image("private/app", Some("v1"), &aim_labels(), "amd64")
    .await;
    let proxy = Proxy::start(&registry.host).await;
    let inspector = inspector(&[&proxy.host], Arc::new(ManualClock::new()));
    let r = image(&proxy.host, "private/app:v1");
    let granted_before = realm.requests().iter().filter(|t| t.granted).count();

    let right = [docker_config(&proxy.host, USER, PASSWORD)];
    let img = inspector.inspect_with_secrets(&r, &right).await.unwrap();
    assert_eq!(img.labels(), &aim_labels());
    let exchanges: Vec<_> = realm.requests().into_iter().skip(granted_before).collect();
    assert!(
        exchanges.iter().any(|t| t.granted
            && t.scope.as_deref() == Some("repository:private/app:pull")
            && t.service.as_deref() == Some(support::registry::SERVICE)),
        "{exchanges:?}"
    );
    let registry_calls: Vec<_> = proxy
        .seen()
        .into_iter()
        .filter(|s| s.path.contains("/manifests/") || s.path.contains("/blobs/"))
        .collect();
    assert!(!registry_calls.is_empty());
    assert!(
        registry_calls
            .iter()
            .all(|s| s.auth_scheme.as_deref() == Some("Bearer")),
        "the registry only ever sees the token: {registry_calls:?}"
    );

    // Tag listing runs its own Bearer path (oci-client's token, our request).
    proxy.clear();
    let basic = Credentials::Basic {
        username: USER.to_owned(),
        password: PASSWORD.to_owned(),
    };
    assert_eq!(inspector.list_tags(&r, &basic).await.unwrap(), ["v1"]);
    let listed: Vec<_> = proxy
        .seen()
        .into_iter()
        .filter(|s| s.path.contains("/tags/list"))
        .collect();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].auth_scheme.as_deref(), Some("Bearer"));

    // The realm refuses: wrong password, no credentials. Both are Auth, for inspection and
    // for tag listing.
    let wrong = Credentials::Basic {
        username: USER.to_owned(),
        password: "wrong-password".to_owned(),
    };
    for credentials in [wrong, Credentials::Anonymous] {
        let err = inspector.inspect(&r, &credentials).await.unwrap_err();
        assert_eq!(
            err.category(),
            OciErrorCategory::Auth,
            "{credentials:?}: {err}"
        );
        assert!(!err.to_string().contains("wrong-password"), "{err}");
        let err = inspector.list_tags(&r, &credentials).await.unwrap_err();
        assert_eq!(
            err.category(),
            OciErrorCategory::Auth,
            "{credentials:?}: {err}"
        );
    }
}
