//! A counting reverse proxy on loopback, in front of a real registry.
//!
//! - Every request is recorded (method and path with query) before it is forwarded, so tests
//!   can count exactly what the code under test sent over the wire.
//! - Forwarding is byte-for-byte, one request per connection (`Connection: close` is forced on
//!   both sides).
//! - Optional tag pagination: the Debian registry (distribution 2.8) ignores `n`/`last` on
//!   `/tags/list` and returns every tag at once. With [`Proxy::paginating`], the proxy fetches
//!   the registry's full list and serves it the way distribution 3 does — sorted, at most
//!   `page_cap` tags per page, `Link: <...?n=..&last=..>; rel="next"` — so following `Link`
//!   headers is exercised against real registry content.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The scheme of the request's `Authorization` header (`Basic`, `Bearer`), if any.
    pub auth_scheme: Option<String>,
}

/// A canned answer for some requests: `(method, path) → Some(raw HTTP response)`.
pub type Intercept = Arc<dyn Fn(&str, &str) -> Option<Vec<u8>> + Send + Sync>;

pub struct Proxy {
    /// `127.0.0.1:<port>`
    pub host: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: JoinHandle<()>,
}

/// A complete `HTTP/1.1` response with `Content-Length` and `Connection: close`.
pub fn response(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

impl Proxy {
    /// Forwards everything to `upstream`.
    pub async fn start(upstream: &str) -> Self {
        Self::spawn(upstream, None, None).await
    }

    /// Forwards to `upstream`, serving tag lists in pages of at most `page_cap`.
    pub async fn paginating(upstream: &str, page_cap: usize) -> Self {
        Self::spawn(upstream, Some(page_cap), None).await
    }

    /// Answers the requests `intercept` recognises itself (hostile or failing registry
    /// behaviour), forwarding the rest to `upstream`.
    pub async fn intercepting(
        upstream: &str,
        intercept: impl Fn(&str, &str) -> Option<Vec<u8>> + Send + Sync + 'static,
    ) -> Self {
        Self::spawn(upstream, None, Some(Arc::new(intercept))).await
    }

    async fn spawn(upstream: &str, page_cap: Option<usize>, intercept: Option<Intercept>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let host = listener.local_addr().expect("proxy addr").to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (log, upstream) = (seen.clone(), upstream.to_owned());
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (log, upstream, intercept) = (log.clone(), upstream.clone(), intercept.clone());
                tokio::spawn(async move {
                    let _ = serve(conn, &upstream, &log, page_cap, intercept.as_ref()).await;
                });
            }
        });
        Self { host, seen, task }
    }

    /// Everything seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("proxy log").clone()
    }

    /// Forgets what was seen.
    pub fn clear(&self) {
        self.seen.lock().expect("proxy log").clear();
    }

    /// Requests with `method` whose path contains `fragment`.
    pub fn count(&self, method: &str, fragment: &str) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.method == method && s.path.contains(fragment))
            .count()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut client: TcpStream,
    upstream: &str,
    log: &Mutex<Vec<Seen>>,
    page_cap: Option<usize>,
    intercept: Option<&Intercept>,
) -> std::io::Result<()> {
    let (head, rest) = read_head(&mut client).await?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let mut parts = request_line.split(' ');
    let (method, path) = (
        parts.next().unwrap_or_default().to_owned(),
        parts.next().unwrap_or_default().to_owned(),
    );
    let headers: Vec<&str> = lines
        .filter(|l| !l.is_empty() && !l.to_ascii_lowercase().starts_with("connection:"))
        .collect();
    let auth_scheme = headers.iter().find_map(|h| {
        let (name, value) = h.split_once(':')?;
        name.trim().eq_ignore_ascii_case("authorization").then(|| {
            value
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned()
        })
    });
    log.lock().expect("proxy log").push(Seen {
        method: method.clone(),
        path: path.clone(),
        auth_scheme,
    });

    if let Some(canned) = intercept.and_then(|f| f(&method, &path)) {
        client.write_all(&canned).await?;
        client.shutdown().await?;
        return Ok(());
    }

    if let Some(cap) = page_cap
        && method == "GET"
        && path.contains("/tags/list")
    {
        return paginate(&mut client, upstream, &path, &headers, cap).await;
    }

    let mut server = TcpStream::connect(upstream).await?;
    let mut forwarded = format!("{request_line}\r\n");
    for h in &headers {
        forwarded.push_str(h);
        forwarded.push_str("\r\n");
    }
    forwarded.push_str("Connection: close\r\n\r\n");
    server.write_all(forwarded.as_bytes()).await?;
    server.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    Ok(())
}

/// Reads up to the end of the request head; returns it and any body bytes already read.
async fn read_head(conn: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            return Ok((head, buf[end + 4..].to_vec()));
        }
        let n = conn.read(&mut chunk).await?;
        if n == 0 || buf.len() > 64 * 1024 {
            return Err(std::io::Error::other("incomplete request head"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn paginate(
    client: &mut TcpStream,
    upstream: &str,
    path: &str,
    headers: &[&str],
    cap: usize,
) -> std::io::Result<()> {
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
    };
    let n = param("n")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(usize::MAX)
        .min(cap);
    let last = param("last");

    // HTTP/1.0 so the registry answers unchunked and closes.
    let mut server = TcpStream::connect(upstream).await?;
    let mut request = format!("GET {route} HTTP/1.0\r\n");
    for h in headers {
        let lower = h.to_ascii_lowercase();
        if lower.starts_with("host:") || lower.starts_with("authorization:") {
            request.push_str(h);
            request.push_str("\r\n");
        }
    }
    request.push_str("\r\n");
    server.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    server.read_to_end(&mut response).await?;
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("bad upstream response"))?;
    let status_ok = response.starts_with(b"HTTP/1.0 200") || response.starts_with(b"HTTP/1.1 200");
    if !status_ok {
        client.write_all(&response).await?;
        return Ok(());
    }
    let body: serde_json::Value =
        serde_json::from_slice(&response[split + 4..]).map_err(std::io::Error::other)?;
    let mut tags: Vec<String> = body["tags"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    tags.sort();
    let after: Vec<String> = tags
        .into_iter()
        .filter(|t| last.as_ref().is_none_or(|l| t > l))
        .collect();
    let page: Vec<String> = after.iter().take(n).cloned().collect();
    let link = match page.last() {
        Some(last_tag) if after.len() > page.len() => {
            format!("Link: <{route}?n={n}&last={last_tag}>; rel=\"next\"\r\n")
        }
        _ => String::new(),
    };
    let out = serde_json::to_vec(&serde_json::json!({ "name": body["name"], "tags": page }))
        .map_err(std::io::Error::other)?;
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{link}Connection: close\r\n\r\n",
        out.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(&out).await?;
    client.shutdown().await?;
    Ok(())
}
