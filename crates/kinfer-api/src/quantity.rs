//! Parsing of Kubernetes `resource.Quantity` strings.
//!
//! The API server accepts a quantity by pattern; operators need its value (to compare GPU
//! memory against a node label, to size a PVC, to check a CPU request). This module is the one
//! parser for that: [`parse_bytes`] exactly, in integers, for sizes; [`parse`] as a float for
//! anything else.

/// A quantity that is not a valid size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a valid quantity: {reason}")]
pub struct QuantityError {
    /// The text as given.
    pub value: String,
    /// Why it was rejected.
    pub reason: &'static str,
}

/// Parses a Kubernetes quantity into bytes, rounding fractions up (`64Gi`, `100G`, `1.5Ti`,
/// `68719476736`, `1e9`).
pub fn parse_bytes(raw: &str) -> Result<u64, QuantityError> {
    let invalid = |why: &'static str| QuantityError {
        value: raw.to_owned(),
        reason: why,
    };
    let s = raw.trim();
    let s = s.strip_prefix('+').unwrap_or(s);
    if s.starts_with('-') {
        return Err(invalid("a size cannot be negative"));
    }
    let number_len = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_len);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(invalid("no number"));
    }
    if frac_part.contains('.') {
        return Err(invalid("more than one decimal point"));
    }
    // value = mantissa · 2^bin · 10^dec / 10^frac_len
    let (bin, dec): (u32, i32) = match suffix {
        "" => (0, 0),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        exp if exp.starts_with(['e', 'E']) => {
            let e: i32 = exp[1..].parse().map_err(|_| invalid("bad exponent"))?;
            (0, e)
        }
        _ => return Err(invalid("unknown suffix")),
    };
    let digits = format!("{int_part}{frac_part}");
    let mantissa: u128 = digits.parse().map_err(|_| invalid("number too large"))?;
    let frac_len = i32::try_from(frac_part.len()).map_err(|_| invalid("number too long"))?;
    // Checked: the exponent is the tenant's (`1.5e-2147483648` would underflow).
    let scale = dec
        .checked_sub(frac_len)
        .ok_or_else(|| invalid("exponent out of range"))?;
    let mut value = mantissa
        .checked_mul(1u128 << bin)
        .ok_or_else(|| invalid("size too large"))?;
    if scale >= 0 {
        let factor = 10u128
            .checked_pow(scale.unsigned_abs())
            .ok_or_else(|| invalid("size too large"))?;
        value = value
            .checked_mul(factor)
            .ok_or_else(|| invalid("size too large"))?;
    } else {
        let divisor = 10u128
            .checked_pow(scale.unsigned_abs())
            .ok_or_else(|| invalid("too many decimal places"))?;
        value = value.div_ceil(divisor);
    }
    u64::try_from(value).map_err(|_| invalid("size too large"))
}

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
    use super::{parse, parse_bytes};

    #[test]
    fn sizes_parse_exactly_and_round_fractions_up() {
        let cases = [
            ("64Gi", Some(64 << 30)),
            ("100G", Some(100_000_000_000)),
            ("1.5Ti", Some(3 << 39)),
            ("68719476736", Some(68_719_476_736)),
            ("1e9", Some(1_000_000_000)),
            ("1500m", Some(2)),
            ("+1Ki", Some(1024)),
            ("-1Gi", None),
            ("1.2.3Gi", None),
            ("64GB", None),
            ("", None),
            ("99999999999Ei", None),
            ("1.5e-2147483648", None),
            ("1e2147483647", None),
            ("1e-2147483648", None),
        ];
        for (raw, want) in cases {
            assert_eq!(parse_bytes(raw).ok(), want, "{raw:?}");
        }
    }

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
