//! The Istio DestinationRule for the endpoint picker's Service.
//!
//! Contract: host `<epp>.<namespace>.svc.cluster.local`, TLS `SIMPLE` with verification
//! skipped, because the EPP serves a self-signed certificate (`--secure-serving=true`); named
//! like the EPP Service.

use std::collections::BTreeMap;

use kinfer_api::istio::{
    ClientTlsSettings, DestinationRule, DestinationRuleSpec, TlsMode, TrafficPolicy,
};

use crate::meta::{Parent, object_meta};
use crate::naming::Dns1035Label;

/// The DestinationRule for `service` of `parent`, labelled `labels`.
pub fn epp_destination_rule(
    parent: &Parent,
    service: &Dns1035Label,
    labels: BTreeMap<String, String>,
) -> DestinationRule {
    let namespace = parent.namespace.as_str();
    DestinationRule {
        metadata: object_meta(service.as_str(), Some(namespace), labels, BTreeMap::new()),
        spec: DestinationRuleSpec {
            host: format!("{service}.{namespace}.svc.cluster.local"),
            traffic_policy: Some(TrafficPolicy {
                tls: Some(ClientTlsSettings {
                    mode: Some(TlsMode::Simple),
                    insecure_skip_verify: Some(true),
                }),
            }),
        },
    }
}
