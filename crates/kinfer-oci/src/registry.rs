//! The project's own registry client: every request kinfer sends to a registry goes through
//! one `reqwest` client built here, and every answer is read within a bound.
//!
//! Contract:
//! - Bounded reads ([`read_limited`]): a body longer than its limit is refused while it
//!   streams, never buffered. Manifests and indexes at most [`MAX_MANIFEST_BYTES`] (4 MiB, what
//!   distribution registries accept on push), token answers [`MAX_TOKEN_BYTES`], error bodies
//!   [`MAX_ERROR_BYTES`] (a longer one is cut there: only a short, sanitised excerpt of it ever
//!   reaches an error message, [`OciError::from_status`]); listing pages and config blobs have
//!   their own limits (`tags`, `client`).
//! - Redirects ([`http_client`]): at most [`MAX_REDIRECTS`], and never from HTTPS to plain
//!   HTTP (the request fails: a registry cannot move credentials or content off TLS). reqwest
//!   drops `Authorization` on a redirect to another host.
//! - Authorization ([`authorization`]), the distribution token flow: a `registrytoken` is sent
//!   as is; otherwise `GET /v2/` unauthenticated; a `Bearer` challenge gets a token for the
//!   request's scope from the challenge's realm (Basic credentials are sent there, as Docker and
//!   containerd do; a realm on plain HTTP is refused for a registry on HTTPS), any other answer
//!   means Basic credentials when there are some, else none. The result is kept per (API host,
//!   credential fingerprint, scope) in [`Tokens`], bounded, until the token's `expires_in`
//!   (60 s when absent, at most an hour) runs out.
//! - Errors: a transport failure is [`OciError::from_reqwest`], an answer other than 2xx is
//!   [`OciError::from_status`] with its (cut) body. Nothing here logs a credential or a token.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};
use reqwest::{RequestBuilder, StatusCode, Url};
use serde::Deserialize;

use crate::auth::{Credentials, Fingerprint};
use crate::cache::{Lru, lock};
use crate::error::OciError;

/// The largest manifest or image index read.
pub(crate) const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;
/// The largest token realm answer read.
pub(crate) const MAX_TOKEN_BYTES: usize = 64 * 1024;
/// How much of an error answer's body is read.
pub(crate) const MAX_ERROR_BYTES: usize = 64 * 1024;
/// Redirects followed for one request.
pub(crate) const MAX_REDIRECTS: usize = 10;
/// Authorizations kept ([`Tokens`]).
const MAX_TOKENS: usize = 256;
/// A token's life when the realm does not say (the distribution spec's default).
const DEFAULT_TOKEN_LIFE: Duration = Duration::from_mins(1);
/// The longest a token is kept, whatever the realm says.
const MAX_TOKEN_LIFE: Duration = Duration::from_hours(1);

/// The HTTP client of every registry request; see the module contract.
pub(crate) fn http_client(
    connect_timeout: Duration,
    read_timeout: Duration,
) -> Result<reqwest::Client, reqwest::Error> {
    builder(connect_timeout, read_timeout).build()
}

/// Installs ring as rustls's process-wide crypto provider unless one is installed already.
///
/// reqwest is built without a provider of its own (the workspace keeps a single TLS provider,
/// the ring one kube uses) and reads the process default when a client is built. Installing is
/// idempotent: a second call, or a provider installed by the binary, wins.
pub fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err means another thread installed one first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// [`http_client`]'s builder (tests add a trust anchor to it).
fn builder(connect_timeout: Duration, read_timeout: Duration) -> reqwest::ClientBuilder {
    ensure_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .read_timeout(read_timeout)
        .user_agent(concat!("kinfer-oci/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            let was_tls = attempt.previous().iter().any(|u| u.scheme() == "https");
            if was_tls && attempt.url().scheme() != "https" {
                return attempt.error("refusing a redirect from HTTPS to plain HTTP");
            }
            attempt.follow()
        }))
}

/// How a request is authorized.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Auth {
    None,
    Basic(String, String),
    Bearer(String),
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::None => "None",
            Self::Basic(..) => "Basic(<redacted>)",
            Self::Bearer(_) => "Bearer(<redacted>)",
        })
    }
}

impl Auth {
    /// `request` with this authorization.
    pub fn apply(&self, request: RequestBuilder) -> RequestBuilder {
        match self {
            Self::None => request,
            Self::Basic(user, password) => request.basic_auth(user, Some(password)),
            Self::Bearer(token) => request.bearer_auth(token),
        }
    }

