//! Unit tests of `error.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn coded(code: &str) -> String {
    format!(r#"{{"errors":[{{"code":"{code}","message":"m"}}]}}"#)
}

#[test]
fn categories_follow_registry_codes_and_statuses() {
    for (status, body, want) in [
        (404, coded("MANIFEST_UNKNOWN"), OciErrorCategory::NotFound),
        (400, coded("NAME_UNKNOWN"), OciErrorCategory::NotFound),
        (400, coded("DENIED"), OciErrorCategory::Auth),
        (
            429,
            coded("TOOMANYREQUESTS"),
            OciErrorCategory::Infrastructure,
        ),
        (400, coded("NAME_INVALID"), OciErrorCategory::InvalidSpec),
        (
            400,
            coded("MANIFEST_INVALID"),
            OciErrorCategory::InvalidSpec,
        ),
        (401, String::new(), OciErrorCategory::Auth),
        (403, coded("MANIFEST_UNKNOWN"), OciErrorCategory::Auth),
        (500, coded("NAME_INVALID"), OciErrorCategory::Infrastructure),
        (503, String::new(), OciErrorCategory::Infrastructure),
    ] {
        assert_eq!(
            OciError::from_status("r/x:y", status, &body).category(),
            want,
            "{status} {body}"
        );
    }
}

#[test]
fn status_body_messages_are_extracted() {
    let e = OciError::from_status(
        "r/x",
        404,
        r#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known"}]}"#,
    );
    assert_eq!(e.category(), OciErrorCategory::NotFound);
    assert!(
        e.to_string()
            .contains("NAME_UNKNOWN: repository name not known")
    );
    assert_eq!(
        OciError::from_status("r/x", 500, "").category(),
        OciErrorCategory::Infrastructure
    );
}

#[test]
fn uninformative_error_bodies_are_infrastructure() {
    for (body, want) in [
        (
            r#"{"errors":[]}"#.to_owned(),
            OciErrorCategory::Infrastructure,
        ),
        (coded("UNKNOWN"), OciErrorCategory::Infrastructure),
        (
            coded("BLOB_UPLOAD_UNKNOWN_ELSEWHERE"),
            OciErrorCategory::Infrastructure,
        ),
        (
            coded("UNAUTHORIZED_CLIENT"),
            OciErrorCategory::Infrastructure,
        ),
        (coded("forbidden"), OciErrorCategory::Auth),
    ] {
        assert_eq!(
            OciError::from_status("r/x:y", 400, &body).category(),
            want,
            "{body}"
        );
    }
    // 401, 403, 404 and 5xx: the status decides whatever the body says.
    for (status, want) in [
        (500, OciErrorCategory::Infrastructure),
        (404, OciErrorCategory::NotFound),
        (401, OciErrorCategory::Auth),
    ] {
        for body in [
            r#"{"errors":[]}"#,
            r#"{"errors":[{"code":"UNKNOWN","message":"x"}]}"#,
        ] {
            assert_eq!(OciError::from_status("r/x", status, body).category(), want);
        }
    }
}

#[test]
fn a_registry_cannot_flood_or_forge_lines_in_an_error() {
    let body = format!(
        "line one\nStatus: Ready\r\n\u{1b}[31m{}",
        "x".repeat(100_000)
    );
    let message = OciError::from_status("r/x", 502, &body).to_string();
    assert!(message.len() < 500, "{}", message.len());
    assert!(!message.contains('\n') && !message.contains('\r') && !message.contains('\u{1b}'));
    let coded = format!(
        r#"{{"errors":[{{"code":"DENIED","message":"{}"}}]}}"#,
        "y".repeat(10_000)
    );
    assert!(OciError::from_status("r/x", 403, &coded).to_string().len() < 500);
}
