//! The Endpoint Picker (EPP) bundle of a ModelService.
//!
//! Contract (`../shared/reference/modelservice/NOTES.md` section c): a Deployment (args,
//! ports 9002 ext-proc / 9003 health / 9090 metrics, gRPC probes, leader election when
//! replicas > 1, a `checksum/config` pod annotation that changes exactly when the config does),
//! its Service, the plugins ConfigMap, ServiceAccount, Role and RoleBinding; with leader
//! election a RoleBinding `<epp>-leader-election` of the shipped leader-election ClusterRole;
//! with metrics authentication a ClusterRoleBinding of the shipped metrics ClusterRole and a
//! token Secret (not for the GKE provider, which scrapes with its own identity); optionally a
//! ServiceMonitor (with the token as bearer authorization) and an Istio DestinationRule; with
//! tracing, the OpenTelemetry exporter env. No ClusterRole is built: the two the EPP is bound
//! to ship with the install ([`METRICS_AUTH_CLUSTER_ROLE`], [`LEADER_ELECTION_CLUSTER_ROLE`]).
//! Names and labels are otterscale's ([`naming::modelservice`], [`labels::otterscale`]):
//! `<epp>` = `<ms>-epp`, `<epp>-config`, `<epp>-sa-metrics-reader-secret`, ClusterRoleBinding
//! `<namespace>-<epp>`; labels `Selector(<epp>, "epp")`, plus the parent labels and annotation
//! on the ClusterRoleBinding; the Deployment selects those plus `inferencepool: <epp>`; the
//! EPP serves the pool `<ms>`. A custom config's file name must be a valid ConfigMap key that
//! is not a path.

mod config;
mod deployment;
mod rbac;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    ConfigMap, ResourceRequirements, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kinfer_api::istio::DestinationRule;
use kinfer_api::monitoring::ServiceMonitor;
use serde::{Deserialize, Serialize};

pub use config::{DEFAULT_PLUGINS, EppConfig, PD_CONFIG, config_hash};
pub use deployment::{CONFIG_HASH_ANNOTATION, GRPC_HEALTH_PORT, METRICS_PORT, OTEL_SERVICE};
pub use rbac::{
    LEADER_ELECTION_CLUSTER_ROLE, METRICS_AUTH_CLUSTER_ROLE, leader_election_rules,
    metrics_auth_rules,
};

use crate::error::Error;
use crate::labels;
use crate::meta::{Parent, object_meta};
use crate::monitoring::Otel;
use crate::naming::{self, Dns1035Label};
use crate::service::{self, Port};

/// `app.kubernetes.io/name` of the EPP objects.
pub const APP: &str = "epp";
/// The default ext-proc port.
pub const DEFAULT_PORT: i32 = 9002;

/// A resolved endpoint picker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EppInput {
    /// The ModelService.
    pub parent: Parent,
    /// EPP image.
    pub image: String,
    /// Replicas; more than one turns on leader election.
    pub replicas: i32,
    /// ext-proc port.
    pub port: i32,
    /// Resources; requests CPU 4 / memory 8Gi and limit memory 16Gi when absent.
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    /// Plugins configuration.
    pub config: EppConfig,
    /// Metrics behind authentication (token Secret and cluster RBAC).
    #[serde(default)]
    pub metrics_auth: bool,
    /// OpenTelemetry tracing (`--tracing`).
    #[serde(default)]
    pub tracing: bool,
    /// The trace exporter env (service `gateway-api-inference-extension`, plus the pod's
    /// resource attributes), written only with `tracing`.
    #[serde(default)]
    pub otel: Option<Otel>,
    /// The GKE provider: Prometheus scrapes with GKE's own identity, so no token Secret and no
    /// ServiceMonitor authorization (upstream's behaviour).
    #[serde(default)]
    pub gke: bool,
    /// A ServiceMonitor for the metrics port.
    #[serde(default)]
    pub service_monitor: bool,
    /// An Istio DestinationRule (TLS to the self-signed EPP).
    #[serde(default)]
    pub istio: bool,
    /// Extra `--flag=value` arguments, appended sorted by flag.
    #[serde(default)]
    pub extra_flags: BTreeMap<String, String>,
    /// Who the pod runs as; [`crate::security::SERVING_IDENTITY`] when absent, the image's
    /// (or the platform's) user when `null`.
    #[serde(default = "crate::security::serving_identity")]
    pub pod_identity: Option<crate::security::PodIdentity>,
}

