//! Label and field selectors as they appear in `labelSelector=` and `fieldSelector=` query
//! parameters.
//!
//! Labels: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, comma-separated (AND).
//! Fields: `path=v`, `path==v`, `path!=v` where path is any dotted JSON path (`metadata.name`,
//! `metadata.namespace`, `status.phase`, ...); the real server accepts only a per-kind list.

use serde_json::Value;

use crate::error::ApiError;

#[derive(Debug, Clone)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector.
#[derive(Debug, Clone, Default)]
pub struct LabelSelector(Vec<Req>);

/// A parsed field selector.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector(Vec<(String, bool, String)>);

fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn set_values(s: &str) -> Result<Vec<String>, ApiError> {
    let s = s.trim();
    let inner = s
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| ApiError::bad_request(format!("unable to parse requirement: {s}")))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect())
}

impl LabelSelector {
    /// Parse a `labelSelector` query value.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            if let Some((k, v)) = part.split_once("!=") {
                reqs.push(Req::Ne(k.trim().to_owned(), v.trim().to_owned()));
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                reqs.push(Req::Eq(k.trim().to_owned(), v.trim().to_owned()));
            } else if let Some((k, v)) = part.split_once(" notin ") {
                reqs.push(Req::NotIn(k.trim().to_owned(), set_values(v)?));
            } else if let Some((k, v)) = part.split_once(" in ") {
                reqs.push(Req::In(k.trim().to_owned(), set_values(v)?));
            } else if let Some(k) = part.strip_prefix('!') {
                reqs.push(Req::NotExists(k.trim().to_owned()));
            } else {
                reqs.push(Req::Exists(part));
            }
        }
        Ok(Self(reqs))
    }

    /// Whether an object's labels match.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v.as_str()),
            Req::Ne(k, v) => get(k) != Some(v.as_str()),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Req::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }
}

impl FieldSelector {
    /// Parse a `fieldSelector` query value.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in split_top(s) {
            let (k, eq, v) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (k, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: {part}"
                )));
            };
            reqs.push((k.trim().to_owned(), eq, v.trim().to_owned()));
        }
        Ok(Self(reqs))
    }

    /// Whether an object's fields match.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, eq, want)| {
            let mut cur = object;
            for seg in path.split('.') {
                cur = &cur[seg];
            }
            let have = match cur {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (have == *want) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let o = json!({"metadata": {"labels": {"app": "a", "tier": "web"}}});
        let m = |s: &str| LabelSelector::parse(s).is_ok_and(|l| l.matches(&o));
        assert!(m("app=a"));
        assert!(m("app==a,tier"));
        assert!(!m("app!=a"));
        assert!(m("tier in (web, db)"));
        assert!(!m("tier notin (web)"));
        assert!(m("!missing"));
        assert!(!m("missing"));
    }

    #[test]
    fn field_selectors() {
        let o = json!({"metadata": {"name": "x", "namespace": "ns"}});
        let f = FieldSelector::parse("metadata.name=x,metadata.namespace!=other")
            .map(|f| f.matches(&o));
        assert_eq!(f.ok(), Some(true));
    }
}
