//! The EPP Deployment.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, EnvVar, EnvVarSource, GRPCAction, ObjectFieldSelector,
    PodSpec, PodTemplateSpec, Probe, ResourceRequirements, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::EppInput;
use crate::inference_pool::GROUP;
use crate::meta::object_meta;
use crate::naming::Dns1035Label;
use crate::{pod, resources, security};

/// The gRPC health port.
pub const GRPC_HEALTH_PORT: i32 = 9003;
/// The metrics port.
pub const METRICS_PORT: i32 = 9090;
/// The pod-template annotation carrying the config hash.
pub const CONFIG_HASH_ANNOTATION: &str = "checksum/config";

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.to_owned(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
    }
}

fn grpc_probe(service: &str, initial: i32, period: i32) -> Probe {
    Probe {
        grpc: Some(GRPCAction {
            port: GRPC_HEALTH_PORT,
            service: Some(service.to_owned()),
        }),
        initial_delay_seconds: Some(initial),
        period_seconds: Some(period),
        ..Probe::default()
    }
}

fn default_resources() -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(resources::list(&[
            ("cpu", "4".to_owned()),
            ("memory", "8Gi".to_owned()),
        ])),
        limits: Some(resources::list(&[("memory", "16Gi".to_owned())])),
        claims: None,
    }
}

/// The EPP's OpenTelemetry service name.
pub const OTEL_SERVICE: &str = "gateway-api-inference-extension";

/// `NAMESPACE`, `POD_NAME`, and with tracing upstream's exporter env and resource attributes
/// (NOTES section c).
fn env(input: &EppInput) -> Vec<EnvVar> {
    let mut vars = vec![
        field_env("NAMESPACE", "metadata.namespace"),
        field_env("POD_NAME", "metadata.name"),
    ];
    if let Some(otel) = input.otel.as_ref().filter(|_| input.tracing) {
        vars.extend(otel.env(OTEL_SERVICE));
        vars.push(field_env(
            "OTEL_RESOURCE_ATTRIBUTES_NODE_NAME",
            "spec.nodeName",
        ));
        vars.push(field_env(
            "OTEL_RESOURCE_ATTRIBUTES_POD_NAME",
            "metadata.name",
        ));
        vars.push(crate::env::var(
            "OTEL_RESOURCE_ATTRIBUTES",
            "k8s.namespace.name=$(NAMESPACE),k8s.node.name=$(OTEL_RESOURCE_ATTRIBUTES_NODE_NAME),k8s.pod.name=$(OTEL_RESOURCE_ATTRIBUTES_POD_NAME)",
        ));
    }
    vars
}

/// The EPP's object names.
pub(super) struct Names<'a> {
    pub epp: &'a Dns1035Label,
    pub config_map: &'a str,
    pub pool: &'a str,
}

/// `selector` is `Selector(<epp>, "epp")`; the Deployment adds `inferencepool: <epp>`, as
/// otterscale's (the selector is immutable).
pub(super) fn deployment(
    input: &EppInput,
    names: &Names<'_>,
    selector: &BTreeMap<String, String>,
    object_labels: &BTreeMap<String, String>,
    config_hash: &str,
) -> Deployment {
    let parent = &input.parent;
    let name = names.epp;
    let ha = input.replicas > 1;
    let (file, _) = input.config.file();
    let mut selector = selector.clone();
    selector.insert("inferencepool".to_owned(), name.to_string());
    let mut args = vec![
        format!("--pool-name={}", names.pool),
        format!("--pool-namespace={}", parent.namespace),
        format!("--pool-group={GROUP}"),
        format!("--config-file=/config/{file}"),
        format!("--grpc-port={}", input.port),
        format!("--grpc-health-port={GRPC_HEALTH_PORT}"),
        format!("--metrics-port={METRICS_PORT}"),
        "--zap-encoder=json".to_owned(),
    ];
    if ha {
        args.push("--ha-enable-leader-election".to_owned());
    }
    args.push(format!("--tracing={}", input.tracing));
    if !input.metrics_auth {
        args.push("--metrics-endpoint-auth=false".to_owned());
    }
    args.extend(input.extra_flags.iter().map(|(k, v)| format!("--{k}={v}")));

    let (readiness, liveness) = if ha {
        ("readiness", "liveness")
    } else {
        ("inference-extension", "inference-extension")
    };
    let container = Container {
        name: "epp".to_owned(),
        image: Some(input.image.clone()),
        image_pull_policy: Some("IfNotPresent".to_owned()),
        args: Some(args),
        env: Some(env(input)),
        ports: Some(vec![
            pod::tcp_port("grpc-ext-proc", input.port),
            pod::tcp_port("grpc-health", GRPC_HEALTH_PORT),
            pod::tcp_port("http-metrics", METRICS_PORT),
        ]),
        readiness_probe: Some(grpc_probe(readiness, 0, 2)),
        liveness_probe: Some(grpc_probe(liveness, 5, 10)),
        resources: Some(input.resources.clone().unwrap_or_else(default_resources)),
        volume_mounts: Some(vec![pod::mount("epp-config", "/config", true)]),
        // The EPP keeps its self-signed certificate in memory.
        security_context: Some(security::container(true)),
        ..Container::default()
    };
    let spec = PodSpec {
        containers: vec![container],
        service_account_name: Some(name.to_string()),
        termination_grace_period_seconds: Some(130),
        security_context: Some(security::pod_for(input.pod_identity)),
        volumes: Some(vec![Volume {
            name: "epp-config".to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: names.config_map.to_owned(),
                optional: Some(true),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        }]),
        ..PodSpec::default()
    };
    Deployment {
        metadata: object_meta(
            name.as_str(),
            Some(parent.namespace.as_str()),
            object_labels.clone(),
            BTreeMap::new(),
        ),
        spec: Some(DeploymentSpec {
            replicas: Some(input.replicas),
            selector: LabelSelector {
                match_labels: Some(selector.clone()),
                match_expressions: None,
            },
            // The old leader must be gone before the new one can take the lease.
            strategy: Some(DeploymentStrategy {
                type_: Some("Recreate".to_owned()),
                rolling_update: None,
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(selector),
                    annotations: Some(BTreeMap::from([(
                        CONFIG_HASH_ANNOTATION.to_owned(),
                        config_hash.to_owned(),
                    )])),
                    ..ObjectMeta::default()
                }),
                spec: Some(spec),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}
