//! Registry credentials from Kubernetes image pull secrets.
//!
//! Contract:
//! - Input: the Secrets' `type` and decoded `data` bytes ([`PullSecret`]). Types
//!   `kubernetes.io/dockerconfigjson` (key `.dockerconfigjson`, `{"auths": {...}}`) and legacy
//!   `kubernetes.io/dockercfg` (key `.dockercfg`, the `auths` map itself) are read; Secrets of
//!   other types are skipped with a warning, like the kubelet does; so are Secrets whose data
//!   key is missing or empty (malformed content stays an error).
//! - An entry's credentials are the base64 `auth` (`user:pass`), which wins like in the
//!   kubelet's `DockerConfigEntry`, else `username`/`password`, else `registrytoken` (a bearer
//!   token). Entries with none of them are ignored.
//! - Matching follows the kubelet's keyring: the key may carry a scheme (ignored), a port (must
//!   match) and a path (a repository prefix, matched on whole components; `/v1/` and `/v2/`
//!   mean "the whole host"); each host label may be a glob (`*` any run, `?` one character, as
//!   Go's `filepath.Match` per label; matched in O(n·m), so a hostile key cannot stall a
//!   worker). Docker Hub's spellings
//!   (`https://index.docker.io/v1/`, `index.docker.io`, `registry-1.docker.io`, `docker.io`)
//!   are one registry. Every matching entry is a candidate ([`credential_candidates`]), most
//!   specific first (longest path, then exact host, then the order of the Secrets); callers
//!   try them in turn until one is accepted, as the kubelet does. No match means anonymous
//!   access.
//! - A malformed Secret is [`OciError::InvalidPullSecret`] naming the Secret, never quoting it.
//!   [`Credentials`] and [`PullSecret`] redact secret material in `Debug`; caches and clients
//!   are keyed by an HMAC of the credentials under a random per-process key, also redacted.
//! - Where credentials go: Basic credentials are sent to the registry host itself, and — when
//!   the registry answers with a `Bearer` challenge — to the token `realm` URL
//!   that the registry names, whatever host that is (Docker's and containerd's behaviour too).
//!   A registry is thus trusted with the choice of its token service; a pull secret should only
//!   hold credentials for the registry it is keyed by. Bearer tokens (`registrytoken`) are sent
//!   to the registry only.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::error::OciError;
use crate::reference::{DOCKER_HUB, ImageReference};

/// Secret type of `~/.docker/config.json`-style pull secrets.
pub const DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
/// Secret type of legacy `~/.dockercfg`-style pull secrets.
pub const DOCKER_CFG: &str = "kubernetes.io/dockercfg";

/// Credentials to present to a registry.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum Credentials {
    /// No credentials.
    #[default]
    Anonymous,
    /// HTTP basic credentials (also used for the registry's token exchange).
    Basic {
        /// User name.
        username: String,
        /// Password or access token.
        password: String,
    },
    /// A registry bearer token, sent as is.
    Bearer(String),
}

impl Credentials {
    /// An identity of these credentials, used to scope caches and clients so one caller never
    /// reuses what another caller's credentials fetched: an HMAC-SHA256 under a random key drawn
    /// once per process, so it cannot be matched against a guessed password offline (a plain
    /// hash of a short password could be brute-forced from a memory dump or a log line).
    pub(crate) fn fingerprint(&self) -> Fingerprint {
        let mut message = Vec::new();
        match self {
            Self::Anonymous => return Fingerprint::Anonymous,
            Self::Basic { username, password } => {
                message.extend_from_slice(b"basic\0");
                // Length-prefixed, so ("a:b", "c") and ("a", "b:c") differ.
                message.extend_from_slice(&(username.len() as u64).to_be_bytes());
                message.extend_from_slice(username.as_bytes());
                message.extend_from_slice(password.as_bytes());
            }
            Self::Bearer(token) => {
                message.extend_from_slice(b"bearer\0");
                message.extend_from_slice(token.as_bytes());
            }
        }
        Fingerprint::Keyed(hmac_sha256(process_key(), &message))
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anonymous => f.write_str("Anonymous"),
            Self::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Self::Bearer(_) => f.debug_tuple("Bearer").field(&"<redacted>").finish(),
        }
    }
}

/// What [`Credentials::fingerprint`] returns: comparable and hashable, never printed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum Fingerprint {
    Anonymous,
    Keyed([u8; 32]),
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Anonymous => f.write_str("Anonymous"),
            Self::Keyed(_) => f.write_str("Keyed(<redacted>)"),
        }
    }
}

/// The per-process HMAC key: 32 bytes from freshly seeded SipHash states (`RandomState` is
/// seeded from the operating system's randomness), drawn once.
fn process_key() -> &'static [u8; 32] {
    use std::hash::BuildHasher as _;
    static KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let mut key = [0u8; 32];
        for (i, chunk) in key.chunks_exact_mut(8).enumerate() {
            let word = std::collections::hash_map::RandomState::new().hash_one(i);
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        key
    })
}

