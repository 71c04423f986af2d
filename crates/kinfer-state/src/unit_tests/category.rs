use std::time::Duration;

use kube::core::Status;
use kube::core::response::StatusDetails;

use super::*;

fn api(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
}

#[test]
fn kube_api_errors_by_code_and_reason() {
    use Direction::{Downstream, Upstream};
    use ErrorCategory::*;
    let cases = [
        (401, "Unauthorized", "", Upstream, Auth),
        (
            403,
            "Forbidden",
            "pods is forbidden: User cannot list",
            Downstream,
            Auth,
        ),
        (
            403,
            "Forbidden",
            "pods \"x\" is forbidden: exceeded quota: q, requested: cpu=1",
            Downstream,
            ResourceExhaustion,
        ),
        (404, "NotFound", "", Upstream, MissingUpstreamDependency),
        (404, "NotFound", "", Downstream, MissingDownstreamDependency),
        (404, "", "", Upstream, MissingUpstreamDependency),
        (409, "Conflict", "", Downstream, Infrastructure),
        (409, "AlreadyExists", "", Downstream, InvalidSpec),
        (410, "Expired", "", Downstream, Infrastructure),
        (
            422,
            "Invalid",
            "spec.replicas: Invalid value",
            Downstream,
            InvalidSpec,
        ),
        (400, "BadRequest", "", Downstream, InvalidSpec),
        (413, "RequestEntityTooLarge", "", Downstream, InvalidSpec),
        (415, "UnsupportedMediaType", "", Downstream, InvalidSpec),
        (418, "", "", Downstream, InvalidSpec),
        (429, "TooManyRequests", "", Downstream, Infrastructure),
        (429, "", "", Downstream, Infrastructure),
        (500, "InternalError", "", Downstream, Infrastructure),
        (500, "ServerTimeout", "", Downstream, Infrastructure),
        (503, "ServiceUnavailable", "", Downstream, Infrastructure),
        (504, "Timeout", "", Downstream, Infrastructure),
        (502, "", "", Downstream, Infrastructure),
        (0, "", "", Downstream, Infrastructure),
    ];
    for (code, reason, message, direction, want) in cases {
        let err = api(code, reason, message);
        assert_eq!(
            categorize_kube_error(&err, direction),
            want,
            "{code} {reason} {message} {direction:?}"
        );
    }
}

#[test]
fn kube_transport_and_client_errors() {
    let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
    let cases = [
        (
            kube::Error::Service(Box::new(io)),
            ErrorCategory::Infrastructure,
        ),
        (
            kube::Error::ReadEvents(std::io::Error::other("reset")),
            ErrorCategory::Infrastructure,
        ),
        (
            kube::Error::LinesCodecMaxLineLengthExceeded,
            ErrorCategory::Infrastructure,
        ),
        (kube::Error::TlsRequired, ErrorCategory::Infrastructure),
        (
            kube::Error::SerdeError(serde_json::from_str::<u8>("x").unwrap_err()),
            ErrorCategory::InvalidSpec,
        ),
        (
            kube::Error::Discovery(kube::error::DiscoveryError::MissingKind("X".into())),
            ErrorCategory::MissingUpstreamDependency,
        ),
    ];
    for (err, want) in cases {
        assert_eq!(
            categorize_kube_error(&err, Direction::Downstream),
            want,
            "{err}"
        );
    }
}

#[test]
fn retry_after_is_read_from_status_details() {
    let details = StatusDetails {
        name: String::new(),
        group: String::new(),
        kind: String::new(),
        uid: String::new(),
        causes: Vec::new(),
        retry_after_seconds: 7,
    };
    let err = kube::Error::Api(
        Status::failure("slow down", "TooManyRequests")
            .with_code(429)
            .with_details(details)
            .boxed(),
    );
    let c = categorized_kube_error(&err, Direction::Downstream);
    assert_eq!(c.category, ErrorCategory::Infrastructure);
    assert_eq!(c.reason, Reason::InfrastructureError);
    assert_eq!(c.retry_after, Some(Duration::from_secs(7)));
    assert_eq!(kube_retry_after(&api(500, "", "")), None);
}

#[derive(Debug, thiserror::Error)]
enum Own {
    #[error("select template: {0}")]
    SelectTemplate(String),
    #[error("fetch model")]
    FetchModel(#[source] std::io::Error),
}

impl Categorize for Own {
    fn category(&self) -> ErrorCategory {
        match self {
            Self::SelectTemplate(_) => ErrorCategory::InvalidSpec,
            Self::FetchModel(_) => ErrorCategory::Infrastructure,
        }
    }
    fn reason(&self) -> Reason {
        match self {
            Self::SelectTemplate(_) => Reason::custom("TemplateSelectionAmbiguous"),
            Self::FetchModel(_) => self.category().reason(),
        }
    }
}

#[test]
fn typed_errors_keep_category_reason_and_chain() {
    let e = Own::SelectTemplate("two candidates".into());
    let c = CategorizedError::from_error(&e);
    assert_eq!(c.category, ErrorCategory::InvalidSpec);
    assert_eq!(c.reason.as_str(), "TemplateSelectionAmbiguous");
    assert_eq!(c.message, "select template: two candidates");
    let e = Own::FetchModel(std::io::Error::other("boom"));
    let c = CategorizedError::from_error(&e);
    assert_eq!(c.message, "fetch model: boom");
    assert_eq!(c.reason, Reason::InfrastructureError);
}

#[test]
fn category_names_and_user_fixability() {
    let fixable: Vec<_> = ErrorCategory::ALL
        .iter()
        .filter(|c| c.is_user_fixable())
        .collect();
    assert_eq!(
        fixable,
        [
            &ErrorCategory::Auth,
            &ErrorCategory::MissingUpstreamDependency,
            &ErrorCategory::InvalidSpec
        ]
    );
    for c in ErrorCategory::ALL {
        assert_eq!(c.to_string(), c.as_str());
    }
}

#[cfg(feature = "oci")]
#[test]
fn registry_categories_map() {
    use kinfer_oci::OciErrorCategory as O;
    let cases = [
        (O::Auth, ErrorCategory::Auth),
        (O::NotFound, ErrorCategory::MissingUpstreamDependency),
        (O::Infrastructure, ErrorCategory::Infrastructure),
        (O::InvalidSpec, ErrorCategory::InvalidSpec),
    ];
    for (o, want) in cases {
        assert_eq!(ErrorCategory::from(o), want);
    }
}
