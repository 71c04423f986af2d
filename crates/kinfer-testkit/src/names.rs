//! Name and label validation, as the real server's `ObjectMeta` validation does it: object names
//! are DNS-1123 subdomains (most kinds and every custom resource), DNS-1123 labels (Namespaces),
//! DNS-1035 labels (Services) or path segments (RBAC kinds); label keys are an optional
//! DNS-1123 subdomain prefix and a 63-character name, label values at most 63 characters.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::error::Cause;
use crate::resources::ResourceDef;

const DNS1123_LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

fn anchored(p: &str) -> Regex {
    Regex::new(&format!("^(?:{p})$")).unwrap_or_else(|e| unreachable!("a constant regex: {e}"))
}

static RE_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_LABEL));
static RE_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN));
static RE_1035: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1035_LABEL));
static RE_QUALIFIED: LazyLock<Regex> = LazyLock::new(|| anchored(QUALIFIED_NAME));
static RE_VALUE: LazyLock<Regex> = LazyLock::new(|| anchored(LABEL_VALUE));

fn invalid(field: &str, value: &str, why: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {value:?}: {why}"),
        field: field.to_owned(),
    }
}

fn too_long(max: usize) -> String {
    format!("must be no more than {max} characters")
}

fn subdomain_errors(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    if v.len() > 253 {
        out.push(too_long(253));
    }
    if !RE_SUBDOMAIN.is_match(v) {
        out.push(format!(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{DNS1123_SUBDOMAIN}')"
        ));
    }
    out
}

fn label_errors(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    if v.len() > 63 {
        out.push(too_long(63));
    }
    if !RE_LABEL.is_match(v) {
        out.push(format!(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{DNS1123_LABEL}')"
        ));
    }
    out
}

fn dns1035_errors(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    if v.len() > 63 {
        out.push(too_long(63));
    }
    if !RE_1035.is_match(v) {
        out.push(format!(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '{DNS1035_LABEL}')"
        ));
    }
    out
}

fn path_segment_errors(v: &str) -> Vec<String> {
    if v == "." || v == ".." {
        return vec![format!("may not be '{v}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|c| v.contains(**c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// The causes for an invalid `metadata.name` of a new object of `def`.
pub fn name_causes(def: &ResourceDef, name: &str) -> Vec<Cause> {
    let errors = match (def.group.as_str(), def.plural.as_str()) {
        (_, _) if def.custom => subdomain_errors(name),
        ("", "namespaces") => label_errors(name),
        ("", "services") => dns1035_errors(name),
        ("rbac.authorization.k8s.io", _) => path_segment_errors(name),
        _ => subdomain_errors(name),
    };
    errors
        .iter()
        .map(|e| invalid("metadata.name", name, e))
        .collect()
}

/// The causes for invalid keys or values of `metadata.labels`.
pub fn label_causes(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(labels) = obj["metadata"]["labels"].as_object() else {
        return out;
    };
    for (k, v) in labels {
        for e in qualified_name_errors(k) {
            out.push(invalid("metadata.labels", k, &e));
        }
        let v = v.as_str().unwrap_or_default();
        if v.len() > 63 {
            out.push(invalid("metadata.labels", v, &too_long(63)));
        }
        if !RE_VALUE.is_match(v) {
            out.push(invalid(
                "metadata.labels",
                v,
                &format!(
                    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '{LABEL_VALUE}')"
                ),
            ));
        }
    }
    out
}

fn qualified_name_errors(key: &str) -> Vec<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let mut out = Vec::new();
    if let Some(p) = prefix {
        if p.is_empty() {
            out.push("prefix part must be non-empty".to_owned());
        } else {
            out.extend(
                subdomain_errors(p)
                    .into_iter()
                    .map(|e| format!("prefix part {e}")),
            );
        }
    }
    if name.is_empty() {
        out.push("name part must be non-empty".to_owned());
    } else {
        if name.len() > 63 {
            out.push(format!("name part {}", too_long(63)));
        }
        if !RE_QUALIFIED.is_match(name) {
            out.push(format!(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{QUALIFIED_NAME}')"
            ));
        }
    }
    out
}

/// The name for `generateName`: the prefix cut to leave room for the random suffix.
pub fn generated(prefix: &str, suffix: &str) -> String {
    let mut end = prefix.len().min(63 - suffix.len());
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{suffix}", &prefix[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels() {
        assert!(label_causes(&json!({"metadata": {"labels": {"a.b/c": "d", "e": ""}}})).is_empty());
        assert_eq!(
            label_causes(&json!({"metadata": {"labels": {"-a": "b"}}})).len(),
            1
        );
        assert_eq!(
            label_causes(&json!({"metadata": {"labels": {"a": "x".repeat(64)}}})).len(),
            1
        );
        assert_eq!(
            label_causes(&json!({"metadata": {"labels": {"A_/b": "c"}}})).len(),
            1
        );
    }
}
