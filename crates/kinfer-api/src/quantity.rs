//! Parsing of Kubernetes `resource.Quantity` strings.
//!
//! The API server accepts a quantity by pattern; operators need its value (to compare GPU
//! memory against a node label, to size a PVC). This is the one parser for that.

/// Parses a quantity (`24Gi`, `500m`, `1.5`, `2e3`) into its numeric value in base units.
///
/// Returns `None` for anything the API server would reject.
pub fn parse(value: &str) -> Option<f64> {
    let value = value.trim();
    let (number, suffix) = split(value)?;
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent if exponent.starts_with(['e', 'E']) => {
            let exp: i32 = exponent[1..].parse().ok()?;
            10f64.powi(exp)
        }
        _ => return None,
    };
    let result = number * scale;
    result.is_finite().then_some(result)
}

/// Splits `value` into its signed decimal number and its suffix.
fn split(value: &str) -> Option<(&str, &str)> {
    let bytes = value.as_bytes();
    let mut end = 0;
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        end = 1;
    }
    let digits_start = end;
    let mut dots = 0;
    while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
        if bytes[end] == b'.' {
            dots += 1;
        }
        end += 1;
    }
    let digits = &value[digits_start..end];
    if digits.is_empty() || digits == "." || dots > 1 {
        return None;
    }
    Some((&value[..end], &value[end..]))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn parses_binary_decimal_and_exponent_suffixes() {
        assert_eq!(parse("24Gi"), Some(24.0 * 1024f64.powi(3)));
        assert_eq!(parse("500m"), Some(0.5));
        assert_eq!(parse("4"), Some(4.0));
        assert_eq!(parse("1.5"), Some(1.5));
        assert_eq!(parse("2e3"), Some(2000.0));
        assert_eq!(parse("1k"), Some(1000.0));
        assert_eq!(parse("+1M"), Some(1e6));
        assert_eq!(parse(".5"), Some(0.5));
    }

    #[test]
    fn rejects_what_the_api_server_rejects() {
        for bad in ["", "Gi", "24GB", "1.2.3", "abc", "1 Gi", "--1", "1e"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
