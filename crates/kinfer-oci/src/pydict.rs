//! Python-literal to JSON conversion, for labels written as Python `repr` output.
//!
//! Contract:
//! - Input: a Python literal made of dicts, lists, tuples, strings, numbers, `True`, `False`
//!   and `None` (JSON's `true`, `false`, `null` are accepted too). Output: equivalent JSON text.
//! - A real tokenizer, not quote swapping: single- and double-quoted strings are decoded with
//!   Python's escape rules (`\'`, `\"`, `\\`, `\n`, `\t`, `\xHH`, `\uXXXX`, `\UXXXXXXXX`, octal,
//!   line continuation after LF, CRLF or CR; unknown escapes keep their backslash) and
//!   re-encoded as JSON strings, so
//!   apostrophes inside double-quoted strings and escaped quotes inside single-quoted strings
//!   survive. Upstream's blind `'`→`"` swap corrupts both.
//! - String prefixes `u`/`U` (ignored) and `r`/`R` (raw: backslashes kept) are read; bytes
//!   (`b''`) and f-strings are errors, having no JSON form.
//! - Tuples become arrays; one trailing comma after an element is dropped before `]`, `}` and
//!   `)`; a comma with no element before it (`[,]`, `(,)`, `[1,,2]`) is an error, as in Python.
//! - Python's `1.`, `.5` and `1.e5` numbers become JSON numbers.
//! - Anything else (unknown identifiers, `NaN`, unterminated strings, stray characters) is a
//!   [`PyLiteralError`] with the byte offset. Structural validity (balanced brackets, key/value
//!   shape) is left to the JSON parser that consumes the output.

use std::fmt;
use std::iter::Peekable;
use std::str::CharIndices;

/// A conversion failure at a byte offset of the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyLiteralError {
    /// Byte offset in the input.
    pub offset: usize,
    /// What was wrong there.
    pub reason: String,
}

impl fmt::Display for PyLiteralError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

impl std::error::Error for PyLiteralError {}

type Chars<'a> = Peekable<CharIndices<'a>>;

/// Converts a Python literal to JSON text.
pub fn python_literal_to_json(input: &str) -> Result<String, PyLiteralError> {
    let mut out = String::with_capacity(input.len() + 16);
    let mut chars = input.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => out.push(c),
            '{' | '[' | ':' => out.push(c),
            ',' => {
                // Python has no empty elements: `[,]`, `(,)`, `[1,,2]`, `{'a':,}` are errors.
                let previous = out.trim_end().chars().last();
                if matches!(previous, None | Some('[' | '{' | ',' | ':')) {
                    return Err(PyLiteralError {
                        offset: at,
                        reason: "comma without a preceding element".to_owned(),
                    });
                }
                out.push(c);
            }
            '(' => out.push('['),
            '}' | ']' | ')' => {
                drop_trailing_comma(&mut out);
                out.push(if c == ')' { ']' } else { c });
            }
            '\'' | '"' => {
                let text = read_string(&mut chars, c, at, false)?;
                out.push_str(&json_string(text));
            }
            '-' | '+' | '.' | '0'..='9' => {
                let number = read_while(&mut chars, c, |c| {
                    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-')
                });
                out.push_str(&normalise_number(&number, at)?);
            }
            c if c.is_alphabetic() || c == '_' => {
                let word = read_while(&mut chars, c, |c| c.is_alphanumeric() || c == '_');
                if let Some(&(_, quote @ ('\'' | '"'))) = chars.peek() {
                    chars.next();
                    let raw = match word.as_str() {
                        "u" | "U" => false,
                        "r" | "R" => true,
                        other => {
                            return Err(PyLiteralError {
                                offset: at,
                                reason: format!(
                                    "string prefix {other:?} is not supported (bytes and f-strings have no JSON form)"
                                ),
                            });
                        }
                    };
                    let text = read_string(&mut chars, quote, at, raw)?;
                    out.push_str(&json_string(text));
                    continue;
                }
                out.push_str(match word.as_str() {
                    "True" | "true" => "true",
                    "False" | "false" => "false",
                    "None" | "null" => "null",
                    other => {
                        return Err(PyLiteralError {
                            offset: at,
                            reason: format!("unexpected identifier {other:?}"),
                        });
                    }
                });
            }
            other => {
                return Err(PyLiteralError {
                    offset: at,
                    reason: format!("unexpected character {other:?}"),
                });
            }
        }
    }
    Ok(out)
}

/// A JSON string literal (`Value`'s `Display` cannot fail, unlike `to_string`).
fn json_string(text: String) -> String {
    serde_json::Value::String(text).to_string()
}

fn drop_trailing_comma(out: &mut String) {
    let trimmed = out.trim_end().len();
    if out[..trimmed].ends_with(',') {
        out.truncate(trimmed - 1);
    }
}

fn read_while(chars: &mut Chars<'_>, first: char, keep: impl Fn(char) -> bool) -> String {
    let mut s = String::from(first);
    while let Some(&(_, c)) = chars.peek() {
        if !keep(c) {
            break;
        }
        s.push(c);
        chars.next();
    }
    s
}

