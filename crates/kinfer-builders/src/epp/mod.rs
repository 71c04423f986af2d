//! The Endpoint Picker (EPP) bundle of a ModelService.
//!
//! Contract (`../shared/reference/modelservice/NOTES.md` section c): a Deployment (args,
//! ports 9002 ext-proc / 9003 health / 9090 metrics, gRPC probes, leader election when
//! replicas > 1, a `checksum/config` pod annotation that changes exactly when the config does),
//! its Service, the plugins ConfigMap, ServiceAccount, Role and RoleBinding; with metrics
//! authentication a ClusterRole and ClusterRoleBinding and a token Secret; optionally a
//! ServiceMonitor and an Istio DestinationRule. Every object is named from `<parent>-epp`.

mod config;
mod deployment;
mod rbac;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    ConfigMap, ResourceRequirements, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kinfer_api::istio::DestinationRule;
use kinfer_api::monitoring::ServiceMonitor;
use serde::{Deserialize, Serialize};

pub use config::{DEFAULT_PLUGINS, EppConfig, PD_CONFIG, config_hash};
pub use deployment::{CONFIG_HASH_ANNOTATION, GRPC_HEALTH_PORT, METRICS_PORT};

use crate::error::Error;
use crate::meta::{Parent, object_meta};
use crate::naming::{self, Dns1035Label};
use crate::service::{self, Port, ServiceInput};

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
    /// The InferencePool it serves.
    pub pool: Dns1035Label,
    /// Metrics behind authentication (token Secret and cluster RBAC).
    #[serde(default)]
    pub metrics_auth: bool,
    /// OpenTelemetry tracing.
    #[serde(default)]
    pub tracing: bool,
    /// A ServiceMonitor for the metrics port.
    #[serde(default)]
    pub service_monitor: bool,
    /// An Istio DestinationRule (TLS to the self-signed EPP).
    #[serde(default)]
    pub istio: bool,
    /// Extra `--flag=value` arguments, appended sorted by flag.
    #[serde(default)]
    pub extra_flags: BTreeMap<String, String>,
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
    /// Metrics-auth ClusterRole (with `metrics_auth`).
    pub cluster_role: Option<ClusterRole>,
    /// Its binding.
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
    let name = parent.name.as_str();
    Ok(naming::child_name(&[name, "epp"], &[name], 63)?)
}

/// The bundle; see the module contract.
pub fn epp_bundle(input: &EppInput) -> Result<EppBundle, Error> {
    let parent = &input.parent;
    let ns = parent.namespace.as_str();
    let name = epp_name(parent)?;
    let pname = parent.name.as_str();
    let config_name = naming::child_name(&[pname, "epp", "config"], &[pname], 63)?;
    let labels = parent.labels(APP, "epp");

    let (file, text) = input.config.file();
    let data = BTreeMap::from([(file.to_owned(), text.to_owned())]);
    let hash = config_hash(&data);
    let config_map = ConfigMap {
        metadata: object_meta(
            config_name.as_str(),
            Some(ns),
            labels.all(),
            BTreeMap::new(),
        ),
        data: Some(data),
        ..ConfigMap::default()
    };
    let deployment = deployment::deployment(input, &name, &config_name, &labels, &hash);
    let service = service::service(&ServiceInput {
        parent: parent.clone(),
        app: APP.to_owned(),
        component: "epp".to_owned(),
        selector: labels.selector(),
        ports: vec![
            Port::same("grpc-ext-proc", input.port),
            Port::same("http-metrics", METRICS_PORT),
        ],
    })?;
    // The Service is named like the Deployment: both derive from `[parent, "epp"]`.
    debug_assert_eq!(service.metadata.name.as_deref(), Some(name.as_str()));

    let (cluster_role, cluster_role_binding, token_secret) = if input.metrics_auth {
        let cluster_name = naming::cluster_scoped_name(ns, &name)?;
        let secret_name = naming::child_name(&[pname, "epp", "metrics-token"], &[pname], 63)?;
        (
            Some(rbac::cluster_role(cluster_name.as_str(), labels.all())),
            Some(rbac::cluster_role_binding(
                cluster_name.as_str(),
                name.as_str(),
                ns,
                labels.all(),
            )),
            Some(rbac::token_secret(
                secret_name.as_str(),
                ns,
                name.as_str(),
                labels.all(),
            )),
        )
    } else {
        (None, None, None)
    };
    let service_monitor = input.service_monitor.then(|| {
        let secret = token_secret
            .as_ref()
            .and_then(|s| s.metadata.name.as_deref())
            .and_then(|n| Dns1035Label::new(n).ok());
        crate::monitoring::service_monitor(
            parent,
            APP,
            "epp",
            &name,
            labels.selector(),
            secret.as_ref(),
        )
    });
    Ok(EppBundle {
        service_account: rbac::service_account(name.as_str(), ns, labels.all()),
        config_map,
        deployment,
        service,
        role: rbac::role(name.as_str(), ns, labels.all(), input.replicas > 1),
        role_binding: rbac::role_binding(name.as_str(), ns, labels.all()),
        cluster_role,
        cluster_role_binding,
        token_secret,
        service_monitor,
        destination_rule: input
            .istio
            .then(|| crate::istio::epp_destination_rule(parent, APP, &name)),
    })
}
