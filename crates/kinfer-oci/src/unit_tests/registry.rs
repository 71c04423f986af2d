//! Unit tests of `registry.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use reqwest::header::HeaderValue;

use super::*;

#[test]
fn bearer_challenges() {
    let mut h = HeaderMap::new();
    h.append(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"x\""),
    );
    h.append(
        WWW_AUTHENTICATE,
        HeaderValue::from_static(
            "Bearer realm=\"http://127.0.0.1:9/token\",service=\"reg, one\",scope=\"registry:catalog:*\"",
        ),
    );
    assert_eq!(
        bearer_challenge(&h),
        Some(Challenge {
            realm: "http://127.0.0.1:9/token".into(),
            service: Some("reg, one".into()),
        })
    );
    let mut unquoted = HeaderMap::new();
    unquoted.insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("bearer realm=https://auth.example/token"),
    );
    assert_eq!(
        bearer_challenge(&unquoted).map(|c| (c.realm, c.service)),
        Some(("https://auth.example/token".into(), None))
    );
    let mut basic = HeaderMap::new();
    basic.insert(
        WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"x\""),
    );
    assert_eq!(bearer_challenge(&basic), None);
}

/// Serves every connection on `listener` over TLS (a certificate for `localhost` from
/// `identity`) with `answer`.
async fn serve_tls(
    listener: tokio::net::TcpListener,
    identity: (rcgen::Certificate, rcgen::KeyPair),
    answer: String,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (cert, key) = identity;
    let key = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    while let Ok((conn, _)) = listener.accept().await {
        let (acceptor, answer) = (acceptor.clone(), answer.clone());
        tokio::spawn(async move {
            let Ok(mut tls) = acceptor.accept(conn).await else {
                return;
            };
            let mut head = [0u8; 4096];
            let _ = tls.read(&mut head).await;
            let _ = tls.write_all(answer.as_bytes()).await;
            let _ = tls.shutdown().await;
        });
    }
}

#[tokio::test]
async fn a_redirect_from_https_to_plain_http_is_refused() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    ensure_crypto_provider();
    // The plain-HTTP target counts who reaches it.
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain_addr = plain.local_addr().unwrap();
    let reached = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = reached.clone();
    tokio::spawn(async move {
        while let Ok((_conn, _)) = plain.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let trust = reqwest::Certificate::from_der(cert.der()).unwrap();
    let tls = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = tls.local_addr().unwrap().port();
    let answer = |location: String| {
        format!(
            "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    };
    tokio::spawn(serve_tls(
        tls,
        (
            cert.clone(),
            rcgen::KeyPair::try_from(key.serialize_der().as_slice()).unwrap(),
        ),
        answer(format!("http://{plain_addr}/v2/")),
    ));
    let http = builder(Duration::from_secs(5), Duration::from_secs(5))
        .add_root_certificate(trust.clone())
        .build()
        .unwrap();
    let err = http
        .get(format!("https://localhost:{port}/v2/"))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_redirect(), "{err:?}");
    assert_eq!(reached.load(Ordering::SeqCst), 0, "nothing left TLS");

    // A redirect that stays on HTTPS is followed (to a TLS endpoint that redirects forever:
    // the bound ends it).
    let looping = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let loop_port = looping.local_addr().unwrap().port();
    tokio::spawn(serve_tls(
        looping,
        (cert, key),
        answer(format!("https://localhost:{loop_port}/v2/")),
    ));
    let err = http
        .get(format!("https://localhost:{loop_port}/v2/"))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_redirect(), "{err:?}");
    assert!(
        format!("{err:?}").contains(&format!("more than {MAX_REDIRECTS} redirects")),
        "{err:?}"
    );
}
