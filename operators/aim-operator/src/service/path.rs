//! Route paths: rendering a `pathTemplate` against the AIMService (NOTES row 18). Pure.
//!
//! Contract: `{expr}` placeholders are JSONPath expressions over the service's JSON
//! (`.metadata.name`, `.metadata.labels['team']`, `.metadata.annotations['x/y']`,
//! `.spec.model.name`, ...); a missing key, an unclosed brace or an unsupported expression is
//! an error. Rendered values are RFC 1123-sanitised (lower case, `[^a-z0-9-]` to `-`, trimmed)
//! except annotation values. The path is then normalised: one leading `/`, no trailing `/`,
//! no empty segments, characters outside `[A-Za-z0-9._~-]` in a segment replaced by `-`; at
//! most [`MAX_PATH`] characters. Without a template the path is `/<namespace>/<uid>`. An
//! error surfaces as `PathTemplateInvalid` (upstream silently falls back to the default).

use serde_json::Value;

/// The longest rendered path.
pub const MAX_PATH: usize = 200;

/// Why a path template cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// A `{` without its `}`.
    #[error("unclosed placeholder in {0:?}")]
    Unclosed(String),
    /// An expression that is not a supported JSONPath.
    #[error("unsupported expression {0:?} (use .field.sub, .metadata.labels['key'])")]
    Unsupported(String),
    /// The expression selects nothing.
    #[error("{0:?} selects nothing on the AIMService")]
    Missing(String),
    /// The expression selects an object or list.
    #[error("{0:?} is not a scalar")]
    NotScalar(String),
    /// Nothing is left after normalisation.
    #[error("the rendered path is empty")]
    Empty,
    /// Longer than [`MAX_PATH`].
    #[error("the rendered path has {0} characters, more than {MAX_PATH}")]
    TooLong(usize),
}

/// The default path: `/<namespace>/<uid>`.
pub fn default_path(namespace: &str, uid: &str) -> String {
    normalize(&format!("/{namespace}/{uid}")).unwrap_or_else(|_| "/".into())
}

/// Renders `template` against `service` (the AIMService as JSON); see the module contract.
pub fn render(template: &str, service: &Value) -> Result<String, PathError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let end = after
            .find('}')
            .ok_or_else(|| PathError::Unclosed(template.to_owned()))?;
        let expr = after[..end].trim();
        let (value, raw) = evaluate(expr, service)?;
        out.push_str(&if raw { value } else { sanitize(&value) });
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    normalize(&out)
}

/// RFC 1123 sanitising of one rendered value.
fn sanitize(value: &str) -> String {
    let s: String = value
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.trim_matches('-').to_owned()
}

fn normalize(path: &str) -> Result<String, PathError> {
    let segments: Vec<String> = path
        .split('/')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '-') {
                        c
                    } else {
                        '-'
                    }
                })
                .collect()
        })
        .collect();
    if segments.is_empty() {
        return Err(PathError::Empty);
    }
    let p = format!("/{}", segments.join("/"));
    if p.len() > MAX_PATH {
        return Err(PathError::TooLong(p.len()));
    }
    Ok(p)
}

/// Evaluates one expression; the bool says whether the value is kept raw (annotations).
fn evaluate(expr: &str, service: &Value) -> Result<(String, bool), PathError> {
    let unsupported = || PathError::Unsupported(expr.to_owned());
    let body = expr.strip_prefix('$').unwrap_or(expr);
    let body = body.strip_prefix('.').ok_or_else(unsupported)?;
    let mut keys: Vec<String> = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('[') {
            let quote = r.chars().next().filter(|c| *c == '\'' || *c == '"');
            let q = quote.ok_or_else(unsupported)?;
            let inner = &r[1..];
            let close = inner.find(q).ok_or_else(unsupported)?;
            keys.push(inner[..close].to_owned());
            rest = inner[close + 1..]
                .strip_prefix(']')
                .ok_or_else(unsupported)?;
            rest = rest.strip_prefix('.').unwrap_or(rest);
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let key = &rest[..end];
            if key.is_empty() {
                return Err(unsupported());
            }
            keys.push(key.to_owned());
            rest = &rest[end..];
            rest = rest.strip_prefix('.').unwrap_or(rest);
        }
    }
    if keys.is_empty() {
        return Err(unsupported());
    }
    let raw = keys.len() == 3 && keys[0] == "metadata" && keys[1] == "annotations";
    let mut v = service;
    for k in &keys {
        v = v
            .get(k.as_str())
            .ok_or_else(|| PathError::Missing(expr.to_owned()))?;
    }
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => return Err(PathError::Missing(expr.to_owned())),
        _ => return Err(PathError::NotScalar(expr.to_owned())),
    };
    Ok((s, raw))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn svc() -> Value {
        json!({"metadata": {"name": "Chat_Bot", "namespace": "team-a", "uid": "u-1",
                "labels": {"team": "ML Ops"}, "annotations": {"route.x/y": "Keep.Me"}},
               "spec": {"model": {"name": "qwen"}}})
    }

    #[test]
    fn renders_placeholders() {
        assert_eq!(
            render("/{.metadata.namespace}/{.metadata.name}", &svc()).unwrap(),
            "/team-a/chat-bot"
        );
        assert_eq!(
            render("{.metadata.labels['team']}/{.spec.model.name}/", &svc()).unwrap(),
            "/ml-ops/qwen"
        );
        assert_eq!(
            render("/x/{.metadata.annotations['route.x/y']}", &svc()).unwrap(),
            "/x/Keep.Me"
        );
        assert_eq!(default_path("ns", "u-1"), "/ns/u-1");
    }

    #[test]
    fn rejects_bad_templates() {
        assert!(matches!(
            render("/{.metadata.labels['nope']}", &svc()),
            Err(PathError::Missing(_))
        ));
        assert!(matches!(
            render("/{.metadata.name", &svc()),
            Err(PathError::Unclosed(_))
        ));
        assert!(matches!(
            render("/{metadata}", &svc()),
            Err(PathError::Unsupported(_))
        ));
        assert!(matches!(
            render("/{.metadata}", &svc()),
            Err(PathError::NotScalar(_))
        ));
        let long = format!("/{}", "a".repeat(201));
        assert!(matches!(render(&long, &svc()), Err(PathError::TooLong(_))));
    }
}
