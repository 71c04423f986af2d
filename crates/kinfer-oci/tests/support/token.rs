//! A bearer-token realm on loopback, for registries started with token auth.
//!
//! - `GET /token?scope=…&service=…` with HTTP basic [`USER`]/[`PASSWORD`] answers
//!   `{"token": "kinfer-token-<n>"}`; anything else is `401` with an OCI error body.
//! - Every request is recorded (scope, service, whether credentials were presented and
//!   accepted), so tests can check what `oci-client`'s token exchange sent.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::proxy::response;
use super::registry::{PASSWORD, USER};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    pub scope: Option<String>,
    pub service: Option<String>,
    pub presented_credentials: bool,
    pub granted: bool,
}

pub struct TokenRealm {
    /// `http://127.0.0.1:<port>/token`
    pub url: String,
    requests: Arc<Mutex<Vec<TokenRequest>>>,
    task: JoinHandle<()>,
}

impl TokenRealm {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind realm");
        let url = format!(
            "http://{}/token",
            listener.local_addr().expect("realm addr")
        );
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let _ = serve(conn, &log).await;
                });
            }
        });
        Self {
            url,
            requests,
            task,
        }
    }

    pub fn requests(&self) -> Vec<TokenRequest> {
        self.requests.lock().expect("realm log").clone()
    }
}

impl Drop for TokenRealm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut conn: TcpStream, log: &Mutex<Vec<TokenRequest>>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = conn.read(&mut chunk).await?;
        if n == 0 || buf.len() > 64 * 1024 {
            return Err(std::io::Error::other("incomplete request head"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let mut lines = head.split("\r\n");
    let target = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or_default()
        .to_owned();
    let query = target.split_once('?').map(|(_, q)| q).unwrap_or_default();
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| {
                v.replace("%3A", ":")
                    .replace("%2F", "/")
                    .replace("%2C", ",")
                    .replace("%2A", "*")
            })
    };
    let basic = lines.find_map(|l| {
        let (name, value) = l.split_once(':')?;
        if !name.trim().eq_ignore_ascii_case("authorization") {
            return None;
        }
        let encoded = value.trim().strip_prefix("Basic ")?;
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|d| String::from_utf8(d).ok())
    });
    let granted = basic.as_deref() == Some(&format!("{USER}:{PASSWORD}"));
    let answer = {
        let mut log = log.lock().expect("realm log");
        log.push(TokenRequest {
            scope: param("scope"),
            service: param("service"),
            presented_credentials: basic.is_some(),
            granted,
        });
        if granted {
            let body = format!(r#"{{"token":"kinfer-token-{}"}}"#, log.len());
            response("200 OK", "application/json", body.as_bytes())
        } else {
            response(
                "401 Unauthorized",
                "application/json",
                br#"{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}"#,
            )
        }
    };
    conn.write_all(&answer).await?;
    conn.shutdown().await?;
    Ok(())
}
