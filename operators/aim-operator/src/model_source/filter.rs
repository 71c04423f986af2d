//! Model source filters (NOTES row 24). Pure.
//!
//! Contract: a filter image is `[registry/]repository[:tag]`; the first segment is a registry
//! when it contains `.` or `:` or is `localhost`. `*` matches any run of characters (also
//! `/`). Excludes are repository patterns. A filter's tag wins over version constraints; the
//! filter's `versions` replace the source's; with constraints, tags that are not semantic
//! versions (a leading `v` is allowed) are skipped; without, every tag is taken.
//!
//! Version constraints use the syntax of upstream's Go library (Masterminds/semver), which the
//! `semver` crate only partly shares, so [`constraint`] translates: `||` alternatives,
//! comparators separated by commas or spaces (`>=1.0, <2.0`, `>= 1.0 < 2.0`), hyphen ranges
//! (`1.2 - 1.4` → `>=1.2, <=1.4`; a partial bound covers its patch releases), a `v` before the
//! version, and a bare version meaning `=`
//! (`1.2` matches 1.2.x); `~`, `^`, `x`/`*` wildcards and the comparison operators are the
//! crate's, with the same meaning. `!=` and `~>` are not supported (an invalid constraint).

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

/// One constraint: it holds when any alternative (`||`) holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint(Vec<VersionReq>);

impl Constraint {
    /// Whether `v` satisfies it.
    pub fn matches(&self, v: &Version) -> bool {
        self.0.iter().any(|r| r.matches(v))
    }
}

const OPERATORS: [&str; 7] = [">=", "<=", ">", "<", "=", "~", "^"];

/// One comparator token in the `semver` crate's syntax: `v` dropped after the operator, a bare
/// version made exact (`=`), wildcards left alone.
fn comparator(token: &str) -> String {
    let op = OPERATORS
        .iter()
        .find(|op| token.starts_with(*op))
        .copied()
        .unwrap_or("");
    let version = token[op.len()..].trim();
    let version = version
        .strip_prefix(['v', 'V'])
        .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or(version);
    let wildcard = version == "*" || version.split('.').any(|p| matches!(p, "x" | "X" | "*"));
    let op = if op.is_empty() && !wildcard { "=" } else { op };
    format!("{op}{version}")
}

/// One `||` alternative: hyphen range or comparators separated by commas and/or spaces.
fn alternative(raw: &str) -> String {
    let raw = raw.trim();
    if let Some((low, high)) = raw.split_once(" - ") {
        let bound = |v: &str| comparator(v.trim()).trim_start_matches('=').to_owned();
        return format!(">={}, <={}", bound(low), bound(high));
    }
    let mut tokens: Vec<String> = Vec::new();
    let mut pending_op = String::new();
    for part in raw
        .split([',', ' '])
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        if OPERATORS.contains(&part) {
            pending_op.push_str(part);
            continue;
        }
        tokens.push(comparator(&format!("{pending_op}{part}")));
        pending_op.clear();
    }
    if !pending_op.is_empty() {
        tokens.push(pending_op);
    }
    tokens.join(", ")
}

/// Parses one constraint (see the module contract).
pub fn constraint(raw: &str) -> Result<Constraint, ConstraintError> {
    let error = |reason: String| ConstraintError {
        constraint: raw.to_owned(),
        reason,
    };
    if raw.trim().is_empty() {
        return Err(error("empty constraint".to_owned()));
    }
    raw.split("||")
        .map(|alt| {
            let translated = alternative(alt);
            VersionReq::parse(&translated).map_err(|e| error(format!("{translated:?}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Constraint)
}

/// Parses constraints.
pub fn constraints(raw: &[String]) -> Result<Vec<Constraint>, ConstraintError> {
    raw.iter().map(|c| constraint(c)).collect()
}

/// A tag as a semantic version (a leading `v` allowed).
pub fn version_of(tag: &str) -> Option<Version> {
    Version::parse(tag.strip_prefix('v').unwrap_or(tag)).ok()
}

/// The tags to take.
pub fn select_tags(tags: &[String], explicit: Option<&str>, reqs: &[Constraint]) -> Vec<String> {
    if let Some(t) = explicit {
        return tags.iter().filter(|x| wildcard(t, x)).cloned().collect();
    }
    if reqs.is_empty() {
        return tags.to_vec();
    }
    tags.iter()
        .filter(|t| version_of(t).is_some_and(|v| reqs.iter().all(|r| r.matches(&v))))
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

    fn matching(c: &str) -> Vec<&'static str> {
        let c = constraint(c).unwrap();
        [
            "0.9.0", "1.0.0", "1.1.5", "1.2.0", "1.2.9", "1.3.0", "1.4.0", "1.4.1", "2.0.0",
        ]
        .into_iter()
        .filter(|v| c.matches(&Version::parse(v).unwrap()))
        .collect()
    }

    #[test]
    fn masterminds_constraint_syntax() {
        assert_eq!(
            matching(">=1.0, <2.0"),
            [
                "1.0.0", "1.1.5", "1.2.0", "1.2.9", "1.3.0", "1.4.0", "1.4.1"
            ]
        );
        assert_eq!(
            matching(">= 1.0 < 1.2"),
            ["1.0.0", "1.1.5"],
            "space separated"
        );
        assert_eq!(matching("~1.2"), ["1.2.0", "1.2.9"]);
        assert_eq!(
            matching("^1.2"),
            ["1.2.0", "1.2.9", "1.3.0", "1.4.0", "1.4.1"]
        );
        assert_eq!(
            matching("1.2 - 1.4"),
            ["1.2.0", "1.2.9", "1.3.0", "1.4.0", "1.4.1"],
            "a partial upper bound takes its patch releases"
        );
        assert_eq!(
            matching("1.2 - 1.4.0"),
            ["1.2.0", "1.2.9", "1.3.0", "1.4.0"]
        );
        assert_eq!(matching("<1.0 || >=2.0"), ["0.9.0", "2.0.0"]);
        assert_eq!(
            matching("1.2"),
            ["1.2.0", "1.2.9"],
            "bare: exact, wildcard patch"
        );
        assert_eq!(matching("1.4.x"), ["1.4.0", "1.4.1"]);
        assert_eq!(matching(">=v1.4.1"), ["1.4.1", "2.0.0"]);
        for bad in ["", "!=1.0", ">=one", "~>1.2"] {
            assert!(constraint(bad).is_err(), "{bad:?}");
        }
    }
}
