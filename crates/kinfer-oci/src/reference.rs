//! Image references: `[registry/]repository[:tag][@digest]`.
//!
//! Contract (the grammar of `github.com/distribution/reference`, normalised like Docker):
//! - The first path component is a registry when it contains `.` or `:`, is `localhost`, or has
//!   an upper-case letter; otherwise the registry is `docker.io`. The registry is lower-cased
//!   (`LOCALHOST:5000` is `localhost:5000`).
//! - Leading or trailing whitespace is rejected, not trimmed, as Kubernetes image validation
//!   does.
//! - On `docker.io` (also spelt `index.docker.io`) a single-segment repository gets `library/`.
//!   The API host of `docker.io` is `registry-1.docker.io` ([`ImageReference::api_host`]).
//! - Repository components are lower-case `[a-z0-9]+` joined by `.`, `_`, `__` or `-+`; the full
//!   name is at most 255 characters. Tags match `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`. Digests are
//!   `sha256:<64 hex>` or `sha512:<128 hex>` only: the algorithms the registry client verifies.
//! - Registry hosts are DNS labels of at most 63 characters (or an IPv6 literal); the port is
//!   a `u16`.
//! - With neither tag nor digest the tag is `latest`. With both, the digest identifies the image
//!   and the tag is kept for display only.
//! - Every rejection is a typed [`ReferenceError`].

use std::fmt;
use std::str::FromStr;

use crate::error::OciError;

/// The canonical name of Docker Hub.
pub const DOCKER_HUB: &str = "docker.io";
/// The host that serves Docker Hub's registry API.
pub const DOCKER_HUB_API_HOST: &str = "registry-1.docker.io";
const DOCKER_HUB_LEGACY: &str = "index.docker.io";
const MAX_NAME_LEN: usize = 255;
const MAX_TAG_LEN: usize = 128;
/// RFC 1035: a DNS label is at most 63 octets.
const MAX_HOST_LABEL_LEN: usize = 63;

/// Why an image reference was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReferenceError {
    /// Nothing to parse.
    #[error("reference is empty")]
    Empty,
    /// Leading or trailing whitespace (Kubernetes rejects it in image names).
    #[error("reference has leading or trailing whitespace")]
    SurroundingWhitespace,
    /// The registry host or port is malformed.
    #[error("invalid registry {0:?}")]
    InvalidRegistry(String),
    /// A repository path component is malformed.
    #[error("invalid repository component {0:?}")]
    InvalidRepository(String),
    /// Repository names must be lower case.
    #[error("repository name {0:?} must be lower case")]
    UppercaseRepository(String),
    /// The full name is longer than 255 characters.
    #[error("repository name is {0} characters long (the limit is 255)")]
    NameTooLong(usize),
    /// The tag is malformed.
    #[error("invalid tag {0:?}")]
    InvalidTag(String),
    /// The digest is malformed.
    #[error("invalid digest {0:?}")]
    InvalidDigest(String),
}

