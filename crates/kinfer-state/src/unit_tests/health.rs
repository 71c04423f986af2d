use kube::core::Status;

use super::*;

fn not_found() -> kube::Error {
    kube::Error::Api(
        Status::failure("x not found", "NotFound")
            .with_code(404)
            .boxed(),
    )
}

#[test]
fn effective_state_from_errors() {
    use ErrorCategory::*;
    let cases = [
        (vec![], ComponentState::Ready),
        (
            vec![MissingDownstreamDependency],
            ComponentState::Progressing,
        ),
        (vec![Infrastructure], ComponentState::Degraded),
        (vec![MissingUpstreamDependency], ComponentState::Degraded),
        (vec![Auth], ComponentState::Failed),
        (vec![InvalidSpec], ComponentState::Failed),
        (vec![ResourceExhaustion], ComponentState::Failed),
        (
            vec![MissingDownstreamDependency, Infrastructure],
            ComponentState::Degraded,
        ),
        (vec![Infrastructure, Auth], ComponentState::Failed),
    ];
    for (cats, want) in cases {
        let mut h = ComponentHealth::new("C");
        for c in &cats {
            h = h.error(CategorizedError::new(*c, "e"));
        }
        assert_eq!(h.effective_state(), want, "{cats:?}");
    }
    let explicit =
        ComponentHealth::with_state("C", ComponentState::NotAvailable, Reason::NotAvailable, "")
            .error(CategorizedError::new(Auth, "ignored for state"));
    assert_eq!(explicit.effective_state(), ComponentState::NotAvailable);
}

#[test]
fn fetch_results_by_direction() {
    let ok = |_: &u8| ComponentHealth::new("ignored");
    let r: FetchResult<u8> = Ok(None);
    let h = upstream("Model", &r, ok);
    assert_eq!(
        h.errors[0].category,
        ErrorCategory::MissingUpstreamDependency
    );
    assert_eq!(h.effective_reason(), Reason::ReferenceNotFound);
    assert_eq!(h.effective_message(), "Model not found");
    let h = downstream("Deployment", &r, ok);
    assert_eq!(
        h.errors[0].category,
        ErrorCategory::MissingDownstreamDependency
    );
    assert_eq!(h.effective_reason(), Reason::ResourceNotReady);
    assert_eq!(h.effective_state(), ComponentState::Progressing);

    let r: FetchResult<u8> = Err(not_found());
    assert_eq!(
        upstream("Model", &r, ok).errors[0].category,
        ErrorCategory::MissingUpstreamDependency
    );
    assert_eq!(
        downstream("Deployment", &r, ok).errors[0].category,
        ErrorCategory::MissingDownstreamDependency
    );

    let r: FetchResult<u8> = Ok(Some(1));
    let h = upstream("Model", &r, |_| {
        ComponentHealth::with_state("x", ComponentState::Pending, Reason::Pending, "waiting")
    });
    assert_eq!(h.component, "Model");
    assert_eq!(h.direction, Some(Direction::Upstream));
    assert_eq!(h.effective_state(), ComponentState::Pending);
}

#[test]
fn priorities_order_worst_first() {
    let mut all = [
        ComponentState::Ready,
        ComponentState::Failed,
        ComponentState::Pending,
        ComponentState::Progressing,
        ComponentState::NotAvailable,
        ComponentState::Degraded,
    ];
    all.sort_by_key(|s| s.priority());
    assert_eq!(
        all,
        [
            ComponentState::Failed,
            ComponentState::NotAvailable,
            ComponentState::Degraded,
            ComponentState::Pending,
            ComponentState::Progressing,
            ComponentState::Ready
        ]
    );
}
