//! Optional CRDs: a missing one degrades only its component.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Harness, condition, has, minimal};
use kube::api::Api;
use modelservice_operator::{OperatorConfig, OptionalCrds};

#[tokio::test]
async fn missing_prometheus_operator_crds_degrade_only_monitoring() {
    let crds = OptionalCrds {
        monitoring: false,
        ..OptionalCrds::all()
    };
    let h = Harness::start_with(OperatorConfig::default(), crds).await;
    h.create(&minimal("no-prom", "default")).await;
    let ms = h
        .wait_ms(
            "default",
            "no-prom",
            "monitoring degraded, rest available",
            |ms| {
                has(ms, "MonitoringReady", "False")
                    && has(ms, "DecodeAvailable", "True")
                    && has(ms, "EndpointPickerAvailable", "True")
                    && has(ms, "InferencePoolAccepted", "True")
                    && has(ms, "HTTPRouteAccepted", "True")
            },
        )
        .await;
    let c = condition(&ms, "MonitoringReady").unwrap();
    assert_eq!(c.reason, "CRDNotInstalled");
    assert!(
        c.message.contains("podmonitors.monitoring.coreos.com"),
        "{}",
        c.message
    );
    assert!(has(&ms, "DestinationRuleReady", "True"));
    // Installing the CRDs later is noticed: the monitors appear and the service becomes Ready.
    common::install(
        &h.cluster,
        OptionalCrds {
            monitoring: true,
            ..OptionalCrds::default()
        },
    );
    common::wait(
        Api::<kinfer_api::monitoring::PodMonitor>::namespaced(h.client.clone(), "default"),
        "no-prom-decode",
        "PodMonitor created",
        |o: Option<&_>| o.is_some(),
    )
    .await;
    h.wait_ready("default", "no-prom").await;
    assert!(
        h.get::<kinfer_api::monitoring::ServiceMonitor>("default", "no-prom-epp")
            .await
            .is_some()
    );
}