/// A parsed, normalised image reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageReference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl ImageReference {
    /// Parses and normalises a reference such as `nginx`, `ghcr.io/org/app:1.0` or
    /// `localhost:5000/app@sha256:…`.
    pub fn parse(input: &str) -> Result<Self, ReferenceError> {
        if input.is_empty() {
            return Err(ReferenceError::Empty);
        }
        if input.trim() != input {
            // Kubernetes rejects such image names too; trimming would inspect another string
            // than the kubelet pulls.
            return Err(ReferenceError::SurroundingWhitespace);
        }
        let (name_and_tag, digest) = match input.split_once('@') {
            Some((rest, digest)) => {
                validate_digest(digest)?;
                (rest, Some(digest))
            }
            None => (input, None),
        };
        // A ':' after the last '/' separates the tag; a ':' before it is a registry port.
        let last_slash = name_and_tag.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name_and_tag[last_slash..].rfind(':') {
            Some(i) => {
                let at = last_slash + i;
                let tag = &name_and_tag[at + 1..];
                validate_tag(tag)?;
                (&name_and_tag[..at], Some(tag))
            }
            None => (name_and_tag, None),
        };
        let (registry, repository) = split_registry(name)?;
        Self::assemble(
            registry,
            repository,
            tag.map(str::to_owned),
            digest.map(str::to_owned),
        )
    }

    /// Parses `input`, reporting failure as [`OciError::InvalidReference`] (InvalidSpec).
    pub fn parse_spec(input: &str) -> Result<Self, OciError> {
        Self::parse(input).map_err(|source| OciError::InvalidReference {
            reference: input.to_owned(),
            source,
        })
    }

    /// Builds a reference from separately validated parts, normalised like [`Self::parse`]
    /// (the registry's case, `index.docker.io`, `library/` on Docker Hub; the tag defaults to
    /// `latest` without a digest). The registry must be recognisable as one in the reference's
    /// text (contain `.` or `:`, or be `localhost`), so that `parse(r.to_string()) == r`: a bare
    /// `registry` would be read as a Docker Hub namespace by every other tool.
    pub fn from_parts(
        registry: &str,
        repository: &str,
        tag: Option<&str>,
        digest: Option<&str>,
    ) -> Result<Self, ReferenceError> {
        if !looks_like_registry(registry) {
            return Err(ReferenceError::InvalidRegistry(registry.to_owned()));
        }
        let registry = normalise_registry(registry)?;
        let repository = normalise_repository(&registry, repository)?;
        if let Some(tag) = tag {
            validate_tag(tag)?;
        }
        if let Some(digest) = digest {
            validate_digest(digest)?;
        }
        Self::assemble(
            registry,
            repository,
            tag.map(str::to_owned),
            digest.map(str::to_owned),
        )
    }

    fn assemble(
        registry: String,
        repository: String,
        tag: Option<String>,
        digest: Option<String>,
    ) -> Result<Self, ReferenceError> {
        let name_len = registry.len() + 1 + repository.len();
        if name_len > MAX_NAME_LEN {
            return Err(ReferenceError::NameTooLong(name_len));
        }
        let tag = if tag.is_none() && digest.is_none() {
            Some("latest".to_owned())
        } else {
            tag
        };
        Ok(Self {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// The canonical registry, e.g. `docker.io`, `ghcr.io`, `localhost:5000`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The host (and port) that serves the registry API: `registry-1.docker.io` for Docker
    /// Hub, the registry itself otherwise.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API_HOST
        } else {
            &self.registry
        }
    }

    /// The repository path, e.g. `library/nginx`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, if any (`latest` when the input had neither tag nor digest).
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest, if the reference is pinned.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// `true` for Docker Hub references.
    pub fn is_docker_hub(&self) -> bool {
        self.registry == DOCKER_HUB
    }

    /// `registry/repository`, without tag or digest.
    pub fn name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The same image pinned to `digest` (the tag is kept for display).
    pub fn with_digest(&self, digest: &str) -> Result<Self, ReferenceError> {
        validate_digest(digest)?;
        Ok(Self {
            digest: Some(digest.to_owned()),
            ..self.clone()
        })
    }

    /// The same repository with another tag and no digest.
    pub fn with_tag(&self, tag: &str) -> Result<Self, ReferenceError> {
        validate_tag(tag)?;
        Ok(Self {
            tag: Some(tag.to_owned()),
            digest: None,
            ..self.clone()
        })
    }
}

