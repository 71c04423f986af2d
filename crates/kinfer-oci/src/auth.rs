//! Registry credentials from Kubernetes image pull secrets.
//!
//! Contract:
//! - Input: the Secrets' `type` and decoded `data` bytes ([`PullSecret`]). Types
//!   `kubernetes.io/dockerconfigjson` (key `.dockerconfigjson`, `{"auths": {...}}`) and legacy
//!   `kubernetes.io/dockercfg` (key `.dockercfg`, the `auths` map itself) are read; Secrets of
//!   other types are skipped with a warning, like the kubelet does.
//! - An entry's credentials are `username`/`password`, else the base64 `auth` (`user:pass`),
//!   else `registrytoken` (a bearer token). Entries with none of them are ignored.
//! - Matching follows the kubelet's keyring: the key may carry a scheme (ignored), a port (must
//!   match) and a path (a repository prefix, matched on whole components; `/v1/` and `/v2/`
//!   mean "the whole host"); host labels may use `*` globs. Docker Hub's spellings
//!   (`https://index.docker.io/v1/`, `index.docker.io`, `registry-1.docker.io`, `docker.io`)
//!   are one registry. The most specific key wins (longest path, then exact host, then the
//!   order of the Secrets); no match means anonymous access.
//! - A malformed Secret is [`OciError::InvalidPullSecret`] naming the Secret, never quoting it.
//!   [`Credentials`] and [`PullSecret`] redact secret material in `Debug`.

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
    /// A stable, non-reversible identity of these credentials, used to scope caches and
    /// clients so one caller never reuses what another caller's credentials fetched.
    pub(crate) fn fingerprint(&self) -> String {
        let mut hasher = Sha256::new();
        match self {
            Self::Anonymous => return "anonymous".to_owned(),
            Self::Basic { username, password } => {
                hasher.update(b"basic\0");
                hasher.update(username.as_bytes());
                hasher.update(b"\0");
                hasher.update(password.as_bytes());
            }
            Self::Bearer(token) => {
                hasher.update(b"bearer\0");
                hasher.update(token.as_bytes());
            }
        }
        hex::encode(&hasher.finalize()[..16])
    }

    pub(crate) fn to_oci(&self) -> oci_client::secrets::RegistryAuth {
        use oci_client::secrets::RegistryAuth;
        match self {
            Self::Anonymous => RegistryAuth::Anonymous,
            Self::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
            Self::Bearer(token) => RegistryAuth::Bearer(token.clone()),
        }
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

/// Picks the credentials for `reference` from `secrets`; [`Credentials::Anonymous`] when no
/// entry matches.
pub fn credentials_for(
    reference: &ImageReference,
    secrets: &[PullSecret],
) -> Result<Credentials, OciError> {
    // (path length, exact host, secret order) → most specific first.
    let mut best: Option<((usize, bool), Credentials)> = None;
    for secret in secrets {
        for entry in parse_secret(secret)? {
            let Some(exact) = matches(&entry, reference) else {
                continue;
            };
            let rank = (entry.path.len(), exact);
            if best.as_ref().is_none_or(|(r, _)| rank > *r) {
                best = Some((rank, entry.credentials));
            }
        }
    }
    Ok(match best {
        Some((_, creds)) => {
            tracing::debug!(
                registry = reference.registry(),
                "using pull secret credentials"
            );
            creds
        }
        None => Credentials::Anonymous,
    })
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
    let bytes = secret
        .data
        .get(key)
        .ok_or_else(|| invalid(format!("missing data key {key}")))?;
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

fn entry_credentials(entry: &AuthEntry) -> Result<Option<Credentials>, String> {
    let non_empty = |s: &Option<String>| s.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
    if let (Some(username), Some(password)) =
        (non_empty(&entry.username), non_empty(&entry.password))
    {
        return Ok(Some(Credentials::Basic { username, password }));
    }
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

/// `*` matches any run of characters within one host label.
fn glob_match(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((prefix, rest)) => {
            let Some(tail) = text.strip_prefix(prefix) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| glob_match(rest, &tail[i..]))
        }
    }
}

#[cfg(test)]
#[path = "unit_tests/auth.rs"]
mod tests;
