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
}

#[test]
fn secrets_missing_their_data_key_are_skipped_like_the_kubelet() {
    let missing = PullSecret::new("missing", DOCKER_CONFIG_JSON, BTreeMap::new());
    let empty = PullSecret::docker_config_json("empty", "");
    let old_empty = PullSecret::new(
        "old-empty",
        DOCKER_CFG,
        BTreeMap::from([(".dockercfg".to_owned(), Vec::new())]),
    );
    let good = PullSecret::docker_config_json(
        "good",
        r#"{"auths":{"reg.io":{"username":"u","password":"p"}}}"#,
    );
    assert_eq!(
        credentials_for(
            &r("reg.io/a"),
            &[missing.clone(), empty.clone(), old_empty, good]
        )
        .unwrap(),
        basic("u", "p")
    );
    assert_eq!(
        credentials_for(&r("reg.io/a"), &[missing, empty]).unwrap(),
        Credentials::Anonymous
    );
}

#[test]
fn auth_field_wins_over_username_and_password_like_the_kubelet() {
    let cfg = format!(
        r#"{{"auths":{{"reg.io":{{"username":"stale","password":"old","auth":"{}"}}}}}}"#,
        b64("fresh:new")
    );
    let s = [PullSecret::docker_config_json("s", cfg)];
    assert_eq!(
        credentials_for(&r("reg.io/a"), &s).unwrap(),
        basic("fresh", "new")
    );
    // A broken `auth` is an error even when username/password are present.
    let cfg = r#"{"auths":{"reg.io":{"username":"u","password":"p","auth":"%%%"}}}"#;
    assert!(credentials_for(&r("reg.io/a"), &[PullSecret::docker_config_json("s", cfg)]).is_err());
}

#[test]
fn every_matching_credential_is_a_candidate_most_specific_first() {
    let first = PullSecret::docker_config_json(
        "first",
        r#"{"auths":{"reg.io":{"username":"a","password":"1"},"*.io":{"username":"g","password":"0"}}}"#,
    );
    let second = PullSecret::docker_config_json(
        "second",
        r#"{"auths":{"reg.io/team":{"username":"t","password":"2"},"reg.io":{"username":"b","password":"3"}}}"#,
    );
    let dup = PullSecret::docker_config_json(
        "dup",
        r#"{"auths":{"https://reg.io/v1/":{"username":"a","password":"1"}}}"#,
    );
    assert_eq!(
        credential_candidates(&r("reg.io/team/app"), &[first, second, dup]).unwrap(),
        [
            basic("t", "2"),
            basic("a", "1"),
            basic("b", "3"),
            basic("g", "0")
        ]
    );
    assert_eq!(credential_candidates(&r("x.org/a"), &[]).unwrap(), []);
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

#[test]
fn many_stars_in_a_secret_key_match_in_polynomial_time() {
    // Exponential backtracking needed minutes for this; the iterative matcher is O(n·m).
    let stars = "*a".repeat(30);
    let text = "a".repeat(62);
    assert!(!glob_match(&format!("{stars}b"), &text));
    assert!(glob_match(&stars, &text));
    assert!(glob_match(&format!("{stars}*"), &format!("{text}b")));
    let cfg = format!(
        r#"{{"auths":{{"{stars}b.io":{{"username":"u","password":"p"}},"{stars}.io":{{"username":"v","password":"q"}}}}}}"#
    );
    let s = [PullSecret::docker_config_json("s", cfg)];
    assert_eq!(
        credentials_for(&r(&format!("{text}.io/a")), &s).unwrap(),
        basic("v", "q")
    );
}

#[test]
fn glob_semantics_follow_filepath_match_per_label() {
    assert!(glob_match("*", ""));
    assert!(glob_match("*", "abc"));
    assert!(glob_match("a*c", "abbbc"));
    assert!(glob_match("a*c", "ac"));
    assert!(!glob_match("a*c", "acb"));
    assert!(glob_match("a?c", "abc"));
    assert!(!glob_match("a?c", "ac"));
    assert!(glob_match("**", "x"));
    assert!(!glob_match("abc", "abd"));
    assert!(glob_match("é*", "éa"));
}

#[test]
fn fingerprints_are_keyed_hmacs() {
    // RFC 4231 test case 2 (a 4-byte key, zero-padded like every key shorter than a block).
    let mut key = [0u8; 32];
    key[..4].copy_from_slice(b"Jefe");
    assert_eq!(
        hex::encode(hmac_sha256(&key, b"what do ya want for nothing?")),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    let f = basic("u", "p").fingerprint();
    assert_eq!(f, basic("u", "p").fingerprint());
    assert_ne!(
        basic("a:b", "c").fingerprint(),
        basic("a", "b:c").fingerprint()
    );
    assert_ne!(
        Credentials::Bearer("t".into()).fingerprint(),
        basic("", "t").fingerprint()
    );
    // Not the unkeyed hash of the secret: guessing the password offline does not help.
    let Fingerprint::Keyed(bytes) = f else {
        panic!("keyed")
    };
    let unkeyed = Sha256::new()
        .chain_update(b"basic\0")
        .chain_update(1u64.to_be_bytes())
        .chain_update(b"up")
        .finalize();
    assert_ne!(bytes[..], unkeyed[..]);
    assert_eq!(format!("{f:?}"), "Keyed(<redacted>)");
    assert_eq!(Credentials::Anonymous.fingerprint(), Fingerprint::Anonymous);
}