impl fmt::Display for ImageReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl FromStr for ImageReference {
    type Err = ReferenceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Docker's rule: the first component names a registry when it has a `.` or `:`, is
/// `localhost`, or has an upper-case letter.
fn looks_like_registry(first: &str) -> bool {
    first.contains(['.', ':'])
        || first == "localhost"
        || first.chars().any(|c| c.is_ascii_uppercase())
}

fn split_registry(name: &str) -> Result<(String, String), ReferenceError> {
    let (registry, path) = match name.split_once('/') {
        Some((first, rest)) if looks_like_registry(first) => (normalise_registry(first)?, rest),
        _ => (DOCKER_HUB.to_owned(), name),
    };
    let repository = normalise_repository(&registry, path)?;
    Ok((registry, repository))
}

/// Validated and lower-cased (host names are case-insensitive, and insecure-registry and
/// pull-secret matching compare them exactly); `index.docker.io` is `docker.io`.
fn normalise_registry(registry: &str) -> Result<String, ReferenceError> {
    validate_registry(registry)?;
    let registry = registry.to_ascii_lowercase();
    Ok(if registry == DOCKER_HUB_LEGACY {
        DOCKER_HUB.to_owned()
    } else {
        registry
    })
}

/// Validated path components; `library/` prepended to a single component on Docker Hub.
fn normalise_repository(registry: &str, path: &str) -> Result<String, ReferenceError> {
    if path.is_empty() {
        return Err(ReferenceError::InvalidRepository(String::new()));
    }
    for component in path.split('/') {
        validate_component(component, path)?;
    }
    Ok(if registry == DOCKER_HUB && !path.contains('/') {
        format!("library/{path}")
    } else {
        path.to_owned()
    })
}

fn validate_registry(registry: &str) -> Result<(), ReferenceError> {
    let bad = || ReferenceError::InvalidRegistry(registry.to_owned());
    let (host, port) = if let Some(rest) = registry.strip_prefix('[') {
        // IPv6 literal: [::1]:5000
        let (addr, after) = rest.split_once(']').ok_or_else(bad)?;
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err(bad());
        }
        match after {
            "" => return Ok(()),
            p => (None, Some(p.strip_prefix(':').ok_or_else(bad)?)),
        }
    } else {
        match registry.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(registry), None),
        }
    };
    if let Some(host) = host {
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= MAX_HOST_LABEL_LEN
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if !host.split('.').all(label_ok) {
            return Err(bad());
        }
    }
    if let Some(port) = port
        && (!port.bytes().all(|b| b.is_ascii_digit()) || port.parse::<u16>().is_err())
    {
        return Err(bad());
    }
    Ok(())
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
fn validate_component(component: &str, path: &str) -> Result<(), ReferenceError> {
    if component.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(ReferenceError::UppercaseRepository(path.to_owned()));
    }
    let bad = || ReferenceError::InvalidRepository(component.to_owned());
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return Err(bad());
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        // A separator run: ".", "_", "__" or one or more "-".
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let sep = &component[start..i];
        let ok = matches!(sep, "." | "_" | "__") || sep.bytes().all(|b| b == b'-');
        if !ok {
            return Err(bad());
        }
    }
    Ok(())
}

fn validate_tag(tag: &str) -> Result<(), ReferenceError> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut chars = tag.chars();
    let ok = tag.len() <= MAX_TAG_LEN
        && chars.next().is_some_and(word)
        && chars.all(|c| word(c) || c == '.' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ReferenceError::InvalidTag(tag.to_owned()))
    }
}

/// `sha256:<64 hex>` or `sha512:<128 hex>`: the algorithms the registry client verifies. Other
/// algorithms are valid in the distribution grammar but could only fail later, at the
/// registry, as a transient-looking error.
fn validate_digest(digest: &str) -> Result<(), ReferenceError> {
    let bad = || ReferenceError::InvalidDigest(digest.to_owned());
    let (algorithm, encoded) = digest.split_once(':').ok_or_else(bad)?;
    let hex_len = match algorithm {
        "sha256" => 64,
        "sha512" => 128,
        _ => return Err(bad()),
    };
    let encoded_ok = encoded.len() == hex_len
        && encoded
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if encoded_ok { Ok(()) } else { Err(bad()) }
}

#[cfg(test)]
#[path = "unit_tests/reference.rs"]
mod tests;
