//! Unit tests of `pydict.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use serde_json::{Value, json};

fn convert(s: &str) -> Value {
    serde_json::from_str(&python_literal_to_json(s).unwrap()).unwrap()
}

#[test]
fn python_dicts_become_json() {
    assert_eq!(
        convert("[{'gpuModel': 'MI300X', 'gpuCount': 1, 'ok': True, 'x': None, 'f': False}]"),
        json!([{"gpuModel": "MI300X", "gpuCount": 1, "ok": true, "x": null, "f": false}])
    );
}

#[test]
fn apostrophes_and_quotes_survive() {
    assert_eq!(
        convert(r#"{'description': "Meta's best model", 'q': 'say "hi"', 'e': 'it\'s'}"#),
        json!({"description": "Meta's best model", "q": "say \"hi\"", "e": "it's"})
    );
}

#[test]
fn escapes_follow_python() {
    assert_eq!(
        convert(r"['a\nb', 'tab\there', '\x41\u00e9\U0001F600', '\101', 'back\\slash', '\d']"),
        json!(["a\nb", "tab\there", "Aé😀", "A", "back\\slash", "\\d"])
    );
    assert_eq!(convert(r#"["\ud83d\ude00"]"#), json!(["😀"]));
    assert_eq!(convert("['multi\\\nline']"), json!(["multiline"]));
}

#[test]
fn tuples_trailing_commas_numbers() {
    assert_eq!(
        convert("{'a': (1, 2,), 'b': [1_000, +2, -.5, 3., 1e3,], }"),
        json!({"a": [1, 2], "b": [1000, 2, -0.5, 3.0, 1000.0]})
    );
}

#[test]
fn json_passes_through() {
    let text = r#"[{"a": "it's", "b": [true, false, null], "c": -1.5e2}]"#;
    assert_eq!(convert(text), serde_json::from_str::<Value>(text).unwrap());
}

#[test]
fn errors_carry_offsets() {
    let e = python_literal_to_json("{'a': NaN}").unwrap_err();
    assert_eq!(e.offset, 6);
    assert!(e.reason.contains("NaN"));
    assert!(
        python_literal_to_json("{'a': 'open}")
            .unwrap_err()
            .reason
            .contains("unterminated")
    );
    assert!(python_literal_to_json("{'a': 1} ;").is_err());
    assert!(python_literal_to_json(r"['\x4']").is_err());
    assert!(python_literal_to_json(r"['\ud800']").is_err());
    assert!(python_literal_to_json("[1.2.3]").is_err());
}

#[test]
fn crlf_line_continuation() {
    assert_eq!(
        convert("['multi\\\r\nline', 'cr\\\ronly']"),
        json!(["multiline", "cronly"])
    );
}

#[test]
fn empty_elements_are_rejected() {
    for bad in [
        "[,]",
        "(,)",
        "{,}",
        "[1,,]",
        "[1,,2]",
        "{'a': 1,,}",
        "[ , ]",
        "{'a':,}",
    ] {
        assert!(python_literal_to_json(bad).is_err(), "{bad}");
    }
    assert_eq!(convert("(1,)"), json!([1]));
    assert_eq!(convert("[1, ]"), json!([1]));
    assert_eq!(convert("()"), json!([]));
}

#[test]
fn string_prefixes() {
    assert_eq!(
        convert(r"[u'caf\xe9', U'x', r'C:\new', R'\d', 'a' ]"),
        json!(["café", "x", "C:\\new", "\\d", "a"])
    );
    assert_eq!(convert(r"[r'it\'s']"), json!(["it\\'s"]));
    for bad in ["[b'x']", "[rb'x']", "[f'x']", "[ur'x']"] {
        let e = python_literal_to_json(bad).unwrap_err();
        assert_eq!(e.offset, 1, "{bad}: {e}");
    }
}

#[test]
fn exponents_after_a_bare_point() {
    assert_eq!(
        convert("[1.e5, -2.E-1, .5e1, 3.]"),
        json!([100_000.0, -0.2, 5.0, 3.0])
    );
}
