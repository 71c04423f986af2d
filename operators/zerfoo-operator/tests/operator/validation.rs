//! Upstream's 13 validation cases (`TestCRDSpec_Validation`: 10 invalid, 3 valid), each checked three ways: `Validate`
//! reports it with its field path; the API server either rejects it (schema or CEL) or the
//! operator reports it as `Failed` with `ConfigValid=False` naming the path and a Warning event;
//! and an invalid service gets no children.

use k8s_openapi::api::events::v1::Event;
use kinfer_api::validation::Validate;
use kinfer_api::zerfoo::{CanarySpec, ZerfooInferenceServiceSpec};
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use crate::common::{NS, condition, env, valid_spec};

type Modify = fn(&mut ZerfooInferenceServiceSpec);

fn health(s: &mut ZerfooInferenceServiceSpec) -> &mut kinfer_api::zerfoo::HealthCheckSpec {
    s.health_check.as_mut().unwrap()
}

/// (name, modification, the field path of the violation or None when valid).
fn cases() -> Vec<(&'static str, Modify, Option<&'static str>)> {
    vec![
        ("valid-spec", |_| {}, None),
        (
            "empty-model",
            |s| s.model_ref = String::new(),
            Some("spec.modelRef"),
        ),
        ("zero-replicas", |s| s.replicas = 0, Some("spec.replicas")),
        (
            "negative-replicas",
            |s| s.replicas = -1,
            Some("spec.replicas"),
        ),
        (
            "min-over-max",
            |s| {
                s.min_replicas = Some(10);
                s.max_replicas = Some(5);
            },
            Some("spec.minReplicas"),
        ),
        (
            "canary-empty-model",
            |s| {
                s.canary = Some(CanarySpec {
                    model_ref: String::new(),
                    weight: 10,
                });
            },
            Some("spec.canary.modelRef"),
        ),
        (
            "canary-over-100",
            |s| {
                s.canary = Some(CanarySpec {
                    model_ref: "m2".into(),
                    weight: 101,
                });
            },
            Some("spec.canary.weight"),
        ),
        (
            "canary-negative",
            |s| {
                s.canary = Some(CanarySpec {
                    model_ref: "m2".into(),
                    weight: -1,
                });
            },
            Some("spec.canary.weight"),
        ),
        (
            "empty-health-path",
            |s| health(s).path = String::new(),
            Some("spec.healthCheck.path"),
        ),
        (
            "zero-interval",
            |s| health(s).interval = "0s".into(),
            Some("spec.healthCheck.interval"),
        ),
        (
            "zero-timeout",
            |s| health(s).timeout = "0s".into(),
            Some("spec.healthCheck.timeout"),
        ),
        (
            "valid-canary",
            |s| {
                s.canary = Some(CanarySpec {
                    model_ref: "m2".into(),
                    weight: 50,
                });
            },
            None,
        ),
        (
            "valid-autoscaling",
            |s| {
                s.min_replicas = Some(2);
                s.max_replicas = Some(10);
            },
            None,
        ),
    ]
}

#[test]
fn validate_reports_each_case_with_its_field_path() {
    let cases = cases();
    assert_eq!(cases.len(), 13);
    assert_eq!(cases.iter().filter(|c| c.2.is_some()).count(), 10);
    for (name, modify, path) in cases {
        let mut spec = valid_spec();
        modify(&mut spec);
        match (spec.validate(), path) {
            (Ok(()), None) => {}
            (Err(errors), Some(path)) => assert!(
                errors.iter().any(|e| e.path == path),
                "{name}: {errors} does not name {path}"
            ),
            (result, _) => panic!("{name}: unexpected {result:?}"),
        }
    }
}

#[tokio::test]
async fn invalid_services_fail_with_field_paths_and_get_no_children() {
    let env = env().await;
    let events: Api<Event> = Api::namespaced(env.client.clone(), NS);
    let (mut by_server, mut by_operator) = (0, 0);
    for (name, modify, path) in cases() {
        let mut spec = valid_spec();
        modify(&mut spec);
        let created = env.create(name, spec).await;
        let Some(path) = path else {
            created.unwrap();
            let report = env.converge(name).await;
            assert!(report.errors.is_empty(), "{name}: {:?}", report.errors);
            continue;
        };
        match created {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{name}");
                by_server += 1;
                continue;
            }
            Err(e) => panic!("{name}: {e}"),
            Ok(_) => by_operator += 1,
        }
        env.reconcile(name).await;
        let zis = env.get(name).await;
        let status = zis.status.clone().expect("status");
        assert!(!status.ready, "{name}");
        let config_valid = condition(&zis, "ConfigValid").expect("ConfigValid");
        assert_eq!(config_valid.status, "False", "{name}");
        assert_eq!(config_valid.reason, "InvalidSpec", "{name}");
        assert!(
            config_valid.message.contains(path),
            "{name}: {}",
            config_valid.message
        );
        assert!(status.message.unwrap().contains(path), "{name}");
        let warned = events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                    && e.type_.as_deref() == Some("Warning")
                    && e.note.as_deref().is_some_and(|n| n.contains(path))
            });
        assert!(warned, "{name}: no Warning event naming {path}");
    }
    // Only the valid services have children.
    let owners: std::collections::BTreeSet<String> = env
        .deployments
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|d| d.labels()["app.kubernetes.io/instance"].clone())
        .collect();
    assert_eq!(
        owners.into_iter().collect::<Vec<_>>(),
        ["valid-autoscaling", "valid-canary", "valid-spec"]
    );
    assert_eq!(by_server + by_operator, 10);
    assert!(by_operator > 0, "the operator path must be exercised");
}
