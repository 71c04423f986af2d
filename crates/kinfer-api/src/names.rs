//! Kubernetes' name syntax (apimachinery's `validation` package), in one place for the
//! project: spec validation here checks user input with it, and `kinfer_builders::naming`
//! (which re-exports it) checks the names it derives. Each predicate matches the API server's
//! rule exactly, so a value accepted here is never refused by the server for its syntax.

/// Maximum length of a DNS-1123 or DNS-1035 label (most object names, Service names).
pub const DNS1123_LABEL_MAX: usize = 63;
/// Maximum length of a DNS-1123 subdomain (names of most other objects).
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;
/// Maximum length of a label value.
pub const LABEL_VALUE_MAX: usize = 63;

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// A DNS-1123 label: 1-63 characters of `[a-z0-9-]`, starting and ending alphanumeric.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= DNS1123_LABEL_MAX
        && is_lower_alnum(b[0])
        && is_lower_alnum(b[b.len() - 1])
        && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
}

/// A DNS-1123 subdomain as Kubernetes checks it (`IsDNS1123Subdomain`): at most 253
/// characters, dot-separated segments of `[a-z0-9-]` starting and ending alphanumeric (the
/// segments are not limited to 63 characters).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= DNS1123_SUBDOMAIN_MAX
        && s.split('.').all(|segment| {
            let b = segment.as_bytes();
            !b.is_empty()
                && is_lower_alnum(b[0])
                && is_lower_alnum(b[b.len() - 1])
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        })
}

/// A DNS-1035 label: a DNS-1123 label that starts with a letter (Service names).
pub fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

/// A label value: empty, or at most 63 characters of `[A-Za-z0-9._-]` starting and ending
/// alphanumeric.
pub fn is_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() {
        return true;
    }
    b.len() <= LABEL_VALUE_MAX
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// A qualified name (label and annotation keys, extended resource names; Kubernetes'
/// `IsQualifiedName`): an optional DNS-1123 subdomain prefix and `/`, then 1 to 63
/// alphanumerics, `-`, `_` or `.`, starting and ending alphanumeric.
pub fn is_qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    !name.is_empty() && is_label_value(name) && prefix.is_none_or(is_dns1123_subdomain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_api_servers_rules() {
        assert!(is_dns1123_label("a-1"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(!is_dns1123_label("Gateway"));
        assert!(is_dns1123_subdomain("a.b-c.d"));
        assert!(is_dns1123_subdomain(&format!("{}.b", "a".repeat(100))));
        assert!(!is_dns1123_subdomain(&"a".repeat(254)));
        assert!(!is_dns1123_subdomain("$(rm -rf /)"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(is_dns1035_label("svc"));
        assert!(!is_dns1035_label("1svc"));
        assert!(is_label_value(""));
        assert!(is_label_value("A_b.c-1"));
        assert!(!is_label_value("-a"));
        assert!(is_qualified_name("example.com/key_1"));
        assert!(is_qualified_name("key"));
        assert!(!is_qualified_name("example.com/"));
        assert!(!is_qualified_name("/key"));
        assert!(!is_qualified_name("Bad_Prefix/key"));
        assert!(!is_qualified_name(&"k".repeat(64)));
    }
}
