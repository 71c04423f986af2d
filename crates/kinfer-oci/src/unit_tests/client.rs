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

#[tokio::test]
async fn limited_buffer_stops_at_the_limit() {
    use tokio::io::AsyncWriteExt as _;
    let mut b = LimitedBuffer::new(4);
    b.write_all(b"abc").await.unwrap();
    assert!(b.write_all(b"de").await.is_err());
    assert!(b.overflowed);
    assert_eq!(b.bytes, b"abc");
    let mut exact = LimitedBuffer::new(3);
    exact.write_all(b"abc").await.unwrap();
    assert!(!exact.overflowed);
}

#[test]
fn insecure_hosts_compare_lower_cased() {
    let t = Transport::new(
        &["LOCALHOST:5000".to_owned()],
        Duration::from_secs(1),
        Duration::from_secs(1),
    );
    assert_eq!(t.scheme("localhost:5000"), "http");
    assert_eq!(t.protocol("localhost:5000"), ClientProtocol::Http);
    assert_eq!(t.scheme("localhost:5001"), "https");
    assert_eq!(t.protocol("reg.io"), ClientProtocol::Https);
}

#[test]
fn a_full_pool_evicts_one_client_not_all() {
    let pool = ClientPool::new(Transport::new(
        &[],
        Duration::from_secs(1),
        Duration::from_secs(1),
    ));
    let creds = |i: usize| Credentials::Bearer(format!("t{i}"));
    for i in 0..MAX_CLIENTS {
        pool.client("reg.io", &creds(i));
    }
    pool.client("reg.io", &creds(0)); // most recently used now
    pool.client("reg.io", &creds(MAX_CLIENTS));
    assert_eq!(pool.len(), MAX_CLIENTS);
    let key = |i: usize| ("reg.io".to_owned(), creds(i).fingerprint());
    let mut clients = lock(&pool.clients);
    assert!(
        clients.get_value(&key(0)).is_some(),
        "recently used survives"
    );
    assert!(
        clients.get_value(&key(1)).is_none(),
        "least recently used goes"
    );
    assert!(clients.get_value(&key(2)).is_some());
}
