//! Unit tests of `client.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

#[test]
fn labels_from_config_blobs() {
    let blob = br#"{"architecture":"amd64","os":"linux","config":{"Labels":{"a":"1"}},"rootfs":{"type":"layers","diff_ids":[]}}"#;
    assert_eq!(
        config_labels(blob).unwrap(),
        BTreeMap::from([("a".to_owned(), "1".to_owned())])
    );
    assert!(
        config_labels(br#"{"config":{"Labels":null}}"#)
            .unwrap()
            .is_empty()
    );
    assert!(config_labels(b"{}").unwrap().is_empty());
    assert!(config_labels(b"not json").is_err());
}

#[test]
fn config_limits() {
    assert_eq!(config_limit(0), Ok(0));
    assert_eq!(config_limit(10), Ok(10));
    assert!(config_limit(-1).is_err());
    assert!(config_limit(MAX_CONFIG_BYTES + 1).is_err());
    assert_eq!(
        config_limit(MAX_CONFIG_BYTES),
        Ok(usize::try_from(MAX_CONFIG_BYTES).unwrap())
    );
}

#[test]
fn insecure_hosts_compare_lower_cased() {
    let t = Transport::new(&["LOCALHOST:5000".to_owned()]);
    assert_eq!(t.scheme("localhost:5000"), "http");
    assert_eq!(t.scheme("localhost:5001"), "https");
    assert_eq!(t.scheme("reg.io"), "https");
}

#[test]
fn digests_are_checked_in_their_own_algorithm() {
    let body = b"{}";
    let sha = sha256(body);
    assert_eq!(digest_of(&sha, body), Some(sha.clone()));
    let sha512 = digest_of("sha512:00", body).unwrap();
    assert!(sha512.starts_with("sha512:") && sha512.len() == 7 + 128);
    assert_eq!(digest_of("md5:00", body), None);
}

#[test]
fn an_index_resolves_to_linux_amd64_else_its_first_entry() {
    let entries: Vec<IndexEntry> = serde_json::from_str(
        r#"[{"digest":"sha256:a","platform":{"os":"linux","architecture":"arm64"}},
            {"digest":"sha256:b","platform":{"os":"linux","architecture":"amd64"}}]"#,
    )
    .unwrap();
    assert_eq!(linux_amd64_or_first(&entries).unwrap().digest, "sha256:b");
    assert_eq!(
        linux_amd64_or_first(&entries[..1]).unwrap().digest,
        "sha256:a"
    );
    assert!(linux_amd64_or_first(&[]).is_none());
}
