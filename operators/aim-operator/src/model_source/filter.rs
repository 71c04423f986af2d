//! Model source filters (NOTES row 24). Pure.
//!
//! Contract: a filter image is `[registry/]repository[:tag]`; the first segment is a registry
//! when it contains `.` or `:` or is `localhost`. `*` matches any run of characters (also
//! `/`). Excludes are repository patterns. A filter's tag wins over version constraints; the
//! filter's `versions` replace the source's; with constraints, tags that are not semantic
//! versions (a leading `v` is allowed) are skipped; without, every tag is taken.

use semver::{Version, VersionReq};

/// A parsed filter image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePattern {
    /// Registry host.
    pub registry: String,
    /// Repository pattern.
    pub repository: String,
    /// Explicit tag.
    pub tag: Option<String>,
}

/// Parses a filter image against the source's default registry.
pub fn parse_pattern(image: &str, default_registry: &str) -> ImagePattern {
    let image = image.trim();
    let (registry, rest) = match image.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (first.to_owned(), rest)
        }
        _ => (default_registry.to_owned(), image),
    };
    let (repository, tag) = match rest.rsplit_once(':') {
        Some((r, t)) if !t.contains('/') => (r.to_owned(), Some(t.to_owned())),
        _ => (rest.to_owned(), None),
    };
    ImagePattern {
        registry,
        repository,
        tag,
    }
}

/// `*` wildcard match.
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else if let Some(pos) = rest.find(part) {
            rest = &rest[pos + part.len()..];
        } else {
            return false;
        }
    }
    true
}

/// Errors of a version constraint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid version constraint {constraint:?}: {reason}")]
pub struct ConstraintError {
    /// The constraint.
    pub constraint: String,
    /// Why.
    pub reason: String,
}

/// Parses constraints.
pub fn constraints(raw: &[String]) -> Result<Vec<VersionReq>, ConstraintError> {
    raw.iter()
        .map(|c| {
            VersionReq::parse(c.trim()).map_err(|e| ConstraintError {
                constraint: c.clone(),
                reason: e.to_string(),
            })
        })
        .collect()
}

/// The tags to take.
pub fn select_tags(tags: &[String], explicit: Option<&str>, reqs: &[VersionReq]) -> Vec<String> {
    if let Some(t) = explicit {
        return tags.iter().filter(|x| wildcard(t, x)).cloned().collect();
    }
    if reqs.is_empty() {
        return tags.to_vec();
    }
    tags.iter()
        .filter(|t| {
            Version::parse(t.strip_prefix('v').unwrap_or(t))
                .is_ok_and(|v| reqs.iter().all(|r| r.matches(&v)))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_and_tags() {
        let p = parse_pattern("ghcr.io/org/aim-*", "docker.io");
        assert_eq!(
            (p.registry.as_str(), p.repository.as_str(), p.tag),
            ("ghcr.io", "org/aim-*", None)
        );
        let p = parse_pattern("org/repo:1.0.0", "docker.io");
        assert_eq!(
            (p.registry.as_str(), p.tag.as_deref()),
            ("docker.io", Some("1.0.0"))
        );
        let p = parse_pattern("127.0.0.1:5000/org/repo", "docker.io");
        assert_eq!(p.registry, "127.0.0.1:5000");
        assert!(wildcard("org/aim-*", "org/aim-llama/x"));
        assert!(!wildcard("org/aim-*", "org/base"));
        let tags: Vec<String> = ["0.8.4", "0.8.5", "v0.9.0", "latest"]
            .map(Into::into)
            .to_vec();
        let reqs = constraints(&[">=0.8.5".into()]).unwrap();
        assert_eq!(select_tags(&tags, None, &reqs), ["0.8.5", "v0.9.0"]);
        assert_eq!(select_tags(&tags, None, &[]).len(), 4);
    }
}
