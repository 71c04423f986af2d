use std::path::Path;

use kinfer_api::istio::DestinationRule;
use kinfer_api::monitoring::ServiceMonitor;
use kinfer_builders::epp::{
    CONFIG_HASH_ANNOTATION, DEFAULT_PLUGINS, EppBundle, EppConfig, EppInput,
    LEADER_ELECTION_CLUSTER_ROLE, METRICS_AUTH_CLUSTER_ROLE, PD_CONFIG, epp_bundle,
    leader_election_rules,
};
use kinfer_crdcheck::shared_dir;
use serde_json::Value;

use crate::common::{assert_core_valid, assert_ours_valid, assert_upstream_valid, input};
use crate::snapshot;

fn bundle(name: &str) -> EppBundle {
    epp_bundle(&input::<EppInput>(name)).expect("builds")
}

fn check(b: &EppBundle) {
    assert_core_valid(&b.service_account);
    assert_core_valid(&b.config_map);
    assert_core_valid(&b.deployment);
    assert_core_valid(&b.service);
    assert_core_valid(&b.role);
    assert_core_valid(&b.role_binding);
    b.leader_election_binding.iter().for_each(assert_core_valid);
    b.cluster_role_binding.iter().for_each(assert_core_valid);
    b.token_secret.iter().for_each(assert_core_valid);
    if let Some(sm) = &b.service_monitor {
        assert_upstream_valid(
            sm,
            "prometheus-operator/monitoring.coreos.com_servicemonitors.yaml",
            "v1",
        );
        assert_ours_valid::<ServiceMonitor>(sm);
    }
    if let Some(dr) = &b.destination_rule {
        assert_upstream_valid(
            dr,
            "istio/networking.istio.io_destinationrules.yaml",
            "v1beta1",
        );
        assert_ours_valid::<DestinationRule>(dr);
    }
}

fn hash(b: &EppBundle) -> String {
    b.deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.annotations.as_ref())
        .expect("annotations")[CONFIG_HASH_ANNOTATION]
        .clone()
}

fn args(b: &EppBundle) -> Vec<String> {
    b.deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod")
        .containers[0]
        .args
        .clone()
        .expect("args")
}

#[test]
fn default_bundle_validates_and_snapshots() {
    let b = bundle("epp");
    check(&b);
    assert!(b.cluster_role_binding.is_some() && b.token_secret.is_some());
    let binding = b.cluster_role_binding.as_ref().expect("binding");
    assert_eq!(binding.metadata.name.as_deref(), Some("team-b-llama-epp"));
    // The shipped ClusterRole, never one per ModelService.
    assert_eq!(binding.role_ref.name, METRICS_AUTH_CLUSTER_ROLE);
    assert!(
        b.leader_election_binding.is_none(),
        "one replica elects no leader"
    );
    let pod = b
        .deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod");
    let sc = pod.security_context.as_ref().expect("pod security context");
    assert_eq!(
        (sc.run_as_user, sc.run_as_group, sc.fs_group),
        (Some(65532), Some(65532), Some(65532)),
        "an explicit non-root identity"
    );
    snapshot!("epp_deployment", &b.deployment);
    snapshot!("epp_service", &b.service);
    snapshot!("epp_config_map", &b.config_map);
    snapshot!(
        "epp_rbac",
        &(
            &b.service_account,
            &b.role,
            &b.role_binding,
            &b.cluster_role_binding,
            &b.token_secret
        )
    );
    snapshot!("epp_service_monitor", &b.service_monitor);
    snapshot!("epp_destination_rule", &b.destination_rule);
}

#[test]
fn pd_ha_bundle_validates_and_snapshots() {
    let b = bundle("epp-pd-ha");
    check(&b);
    assert!(
        b.cluster_role_binding.is_none() && b.token_secret.is_none() && b.service_monitor.is_none()
    );
    snapshot!("epp_pd_ha_deployment", &b.deployment);
}