/// HMAC-SHA256 (RFC 2104) of `message` under a 32-byte `key` (shorter than the block size, so
/// it is zero-padded, never hashed).
pub(crate) fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut inner_pad = [0x36u8; BLOCK];
    let mut outer_pad = [0x5cu8; BLOCK];
    for (i, k) in key.iter().enumerate() {
        inner_pad[i] ^= k;
        outer_pad[i] ^= k;
    }
    let inner = Sha256::new()
        .chain_update(inner_pad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// A Kubernetes Secret used as an image pull secret: name, `type` and decoded `data`.
#[derive(Clone, PartialEq, Eq)]
pub struct PullSecret {
    /// The Secret's name (for error messages).
    pub name: String,
    /// The Secret's `type`.
    pub secret_type: String,
    /// The Secret's `data`, base64-decoded.
    pub data: BTreeMap<String, Vec<u8>>,
}

impl PullSecret {
    /// A pull secret from its parts.
    pub fn new(
        name: impl Into<String>,
        secret_type: impl Into<String>,
        data: BTreeMap<String, Vec<u8>>,
    ) -> Self {
        Self {
            name: name.into(),
            secret_type: secret_type.into(),
            data,
        }
    }

    /// A `kubernetes.io/dockerconfigjson` Secret holding `config_json`.
    pub fn docker_config_json(name: impl Into<String>, config_json: impl Into<Vec<u8>>) -> Self {
        let data = BTreeMap::from([(".dockerconfigjson".to_owned(), config_json.into())]);
        Self::new(name, DOCKER_CONFIG_JSON, data)
    }
}

impl fmt::Debug for PullSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PullSecret")
            .field("name", &self.name)
            .field("secret_type", &self.secret_type)
            .field("data_keys", &self.data.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(Deserialize)]
struct DockerConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Deserialize, Default)]
struct AuthEntry {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

/// One credential entry of a secret, with its parsed key.
struct KeyedCredentials {
    host: String,
    path: String,
    credentials: Credentials,
}

/// The most specific credentials for `reference` in `secrets`; [`Credentials::Anonymous`] when
/// no entry matches. Prefer [`credential_candidates`] and try each in turn, like the kubelet.
pub fn credentials_for(
    reference: &ImageReference,
    secrets: &[PullSecret],
) -> Result<Credentials, OciError> {
    Ok(credential_candidates(reference, secrets)?
        .into_iter()
        .next()
        .unwrap_or_default())
}

/// Every credential in `secrets` that applies to `reference`, most specific first (longest
/// path, then exact host before glob, then the order of the Secrets and their entries),
/// duplicates removed. Empty when none applies (access is then anonymous). The kubelet tries
/// each in turn until one is accepted; [`crate::Inspector::inspect_with_secrets`] does too.
pub fn credential_candidates(
    reference: &ImageReference,
    secrets: &[PullSecret],
) -> Result<Vec<Credentials>, OciError> {
    let mut ranked: Vec<((usize, bool), Credentials)> = Vec::new();
    for secret in secrets {
        for entry in parse_secret(secret)? {
            if let Some(exact) = matches(&entry, reference) {
                ranked.push(((entry.path.len(), exact), entry.credentials));
            }
        }
    }
    // Stable: equal ranks keep the Secrets' order.
    ranked.sort_by(|(a, _), (b, _)| b.cmp(a));
    let mut out: Vec<Credentials> = Vec::with_capacity(ranked.len());
    for (_, credentials) in ranked {
        if !out.contains(&credentials) {
            out.push(credentials);
        }
    }
    if !out.is_empty() {
        tracing::debug!(
            registry = reference.registry(),
            candidates = out.len(),
            "pull secret credentials match"
        );
    }
    Ok(out)
}

fn parse_secret(secret: &PullSecret) -> Result<Vec<KeyedCredentials>, OciError> {
    let invalid = |reason: String| OciError::InvalidPullSecret {
        secret: secret.name.clone(),
        reason,
    };
    let (key, wrapped) = match secret.secret_type.as_str() {
        DOCKER_CONFIG_JSON => (".dockerconfigjson", true),
        DOCKER_CFG => (".dockercfg", false),
        other => {
            tracing::warn!(secret = %secret.name, secret_type = other, "ignoring pull secret of unsupported type");
            return Ok(Vec::new());
        }
    };
    let Some(bytes) = secret.data.get(key).filter(|b| !b.is_empty()) else {
        // The kubelet skips such Secrets instead of failing every pull that lists them.
        tracing::warn!(secret = %secret.name, key, "ignoring pull secret without data key");
        return Ok(Vec::new());
    };
    let auths = if wrapped {
        serde_json::from_slice::<DockerConfigJson>(bytes)
            .map_err(|e| {
                invalid(format!(
                    "{key} is not a docker config: {}",
                    json_error_position(&e)
                ))
            })?
            .auths
    } else {
        serde_json::from_slice::<BTreeMap<String, AuthEntry>>(bytes).map_err(|e| {
            invalid(format!(
                "{key} is not a dockercfg: {}",
                json_error_position(&e)
            ))
        })?
    };
    let mut out = Vec::new();
    for (registry_key, entry) in auths {
        let Some(credentials) = entry_credentials(&entry)
            .map_err(|reason| invalid(format!("entry {registry_key:?}: {reason}")))?
        else {
            tracing::warn!(secret = %secret.name, registry = %registry_key, "pull secret entry has no usable credentials");
            continue;
        };
        let (host, path) = normalise_key(&registry_key);
        out.push(KeyedCredentials {
            host,
            path,
            credentials,
        });
    }
    Ok(out)
}

/// Only the position: serde's messages may quote the offending (secret) input.
fn json_error_position(e: &serde_json::Error) -> String {
    format!("invalid JSON at line {} column {}", e.line(), e.column())
}

/// The kubelet's `DockerConfigEntry.UnmarshalJSON`: a non-empty `auth` wins over
/// `username`/`password` (and a malformed one is an error); `registrytoken` comes last.
fn entry_credentials(entry: &AuthEntry) -> Result<Option<Credentials>, String> {
    let non_empty = |s: &Option<String>| s.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
    if let Some(auth) = non_empty(&entry.auth) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| "field auth is not valid base64".to_owned())?;
        let decoded =
            String::from_utf8(decoded).map_err(|_| "field auth is not UTF-8".to_owned())?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| "field auth is not \"user:password\"".to_owned())?;
        return Ok(Some(Credentials::Basic {
            username: username.to_owned(),
            password: password.to_owned(),
        }));
    }
    if let (Some(username), Some(password)) =
        (non_empty(&entry.username), non_empty(&entry.password))
    {
        return Ok(Some(Credentials::Basic { username, password }));
    }
    Ok(non_empty(&entry.registrytoken).map(Credentials::Bearer))
}

