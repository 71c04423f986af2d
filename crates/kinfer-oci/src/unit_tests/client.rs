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