#[test]
fn args_ports_and_probes_follow_the_reference() {
    let b = bundle("epp");
    assert_eq!(
        args(&b),
        [
            "--pool-name=llama",
            "--pool-namespace=team-b",
            "--pool-group=inference.networking.k8s.io",
            "--config-file=/config/default-plugins.yaml",
            "--grpc-port=9002",
            "--grpc-health-port=9003",
            "--metrics-port=9090",
            "--zap-encoder=json",
            "--tracing=false",
        ]
    );
    let json = serde_json::to_value(&b.deployment).expect("json");
    let c = &json["spec"]["template"]["spec"]["containers"][0];
    let ports: Vec<i64> = c["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["containerPort"].as_i64())
        .collect();
    assert_eq!(ports, [9002, 9003, 9090]);
    assert_eq!(
        c["readinessProbe"]["grpc"]["service"],
        "inference-extension"
    );
    assert_eq!(json["spec"]["strategy"]["type"], "Recreate");
}

#[test]
fn leader_election_when_replicas_exceed_one() {
    let b = bundle("epp-pd-ha");
    let a = args(&b);
    assert!(a.contains(&"--ha-enable-leader-election".to_owned()));
    assert!(a.contains(&"--config-file=/config/pd-config.yaml".to_owned()));
    assert!(a.contains(&"--metrics-endpoint-auth=false".to_owned()));
    assert_eq!(
        a[a.len() - 2..],
        [
            "--kv-cache-usage-percentage-metric=vllm:kv_cache_usage_perc",
            "--v=1"
        ]
    );
    // Leases and events come from the shipped ClusterRole, bound in the EPP's namespace: the
    // operator holds the `bind` verb on it, not leases of every namespace.
    let election = b.leader_election_binding.as_ref().expect("leader election");
    assert_eq!(
        election.metadata.name.as_deref(),
        Some("llama-epp-leader-election")
    );
    assert_eq!(
        (
            election.role_ref.kind.as_str(),
            election.role_ref.name.as_str()
        ),
        ("ClusterRole", LEADER_ELECTION_CLUSTER_ROLE)
    );
    let subject = &election.subjects.as_ref().expect("subjects")[0];
    assert_eq!(
        (subject.name.as_str(), subject.namespace.as_deref()),
        ("llama-epp", election.metadata.namespace.as_deref())
    );
    assert!(leader_election_rules().iter().any(|r| {
        r.resources
            .as_ref()
            .is_some_and(|x| x.contains(&"leases".to_owned()))
    }));
    assert_eq!(b.role.rules.as_ref().expect("rules").len(), 3);
    let json = serde_json::to_value(&b.deployment).expect("json");
    assert_eq!(
        json["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["grpc"]["service"],
        "readiness"
    );
    let single = bundle("epp");
    assert!(!args(&single).contains(&"--ha-enable-leader-election".to_owned()));
    assert_eq!(single.role.rules.as_ref().expect("rules").len(), 3);
}

#[test]
fn config_hash_changes_when_the_config_changes_and_only_then() {
    let base: EppInput = input("epp");
    let h = hash(&epp_bundle(&base).expect("builds"));
    let mut other = base.clone();
    other.replicas = 3;
    other.image = "other:tag".to_owned();
    other.metrics_auth = false;
    assert_eq!(
        hash(&epp_bundle(&other).expect("builds")),
        h,
        "non-config changes keep the hash"
    );
    other.config = EppConfig::PrefillDecode;
    let pd = hash(&epp_bundle(&other).expect("builds"));
    assert_ne!(pd, h);
    other.config = EppConfig::Custom {
        file_name: "pd-config.yaml".to_owned(),
        text: format!("{PD_CONFIG}# tuned\n"),
    };
    assert_ne!(hash(&epp_bundle(&other).expect("builds")), pd);
}

fn yaml(path: &Path) -> Value {
    kinfer_crdcheck::load_yaml_documents(path)
        .into_iter()
        .next()
        .expect("a document")
}

#[test]
fn plugin_configs_equal_the_reference() {
    let Some(shared) = shared_dir() else { return };
    let dir = shared.join("reference/modelservice/epp");
    for (file, ours) in [
        ("default-plugins.yaml", DEFAULT_PLUGINS),
        ("pd-config.yaml", PD_CONFIG),
    ] {
        let ours: Value = serde_saphyr::from_str(ours).expect("our config parses");
        assert_eq!(ours, yaml(&dir.join(file)), "{file}");
    }
}

#[test]
fn names_and_selectors_are_otterscales() {
    let b = bundle("epp");
    let json = serde_json::to_value(&b.deployment).expect("json");
    assert_eq!(json["metadata"]["name"], "llama-epp");
    assert_eq!(
        json["spec"]["selector"]["matchLabels"],
        serde_json::json!({
            "app.kubernetes.io/name": "llama-epp",
            "app.kubernetes.io/component": "epp",
            "app.kubernetes.io/part-of": "otterscale-system",
            "app.kubernetes.io/managed-by": "model-operator",
            "inferencepool": "llama-epp"
        })
    );
    let svc = serde_json::to_value(&b.service).expect("json");
    assert_eq!(
        svc["spec"]["selector"],
        serde_json::json!({
            "app.kubernetes.io/name": "llama-epp",
            "app.kubernetes.io/component": "epp",
            "app.kubernetes.io/part-of": "otterscale-system",
            "app.kubernetes.io/managed-by": "model-operator"
        })
    );
    assert_eq!(
        b.config_map.metadata.name.as_deref(),
        Some("llama-epp-config")
    );
    assert_eq!(
        b.token_secret
            .as_ref()
            .and_then(|s| s.metadata.name.as_deref()),
        Some("llama-epp-sa-metrics-reader-secret")
    );
    assert_eq!(
        b.cluster_role_binding
            .as_ref()
            .and_then(|s| s.metadata.name.as_deref()),
        Some("team-b-llama-epp")
    );
    assert!(args(&b).contains(&"--pool-name=llama".to_owned()));
}

#[test]
fn custom_config_file_names_must_be_plain_configmap_keys() {
    let mut i: EppInput = input("epp");
    for bad in ["../etc/passwd", "a/b", "", ".."] {
        i.config = EppConfig::Custom {
            file_name: bad.to_owned(),
            text: "x".to_owned(),
        };
        assert!(epp_bundle(&i).is_err(), "{bad}");
    }
    i.config = EppConfig::Custom {
        file_name: "tuned-config.yaml".to_owned(),
        text: "x".to_owned(),
    };
    assert!(epp_bundle(&i).is_ok());
}

fn epp_env(b: &EppBundle) -> Vec<String> {
    b.deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|p| {
            p.containers[0]
                .env
                .iter()
                .flatten()
                .map(|v| v.name.clone())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn tracing_adds_upstreams_otel_env_only_when_on() {
    let mut i: EppInput = input("epp");
    i.otel = Some(kinfer_builders::monitoring::Otel {
        endpoint: "http://otel:4317".into(),
        sampler: "parentbased_traceidratio".into(),
        sampler_arg: "0.01".into(),
    });
    i.tracing = false;
    assert_eq!(
        epp_env(&epp_bundle(&i).expect("builds")),
        ["NAMESPACE", "POD_NAME"]
    );
    i.tracing = true;
    let b = epp_bundle(&i).expect("builds");
    check(&b);
    assert_eq!(
        epp_env(&b),
        [
            "NAMESPACE",
            "POD_NAME",
            "OTEL_SERVICE_NAME",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_TRACES_EXPORTER",
            "OTEL_TRACES_SAMPLER",
            "OTEL_TRACES_SAMPLER_ARG",
            "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME",
            "OTEL_RESOURCE_ATTRIBUTES_POD_NAME",
            "OTEL_RESOURCE_ATTRIBUTES",
        ]
    );
    let env = b
        .deployment
        .spec
        .and_then(|s| s.template.spec)
        .expect("pod")
        .containers[0]
        .env
        .clone()
        .expect("env");
    assert_eq!(
        env[2].value.as_deref(),
        Some(kinfer_builders::epp::OTEL_SERVICE)
    );
}

#[test]
fn the_gke_provider_gets_no_token_secret_and_no_scrape_authorization() {
    let mut i: EppInput = input("epp");
    let b = epp_bundle(&i).expect("builds");
    assert!(b.token_secret.is_some());
    let auth = |b: &EppBundle| {
        b.service_monitor.as_ref().expect("monitor").spec.endpoints[0]
            .authorization
            .is_some()
    };
    assert!(auth(&b));
    i.gke = true;
    let b = epp_bundle(&i).expect("builds");
    check(&b);
    assert!(b.token_secret.is_none());
    assert!(!auth(&b));
    // Metrics auth itself (cluster RBAC) is independent of the provider.
    assert!(b.cluster_role_binding.is_some());
}