    /// Basic when `credentials` are, else none (a registry that sent no token challenge).
    fn without_token(credentials: &Credentials) -> Self {
        match credentials {
            Credentials::Basic { username, password } => {
                Self::Basic(username.clone(), password.clone())
            }
            Credentials::Bearer(token) => Self::Bearer(token.clone()),
            Credentials::Anonymous => Self::None,
        }
    }
}

/// Authorizations by (API host, credentials, scope), until they expire; bounded (least
/// recently used first out).
pub(crate) struct Tokens(Mutex<Lru<TokenKey, (Auth, Instant)>>);

/// API host, credentials, scope.
type TokenKey = (String, Fingerprint, String);

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens").finish_non_exhaustive()
    }
}

impl Default for Tokens {
    fn default() -> Self {
        Self(Mutex::new(Lru::new(MAX_TOKENS)))
    }
}

/// Where and as whom a request goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    /// `http` or `https` (`client::Transport::scheme`).
    pub scheme: &'static str,
    /// The API host.
    pub host: &'a str,
    /// The token scope (`repository:<name>:pull`).
    pub scope: &'a str,
    /// What errors name.
    pub shown: &'a str,
}

impl Target<'_> {
    /// `<scheme>://<host><path>`.
    pub fn url(&self, path: &str) -> Result<Url, OciError> {
        Url::parse(&format!("{}://{}{path}", self.scheme, self.host)).map_err(|e| {
            OciError::Registry {
                reference: self.shown.to_owned(),
                status: None,
                message: format!("cannot build a registry URL: {e}"),
            }
        })
    }
}

/// The authorization of requests to `target` with `credentials`; see the module contract.
pub(crate) async fn authorization(
    http: &reqwest::Client,
    tokens: &Tokens,
    target: Target<'_>,
    credentials: &Credentials,
) -> Result<Auth, OciError> {
    if let Credentials::Bearer(token) = credentials {
        return Ok(Auth::Bearer(token.clone()));
    }
    let key = (
        target.host.to_owned(),
        credentials.fingerprint(),
        target.scope.to_owned(),
    );
    let now = Instant::now();
    if let Some((auth, until)) = lock(&tokens.0).get_value(&key)
        && *until > now
    {
        return Ok(auth.clone());
    }
    let probe = target.url("/v2/")?;
    let response = http
        .get(probe)
        .send()
        .await
        .map_err(|e| OciError::from_reqwest(target.shown, &e))?;
    let status = response.status();
    let (auth, life) = match bearer_challenge(response.headers()) {
        Some(challenge) if status == StatusCode::UNAUTHORIZED => {
            token(http, &challenge, target, credentials).await?
        }
        _ if status.is_success() || status == StatusCode::UNAUTHORIZED => {
            (Auth::without_token(credentials), MAX_TOKEN_LIFE)
        }
        _ => {
            let body = error_body(response).await;
            return Err(OciError::from_status(target.shown, status.as_u16(), &body));
        }
    };
    lock(&tokens.0).insert(key, (auth.clone(), now + life), now);
    Ok(auth)
}

/// A `Bearer` challenge: where to get a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub realm: String,
    pub service: Option<String>,
}

/// The `Bearer` challenge of a `WWW-Authenticate` header, if any.
pub(crate) fn bearer_challenge(headers: &HeaderMap) -> Option<Challenge> {
    headers
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            let (scheme, params) = v.trim().split_once(' ')?;
            if !scheme.eq_ignore_ascii_case("bearer") {
                return None;
            }
            let mut realm = None;
            let mut service = None;
            for (key, value) in challenge_params(params) {
                match key.to_ascii_lowercase().as_str() {
                    "realm" => realm = Some(value),
                    "service" => service = Some(value),
                    _ => {}
                }
            }
            Some(Challenge {
                realm: realm?,
                service,
            })
        })
}

