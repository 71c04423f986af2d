//! The EPP Deployment.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStrategy};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource, GRPCAction,
    ObjectFieldSelector, PodSpec, PodTemplateSpec, Probe, ResourceRequirements, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::EppInput;
use crate::inference_pool::GROUP;
use crate::labels::StandardLabels;
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

fn port(name: &str, number: i32) -> ContainerPort {
    ContainerPort {
        name: Some(name.to_owned()),
        container_port: number,
        protocol: Some("TCP".to_owned()),
        ..ContainerPort::default()
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

pub(super) fn deployment(
    input: &EppInput,
    name: &Dns1035Label,
    config_map: &Dns1035Label,
    labels: &StandardLabels,
    config_hash: &str,
) -> Deployment {
    let parent = &input.parent;
    let ha = input.replicas > 1;
    let (file, _) = input.config.file();
    let mut args = vec![
        format!("--pool-name={}", input.pool),
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
        env: Some(vec![
            field_env("NAMESPACE", "metadata.namespace"),
            field_env("POD_NAME", "metadata.name"),
        ]),
        ports: Some(vec![
            port("grpc-ext-proc", input.port),
            port("grpc-health", GRPC_HEALTH_PORT),
            port("http-metrics", METRICS_PORT),
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
        security_context: Some(security::pod(None, None)),
        volumes: Some(vec![Volume {
            name: "epp-config".to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: config_map.to_string(),
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
            labels.all(),
            BTreeMap::new(),
        ),
        spec: Some(DeploymentSpec {
            replicas: Some(input.replicas),
            selector: LabelSelector {
                match_labels: Some(labels.selector()),
                match_expressions: None,
            },
            // The old leader must be gone before the new one can take the lease.
            strategy: Some(DeploymentStrategy {
                type_: Some("Recreate".to_owned()),
                rolling_update: None,
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.all()),
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