/// Everything the EPP needs.
#[derive(Debug, Clone, PartialEq)]
pub struct EppBundle {
    /// ServiceAccount.
    pub service_account: ServiceAccount,
    /// Plugins ConfigMap.
    pub config_map: ConfigMap,
    /// Deployment.
    pub deployment: Deployment,
    /// Service.
    pub service: Service,
    /// Role.
    pub role: Role,
    /// RoleBinding.
    pub role_binding: RoleBinding,
    /// The binding of [`LEADER_ELECTION_CLUSTER_ROLE`] (replicas > 1).
    pub leader_election_binding: Option<RoleBinding>,
    /// The binding of [`METRICS_AUTH_CLUSTER_ROLE`] (with `metrics_auth`).
    pub cluster_role_binding: Option<ClusterRoleBinding>,
    /// Token for Prometheus (with `metrics_auth`).
    pub token_secret: Option<Secret>,
    /// ServiceMonitor (with `service_monitor`).
    pub service_monitor: Option<ServiceMonitor>,
    /// DestinationRule (with `istio`).
    pub destination_rule: Option<DestinationRule>,
}

/// The EPP's name (Deployment, Service, ServiceAccount, Role, RoleBinding).
pub fn epp_name(parent: &Parent) -> Result<Dns1035Label, Error> {
    Ok(naming::modelservice::epp_name(parent.name.as_str())?)
}

/// The EPP's labels: otterscale's `Selector(<epp>, "epp")`.
pub fn epp_selector(epp: &Dns1035Label) -> BTreeMap<String, String> {
    labels::otterscale::selector(epp.as_str(), "epp")
}

/// The bundle; see the module contract.
pub fn epp_bundle(input: &EppInput) -> Result<EppBundle, Error> {
    let parent = &input.parent;
    let ns = parent.namespace.as_str();
    let name = epp_name(parent)?;
    input.config.validate()?;
    let config_name = naming::modelservice::epp_config_name(&name)?;
    let selector = epp_selector(&name);
    let object_labels = labels::otterscale::object(name.as_str(), "epp", &parent.managed_by);
    let pool = crate::inference_pool::pool_name(parent)?;

    let (file, text) = input.config.file();
    let data = BTreeMap::from([(file.to_owned(), text.to_owned())]);
    let hash = config_hash(&data);
    let config_map = ConfigMap {
        metadata: object_meta(
            config_name.as_str(),
            Some(ns),
            object_labels.clone(),
            BTreeMap::new(),
        ),
        data: Some(data),
        ..ConfigMap::default()
    };
    let deployment = deployment::deployment(
        input,
        &deployment::Names {
            epp: &name,
            config_map: config_name.as_str(),
            pool: pool.as_str(),
        },
        &selector,
        &object_labels,
        &hash,
    );
    let service = service::service_named(
        name.as_str(),
        parent.namespace.as_str(),
        object_labels.clone(),
        selector.clone(),
        &[
            Port::same("grpc-ext-proc", input.port),
            Port::same("http-metrics", METRICS_PORT),
        ],
    );

    let (cluster_role_binding, token_secret) = if input.metrics_auth {
        let cluster_name = naming::modelservice::epp_cluster_rbac_name(ns, &name)?;
        let secret_name = naming::modelservice::epp_token_secret_name(&name)?;
        let mut cluster_labels = object_labels.clone();
        cluster_labels.extend(labels::parent_labels(ns, parent.name.as_str()));
        let cluster_annotations = labels::parent_annotations(ns, parent.name.as_str());
        (
            Some(rbac::cluster_role_binding(
                cluster_name.as_str(),
                name.as_str(),
                ns,
                cluster_labels,
                cluster_annotations,
            )),
            (!input.gke).then(|| {
                rbac::token_secret(
                    secret_name.as_str(),
                    ns,
                    name.as_str(),
                    object_labels.clone(),
                )
            }),
        )
    } else {
        (None, None)
    };
    let leader_election_binding = if input.replicas > 1 {
        let binding = naming::modelservice::epp_leader_election_binding_name(&name)?;
        Some(rbac::leader_election_binding(
            binding.as_str(),
            name.as_str(),
            ns,
            object_labels.clone(),
        ))
    } else {
        None
    };
    let service_monitor = input.service_monitor.then(|| {
        let secret = token_secret
            .as_ref()
            .and_then(|s| s.metadata.name.as_deref());
        crate::monitoring::service_monitor(
            parent,
            &name,
            object_labels.clone(),
            selector.clone(),
            secret,
        )
    });
    Ok(EppBundle {
        service_account: rbac::service_account(name.as_str(), ns, object_labels.clone()),
        config_map,
        deployment,
        service,
        role: rbac::role(name.as_str(), ns, object_labels.clone()),
        role_binding: rbac::role_binding(name.as_str(), ns, object_labels.clone()),
        leader_election_binding,
        cluster_role_binding,
        token_secret,
        service_monitor,
        destination_rule: input
            .istio
            .then(|| crate::istio::epp_destination_rule(parent, &name, object_labels.clone())),
    })
}
