//! Unit tests of `error.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use oci_client::errors::{OciEnvelope, OciError as Entry};

fn envelope(code: OciErrorCode) -> OciDistributionError {
    OciDistributionError::RegistryError {
        envelope: OciEnvelope {
            errors: vec![Entry {
                code,
                message: "m".to_owned(),
                detail: serde_json::Value::Null,
            }],
        },
        url: "http://r/v2/x/manifests/y".to_owned(),
    }
}

#[test]
fn categories_follow_registry_codes_and_statuses() {
    let cases = [
        (
            envelope(OciErrorCode::ManifestUnknown),
            OciErrorCategory::NotFound,
        ),
        (
            envelope(OciErrorCode::NameUnknown),
            OciErrorCategory::NotFound,
        ),
        (envelope(OciErrorCode::Denied), OciErrorCategory::Auth),
        (
            envelope(OciErrorCode::Toomanyrequests),
            OciErrorCategory::Infrastructure,
        ),
        (
            envelope(OciErrorCode::NameInvalid),
            OciErrorCategory::InvalidSpec,
        ),
        (
            OciDistributionError::UnauthorizedError { url: String::new() },
            OciErrorCategory::Auth,
        ),
        (
            OciDistributionError::ServerError {
                code: 403,
                url: String::new(),
                message: String::new(),
            },
            OciErrorCategory::Auth,
        ),
        (
            OciDistributionError::ServerError {
                code: 503,
                url: String::new(),
                message: "busy".to_owned(),
            },
            OciErrorCategory::Infrastructure,
        ),
        (
            OciDistributionError::ServerError {
                code: 404,
                url: String::new(),
                message: String::new(),
            },
            OciErrorCategory::NotFound,
        ),
        (
            OciDistributionError::UnsupportedSchemaVersionError(1),
            OciErrorCategory::InvalidSpec,
        ),
    ];
    for (err, want) in cases {
        let text = err.to_string();
        assert_eq!(
            OciError::from_distribution("r/x:y", err).category(),
            want,
            "{text}"
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
    let empty = OciDistributionError::RegistryError {
        envelope: OciEnvelope { errors: Vec::new() },
        url: String::new(),
    };
    for (err, want) in [
        (empty, OciErrorCategory::Infrastructure),
        (
            envelope(OciErrorCode::Other("UNKNOWN".to_owned())),
            OciErrorCategory::Infrastructure,
        ),
        (
            envelope(OciErrorCode::Other(
                "BLOB_UPLOAD_UNKNOWN_ELSEWHERE".to_owned(),
            )),
            OciErrorCategory::Infrastructure,
        ),
        (
            envelope(OciErrorCode::Other("UNAUTHORIZED_CLIENT".to_owned())),
            OciErrorCategory::Infrastructure,
        ),
        (
            envelope(OciErrorCode::Other("forbidden".to_owned())),
            OciErrorCategory::Auth,
        ),
    ] {
        let text = err.to_string();
        assert_eq!(
            OciError::from_distribution("r/x:y", err).category(),
            want,
            "{text}"
        );
    }
    // With a status, the status decides whatever the body says.
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