/// `realm="https://a/token",service="reg",scope="x:y:z"` → pairs (quoted values may hold commas).
fn challenge_params(params: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = params.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_owned();
        let after = after.trim_start();
        let (value, tail) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (quoted[..end].to_owned(), &quoted[end + 1..]),
                None => (quoted.to_owned(), ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (after[..end].trim().to_owned(), &after[end..]),
                None => (after.trim().to_owned(), ""),
            }
        };
        out.push((key, value));
        rest = tail.trim_start().trim_start_matches(',');
    }
    out
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// A token for `target`'s scope from the challenge's realm, and how long it lives.
pub(crate) async fn token(
    http: &reqwest::Client,
    challenge: &Challenge,
    target: Target<'_>,
    credentials: &Credentials,
) -> Result<(Auth, Duration), OciError> {
    let shown = target.shown;
    let mut url = Url::parse(&challenge.realm).map_err(|e| OciError::Registry {
        reference: shown.to_owned(),
        status: None,
        message: format!("token realm {:?} is not a URL: {e}", challenge.realm),
    })?;
    if target.scheme == "https" && url.scheme() != "https" {
        return Err(OciError::Registry {
            reference: shown.to_owned(),
            status: None,
            message: "the registry names a token realm on plain HTTP; refusing to send \
                      credentials off TLS"
                .to_owned(),
        });
    }
    {
        let mut query = url.query_pairs_mut();
        if let Some(service) = &challenge.service {
            query.append_pair("service", service);
        }
        query.append_pair("scope", target.scope);
    }
    let request = match credentials {
        Credentials::Basic { username, password } => {
            http.get(url).basic_auth(username, Some(password))
        }
        _ => http.get(url),
    };
    let response = request
        .send()
        .await
        .map_err(|e| OciError::from_reqwest(shown, &e))?;
    let status = response.status();
    if !status.is_success() {
        let body = error_body(response).await;
        return Err(match status.as_u16() {
            401 | 403 => OciError::Unauthorized {
                reference: shown.to_owned(),
                status: Some(status.as_u16()),
                message: "the token realm refused the credentials".to_owned(),
            },
            code => OciError::from_status(shown, code, &body),
        });
    }
    let body = read_limited(response, MAX_TOKEN_BYTES)
        .await
        .map_err(|e| e.into_error(shown, "token realm answer", MAX_TOKEN_BYTES))?;
    let answer: TokenAnswer = serde_json::from_slice(&body).map_err(|e| OciError::Registry {
        reference: shown.to_owned(),
        status: Some(status.as_u16()),
        message: format!("token realm answer is not JSON: {e}"),
    })?;
    let token = answer
        .token
        .or(answer.access_token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| OciError::Unauthorized {
            reference: shown.to_owned(),
            status: None,
            message: "token realm answered without a token".to_owned(),
        })?;
    let life = answer.expires_in.map_or(DEFAULT_TOKEN_LIFE, |s| {
        Duration::from_secs(s.saturating_sub(5)).min(MAX_TOKEN_LIFE)
    });
    Ok((Auth::Bearer(token), life))
}

/// Why a bounded read failed.
#[derive(Debug)]
pub(crate) enum ReadError {
    Transport(reqwest::Error),
    TooLarge,
}

impl ReadError {
    /// As an error about `what` of `shown` (a body over `limit` bytes is Infrastructure: the
    /// registry misbehaves; callers with a better category map [`ReadError::TooLarge`] first).
    pub fn into_error(self, shown: &str, what: &str, limit: usize) -> OciError {
        match self {
            Self::Transport(e) => OciError::from_reqwest(shown, &e),
            Self::TooLarge => OciError::Registry {
                reference: shown.to_owned(),
                status: None,
                message: format!("{what} is larger than {limit} bytes"),
            },
        }
    }
}

/// The response body, refusing (without buffering it) a body longer than `limit`.
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, ReadError> {
    if response
        .content_length()
        .is_some_and(|n| n > u64::try_from(limit).unwrap_or(u64::MAX))
    {
        return Err(ReadError::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(ReadError::Transport)? {
        if chunk.len() > limit - body.len() {
            return Err(ReadError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// At most [`MAX_ERROR_BYTES`] of an error answer's body (what follows is dropped unread), as
/// text; empty when it cannot be read.
pub(crate) async fn error_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BYTES - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == MAX_ERROR_BYTES {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Sends `request` with `auth`; a transport failure is an error, any answer is returned.
pub(crate) async fn send(
    request: RequestBuilder,
    auth: &Auth,
    shown: &str,
) -> Result<reqwest::Response, OciError> {
    auth.apply(request)
        .send()
        .await
        .map_err(|e| OciError::from_reqwest(shown, &e))
}

#[cfg(test)]
#[path = "unit_tests/registry.rs"]
mod tests;