/// `https://index.docker.io/v1/` → (`docker.io`, ``); `reg.io:5000/team` → (`reg.io:5000`, `team`).
fn normalise_key(key: &str) -> (String, String) {
    let key = key.trim();
    let without_scheme = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let (host, path) = without_scheme
        .split_once('/')
        .unwrap_or((without_scheme, ""));
    let path = path
        .strip_prefix("v1/")
        .or_else(|| path.strip_prefix("v2/"))
        .unwrap_or(if path == "v1" || path == "v2" {
            ""
        } else {
            path
        });
    let host = host.to_ascii_lowercase();
    let host = match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            DOCKER_HUB.to_owned()
        }
        _ => host,
    };
    (host, path.trim_matches('/').to_owned())
}

/// `Some(exact_host)` when the entry applies to the reference.
fn matches(entry: &KeyedCredentials, reference: &ImageReference) -> Option<bool> {
    let target = reference.registry().to_ascii_lowercase();
    let (key_host, key_port) = split_port(&entry.host);
    let (target_host, target_port) = split_port(&target);
    if key_port != target_port {
        return None;
    }
    let key_labels: Vec<&str> = key_host.split('.').collect();
    let target_labels: Vec<&str> = target_host.split('.').collect();
    if key_labels.len() != target_labels.len()
        || !key_labels
            .iter()
            .zip(&target_labels)
            .all(|(k, t)| glob_match(k, t))
    {
        return None;
    }
    if !entry.path.is_empty() {
        let repo = reference.repository();
        let prefix_ok = repo == entry.path
            || repo
                .strip_prefix(entry.path.as_str())
                .is_some_and(|rest| rest.starts_with('/'));
        if !prefix_ok {
            return None;
        }
    }
    Some(!key_host.contains('*'))
}

fn split_port(host: &str) -> (&str, Option<&str>) {
    if host.starts_with('[') {
        return match host.rsplit_once("]:") {
            Some((h, p)) => (h, Some(p)),
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (host, None),
    }
}

/// One host label against one glob label, like Go's `filepath.Match` as the kubelet uses it:
/// `*` matches any run of characters, `?` exactly one. Character classes are not supported
/// (`[` is literal).
///
/// Iterative, O(pattern · text): on a mismatch only the most recent `*` is extended, so a
/// pattern with many stars (from a tenant's pull secret) cannot blow up.
fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // (pattern index after the last `*`, text index it is currently matched up to)
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p + 1, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((after_star, matched_to)) => {
                    star = Some((after_star, matched_to + 1));
                    p = after_star;
                    t = matched_to + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
#[path = "unit_tests/auth.rs"]
mod tests;
