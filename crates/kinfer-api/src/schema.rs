//! Schema fragments shared by the CRD types, for shapes schemars cannot derive on its own.
//!
//! Each function has the `schema_with` signature, so a field opts in with
//! `#[schemars(schema_with = "crate::schema::quantity")]`. They reproduce what controller-gen
//! emits upstream, so the generated CRDs accept exactly what the upstream CRDs accept.

use schemars::{Schema, SchemaGenerator, json_schema};

/// The Kubernetes `resource.Quantity` pattern, as controller-gen writes it.
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// A Go `time.Duration` string such as `30s`, `1m30s` or `500ms`.
pub const DURATION_PATTERN: &str = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$";

/// A `resource.Quantity`: an integer or a string in quantity syntax (`24Gi`, `500m`).
pub fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": true,
    })
}

/// A map of resource names to quantities (`requests`, `limits`, `capacity`).
pub fn quantity_map(generator: &mut SchemaGenerator) -> Schema {
    let value = quantity(generator);
    json_schema!({
        "type": "object",
        "additionalProperties": value,
    })
}

/// An integer or a string (`intstr.IntOrString`), e.g. a port number or name.
pub fn int_or_string(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": true,
    })
}

/// A Go `metav1.Duration` string (`30s`).
pub fn duration(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": DURATION_PATTERN,
    })
}

/// A free-form object kept verbatim (`x-kubernetes-preserve-unknown-fields`).
pub fn preserve_unknown_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A free-form value of any JSON type kept verbatim (controller-gen's `apiextensionsv1.JSON`).
pub fn preserve_unknown_any(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Parses a Go duration string (`1h2m3.5s`, `500ms`) into seconds.
///
/// Returns `None` when the string is not a valid duration; `0` parses to zero.
pub fn parse_duration_seconds(value: &str) -> Option<f64> {
    let value = value.trim();
    if value == "0" {
        return Some(0.0);
    }
    if value.is_empty() {
        return None;
    }
    let mut total = 0.0;
    let mut rest = value;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return None;
        }
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::parse_duration_seconds;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration_seconds("30s"), Some(30.0));
        assert_eq!(parse_duration_seconds("1m30s"), Some(90.0));
        assert_eq!(parse_duration_seconds("1h"), Some(3600.0));
        assert_eq!(parse_duration_seconds("500ms"), Some(0.5));
        assert_eq!(parse_duration_seconds("1.5s"), Some(1.5));
        assert_eq!(parse_duration_seconds("0"), Some(0.0));
        assert_eq!(parse_duration_seconds("0s"), Some(0.0));
    }

    #[test]
    fn malformed_durations_are_rejected() {
        for bad in ["", "s", "30", "30x", "1h-5m", "abc", ".s", "1..2s"] {
            assert_eq!(parse_duration_seconds(bad), None, "{bad}");
        }
    }
}