fn normalise_number(raw: &str, at: usize) -> Result<String, PyLiteralError> {
    let cleaned: String = raw
        .trim_start_matches('+')
        .chars()
        .filter(|&c| c != '_')
        .collect();
    // Python allows "1." and ".5"; JSON does not.
    let cleaned = match cleaned.strip_prefix('-') {
        Some(rest) if rest.starts_with('.') => format!("-0{rest}"),
        _ if cleaned.starts_with('.') => format!("0{cleaned}"),
        _ => cleaned,
    };
    // "1." and "1.e5": JSON needs a digit after the point.
    let cleaned = cleaned
        .strip_suffix('.')
        .map_or(cleaned.clone(), |s| format!("{s}.0"))
        .replace(".e", ".0e")
        .replace(".E", ".0E");
    if serde_json::from_str::<serde_json::Number>(&cleaned).is_ok() {
        Ok(cleaned)
    } else {
        Err(PyLiteralError {
            offset: at,
            reason: format!("invalid number {raw:?}"),
        })
    }
}

/// The rest of a string literal opened by `quote`. In a raw string a backslash keeps itself
/// and the character after it (so `\'` does not close the string), as in Python.
fn read_string(
    chars: &mut Chars<'_>,
    quote: char,
    start: usize,
    raw: bool,
) -> Result<String, PyLiteralError> {
    let unterminated = || PyLiteralError {
        offset: start,
        reason: "unterminated string".to_owned(),
    };
    let mut s = String::new();
    loop {
        let (at, c) = chars.next().ok_or_else(unterminated)?;
        match c {
            c if c == quote => return Ok(s),
            '\n' | '\r' => return Err(unterminated()),
            '\\' if raw => {
                s.push('\\');
                let (_, next) = chars.next().ok_or_else(unterminated)?;
                s.push(next);
            }
            '\\' => read_escape(chars, at, &mut s)?,
            c => s.push(c),
        }
    }
}

fn read_escape(chars: &mut Chars<'_>, at: usize, s: &mut String) -> Result<(), PyLiteralError> {
    let err = |reason: &str| PyLiteralError {
        offset: at,
        reason: reason.to_owned(),
    };
    let (_, c) = chars.next().ok_or_else(|| err("unterminated escape"))?;
    match c {
        '\n' => {} // line continuation
        '\r' => {
            // CRLF (or a lone CR) line continuation.
            if matches!(chars.peek(), Some((_, '\n'))) {
                chars.next();
            }
        }
        '\\' | '\'' | '"' => s.push(c),
        'n' => s.push('\n'),
        't' => s.push('\t'),
        'r' => s.push('\r'),
        'b' => s.push('\u{8}'),
        'f' => s.push('\u{c}'),
        'v' => s.push('\u{b}'),
        'a' => s.push('\u{7}'),
        '0'..='7' => {
            let mut value = c.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                match chars.peek().and_then(|&(_, d)| d.to_digit(8)) {
                    Some(d) => {
                        value = value * 8 + d;
                        chars.next();
                    }
                    None => break,
                }
            }
            s.push(char::from_u32(value).ok_or_else(|| err("invalid octal escape"))?);
        }
        'x' => s.push(hex_char(chars, 2, at)?),
        'u' => {
            let first = hex_value(chars, 4, at)?;
            s.push(surrogate_aware(chars, first, at)?);
        }
        'U' => s.push(hex_char(chars, 8, at)?),
        other => {
            // Python keeps unknown escapes verbatim.
            s.push('\\');
            s.push(other);
        }
    }
    Ok(())
}

fn hex_value(chars: &mut Chars<'_>, digits: usize, at: usize) -> Result<u32, PyLiteralError> {
    let mut value = 0u32;
    for _ in 0..digits {
        let d = chars
            .next()
            .and_then(|(_, c)| c.to_digit(16))
            .ok_or_else(|| PyLiteralError {
                offset: at,
                reason: format!("escape needs {digits} hex digits"),
            })?;
        value = value.wrapping_mul(16) + d;
    }
    Ok(value)
}

fn hex_char(chars: &mut Chars<'_>, digits: usize, at: usize) -> Result<char, PyLiteralError> {
    let value = hex_value(chars, digits, at)?;
    char::from_u32(value).ok_or_else(|| PyLiteralError {
        offset: at,
        reason: format!("escape U+{value:X} is not a character"),
    })
}

/// Combines a `\uD8xx\uDCxx` surrogate pair; a lone surrogate is an error.
fn surrogate_aware(chars: &mut Chars<'_>, first: u32, at: usize) -> Result<char, PyLiteralError> {
    let err = || PyLiteralError {
        offset: at,
        reason: "unpaired surrogate escape".to_owned(),
    };
    if !(0xD800..0xDC00).contains(&first) {
        return char::from_u32(first).ok_or_else(err);
    }
    let mut lookahead = chars.clone();
    let is_low_escape =
        matches!(lookahead.next(), Some((_, '\\'))) && matches!(lookahead.next(), Some((_, 'u')));
    if !is_low_escape {
        return Err(err());
    }
    chars.next();
    chars.next();
    let second = hex_value(chars, 4, at)?;
    if !(0xDC00..0xE000).contains(&second) {
        return Err(err());
    }
    char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)).ok_or_else(err)
}

#[cfg(test)]
#[path = "unit_tests/pydict.rs"]
mod tests;
