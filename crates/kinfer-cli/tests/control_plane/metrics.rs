//! The operators' secure metrics on the real API server: `/metrics` over HTTPS, served to a
//! scraper whose ServiceAccount token the API server authenticates (TokenReview) and
//! authorizes for `get` on `/metrics` (SubjectAccessReview, granted by the shipped
//! `<operator>-metrics-reader` ClusterRole), reviewed under the operator's own deployed RBAC.

use std::net::SocketAddr;
use std::sync::Arc;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use kinfer_operator::Endpoints;
use kinfer_operator::metrics_auth::MetricsAuth;
use kinfer_operator::server::{self, Role};
use kinfer_operator::tls::Identity;
use kube::api::{Api, ObjectMeta, PostParams};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::watch;

use crate::{client_as, kubectl, plane};

const NS: &str = "metrics-auth";
/// The ServiceAccount the Zerfoo operator's install runs it as.
const OPERATOR: &str = "system:serviceaccount:zerfoo-system:zerfoo-operator";

/// `GET path` over TLS to `addr`, trusting only `cert`, with `token` as the bearer.
async fn https_get(
    addr: SocketAddr,
    cert: &CertificateDer<'static>,
    path: &str,
    token: Option<&str>,
) -> (u16, String) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .expect("the TLS handshake with the generated certificate");
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    // The server may close without a TLS close_notify; what was read is the answer.
    let _ = tls.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line: {response:?}"));
    (status, response)
}

async fn token(client: &kube::Client, account: &str) -> String {
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(600),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    Api::<ServiceAccount>::namespaced(client.clone(), NS)
        .create_token_request(account, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .expect("a token")
        .token
}

/// 200 for a token bound to the metrics-reader role, 403 for one that is not, 401 without a
/// token or with one the API server does not know; 500 when the operator's identity may not
/// review tokens (so the deployed rules are what makes it work).
#[tokio::test]
async fn metrics_are_served_over_https_to_scrapers_the_api_server_authorizes() {
    let plane = tokio::task::spawn_blocking(plane).await.unwrap();
    crate::install::install(plane, "zerfoo-operator");
    let admin = plane.client().await.unwrap();
    let create = PostParams::default();
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NS.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(admin.clone())
        .create(&create, &ns)
        .await
        .unwrap();
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), NS);
    for name in ["scraper", "stranger"] {
        let sa = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        accounts.create(&create, &sa).await.unwrap();
    }
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some("metrics-auth-scraper".to_owned()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: "zerfoo-operator-metrics-reader".to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: "scraper".to_owned(),
            namespace: Some(NS.to_owned()),
            ..Subject::default()
        }]),
    };
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&create, &binding)
        .await
        .unwrap();
    let (scraper, stranger) = (
        token(&admin, "scraper").await,
        token(&admin, "stranger").await,
    );

    let identity = Identity::self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = identity.chain[0].clone();
    let tls = kinfer_operator::tls::config(identity).unwrap();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let (_stop, stopping) = watch::channel(false);
    let endpoints = Endpoints::default();
    let serve = |auth: MetricsAuth| {
        let role = Role::SecureMetrics {
            tls: Arc::clone(&tls),
            auth,
        };
        let (endpoints, stopping) = (endpoints.clone(), stopping.clone());
        async move {
            server::spawn(&[(any, role)], &endpoints, &stopping)
                .await
                .unwrap()[0]
        }
    };
    let kubeconfig = plane.kubeconfig();
    let operator = serve(MetricsAuth::new(client_as(kubeconfig, OPERATOR).await)).await;

    let (status, body) = https_get(operator, &cert, "/metrics", Some(&scraper)).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("# EOF"), "{body}");
    let (status, body) = https_get(operator, &cert, "/metrics", Some(&stranger)).await;
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("# EOF"), "{body}");
    assert_eq!(https_get(operator, &cert, "/metrics", None).await.0, 401);
    // The payload's first character changed (the signature's last one may carry only unused
    // bits, and a decoder that ignores them would still accept the token).
    let payload = scraper.find('.').unwrap() + 1;
    let swapped = if &scraper[payload..=payload] == "e" {
        "f"
    } else {
        "e"
    };
    let forged = format!(
        "{}{swapped}{}",
        &scraper[..payload],
        &scraper[payload + 1..]
    );
    assert_eq!(
        https_get(operator, &cert, "/metrics", Some(&forged))
            .await
            .0,
        401
    );
    assert_eq!(
        https_get(operator, &cert, "/healthz", Some(&scraper))
            .await
            .0,
        404
    );

    // Reviewed under an identity without the operator's rules, nothing is served.
    let unprivileged = format!("system:serviceaccount:{NS}:stranger");
    let bare = serve(MetricsAuth::new(client_as(kubeconfig, &unprivileged).await)).await;
    assert_eq!(
        https_get(bare, &cert, "/metrics", Some(&scraper)).await.0,
        500
    );

    // Plain HTTP to the HTTPS port gets no metrics.
    let mut tcp = tokio::net::TcpStream::connect(operator).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer).await;
    assert!(
        !String::from_utf8_lossy(&answer).contains("# EOF"),
        "plain HTTP was answered with metrics"
    );
    let _ = kubectl(plane, &["delete", "namespace", NS, "--wait=false"]);
    let _ = kubectl(
        plane,
        &["delete", "clusterrolebinding", "metrics-auth-scraper"],
    );
}
