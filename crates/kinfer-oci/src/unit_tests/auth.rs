//! Unit tests of `auth.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn r(s: &str) -> ImageReference {
    ImageReference::parse(s).unwrap()
}

fn basic(u: &str, p: &str) -> Credentials {
    Credentials::Basic {
        username: u.to_owned(),
        password: p.to_owned(),
    }
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

#[test]
fn docker_hub_legacy_key_matches_library_images() {
    let cfg = format!(
        r#"{{"auths":{{"https://index.docker.io/v1/":{{"auth":"{}"}}}}}}"#,
        b64("hub:pw")
    );
    let s = PullSecret::docker_config_json("hub", cfg);
    assert_eq!(
        credentials_for(&r("nginx"), std::slice::from_ref(&s)).unwrap(),
        basic("hub", "pw")
    );
    assert_eq!(
        credentials_for(&r("docker.io/amd/aim:1"), std::slice::from_ref(&s)).unwrap(),
        basic("hub", "pw")
    );
    assert_eq!(
        credentials_for(&r("ghcr.io/a/b"), &[s]).unwrap(),
        Credentials::Anonymous
    );
}

#[test]
fn legacy_dockercfg_and_ports() {
    let cfg = r#"{"localhost:5000":{"username":"u","password":"p","email":"x@y"}}"#;
    let s = PullSecret::new(
        "old",
        DOCKER_CFG,
        BTreeMap::from([(".dockercfg".to_owned(), cfg.as_bytes().to_vec())]),
    );
    assert_eq!(
        credentials_for(&r("localhost:5000/a"), std::slice::from_ref(&s)).unwrap(),
        basic("u", "p")
    );
    assert_eq!(
        credentials_for(&r("localhost:5001/a"), &[s]).unwrap(),
        Credentials::Anonymous
    );
}

#[test]
fn most_specific_entry_wins_and_globs_match_labels() {
    let cfg = r#"{"auths":{
        "reg.io":{"username":"host","password":"1"},
        "https://reg.io/team":{"username":"team","password":"2"},
        "*.corp.io":{"username":"glob","password":"3"},
        "eu.corp.io":{"username":"exact","password":"4"}}}"#;
    let s = [PullSecret::docker_config_json("s", cfg)];
    assert_eq!(
        credentials_for(&r("reg.io/team/app"), &s).unwrap(),
        basic("team", "2")
    );
    assert_eq!(
        credentials_for(&r("reg.io/teamx/app"), &s).unwrap(),
        basic("host", "1")
    );
    assert_eq!(
        credentials_for(&r("us.corp.io/a"), &s).unwrap(),
        basic("glob", "3")
    );
    assert_eq!(
        credentials_for(&r("eu.corp.io/a"), &s).unwrap(),
        basic("exact", "4")
    );
    assert_eq!(
        credentials_for(&r("a.b.corp.io/a"), &s).unwrap(),
        Credentials::Anonymous
    );
}

#[test]
fn malformed_secrets_are_typed_and_do_not_leak() {
    let s = PullSecret::docker_config_json("bad", r#"{"auths":{"reg.io":{"auth":"%%%hunter2"}}}"#);
    let e = credentials_for(&r("reg.io/a"), &[s]).unwrap_err();
    assert_eq!(e.category(), crate::OciErrorCategory::InvalidSpec);
    assert!(e.to_string().contains("\"bad\""));
    assert!(!e.to_string().contains("hunter2"));
    let s = PullSecret::docker_config_json("notjson", "{hunter2");
    let e = credentials_for(&r("reg.io/a"), &[s]).unwrap_err();
    assert!(!e.to_string().contains("hunter2"), "{e}");
    let missing = PullSecret::new("empty", DOCKER_CONFIG_JSON, BTreeMap::new());
    assert!(credentials_for(&r("reg.io/a"), &[missing]).is_err());
}

#[test]
fn other_types_are_skipped_and_debug_redacts() {
    let opaque = PullSecret::new("o", "Opaque", BTreeMap::new());
    assert_eq!(
        credentials_for(&r("reg.io/a"), &[opaque]).unwrap(),
        Credentials::Anonymous
    );
    let text = format!(
        "{:?} {:?}",
        basic("u", "hunter2"),
        Credentials::Bearer("tok3n".into())
    );
    assert!(!text.contains("hunter2") && !text.contains("tok3n"));
    let s = PullSecret::docker_config_json("s", "hunter2");
    assert!(!format!("{s:?}").contains("hunter2"));
    assert_ne!(basic("u", "a").fingerprint(), basic("u", "b").fingerprint());
}
