//! Resolve: a valid ModelService and the operator configuration to the builders' inputs.
//!
//! Contract: pure (no client, no clock). Every default the operator supplies is applied here
//! (images from flags, the default Gateway, the EPP's synthetic spec when `spec.inferencePool`
//! is unset, monitoring on unless explicitly disabled), so the builders never see the raw spec
//! (STYLE.md, Adopt 2). Which optional CRDs exist is an input: a component whose CRD is missing
//! is resolved as absent.

use k8s_openapi::api::core::v1::EnvVar;
use kinfer_api::inference_pool::FailureMode as PoolFailureMode;
use kinfer_api::modelservice::{FailureMode, ModelService, PodMonitorSpec, RoleSpec, Validate};
use kinfer_builders::Parent;
use kinfer_builders::deployment::{
    Engine, ModelArtifact, ModelDeploymentInput, Parallelism, Role, RoutingProxy,
};
use kinfer_builders::epp::{DEFAULT_PORT, EppConfig, EppInput};
use kinfer_builders::gateway::{GatewayRef, PoolRouteInput, Timeouts};
use kinfer_builders::inference_pool::PoolInput;
use kinfer_builders::monitoring::ScrapeTarget;
use kinfer_builders::naming::{Dns1123Label, Dns1123Subdomain};
use kube::ResourceExt;

use super::{EPP_FLAGS_ANNOTATION, MANAGER, ResolveError};
use crate::config::{self, ENGINE_HEALTH_PATH, OperatorConfig, Provider};
use crate::optional_crds::OptionalCrds;

/// Everything the builders need for one ModelService.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The parent of every child.
    pub parent: Parent,
    /// The decode Deployment.
    pub decode: ModelDeploymentInput,
    /// The prefill Deployment (`spec.prefill`).
    pub prefill: Option<ModelDeploymentInput>,
    /// The Endpoint Picker bundle.
    pub epp: EppInput,
    /// The InferencePool (`None` when its CRD is missing).
    pub pool: Option<PoolInput>,
    /// The HTTPRoute (`None` without a route or without the Gateway API CRDs).
    pub route: Option<PoolRouteInput>,
    /// A route is wanted (from the spec or the default Gateway), whether or not it can be built.
    pub route_wanted: bool,
    /// The PodMonitor endpoint when monitoring is wanted (whether or not its CRDs exist).
    pub monitoring: Option<ScrapeTarget>,
    /// The operator's provider.
    pub provider: Provider,
    /// The optional CRDs this was resolved against.
    pub crds: OptionalCrds,
}

/// Resolves `ms` (already validated) against `config` and `crds`.
pub fn resolve(
    ms: &ModelService,
    config: &OperatorConfig,
    crds: OptionalCrds,
) -> Result<Resolved, ResolveError> {
    let namespace = ms.namespace().unwrap_or_default();
    let parent = Parent {
        name: Dns1123Subdomain::new(ms.name_any()).map_err(ResolveError::Name)?,
        namespace: Dns1123Label::new(namespace.clone()).map_err(ResolveError::Name)?,
        managed_by: MANAGER.to_owned(),
    };
    let spec = &ms.spec;
    let decode = role_input(ms, config, &parent, Role::Decode, &spec.decode)?;
    let prefill = spec
        .prefill
        .as_ref()
        .map(|p| role_input(ms, config, &parent, Role::Prefill, p))
        .transpose()?;

    let monitoring = match spec
        .monitoring
        .as_ref()
        .and_then(|m| m.pod_monitor.as_ref())
    {
        None => Some(scrape_target(&PodMonitorSpec::default())),
        Some(pm) if pm.enabled => Some(scrape_target(pm)),
        Some(_) => None,
    };
    let picker = spec.inference_pool.as_ref().map(|p| &p.endpoint_picker);
    let config_file = if spec.prefill.is_some() {
        config
            .epp_pd_plugins
            .as_ref()
            .map_or(EppConfig::PrefillDecode, |text| EppConfig::Custom {
                file_name: "pd-config.yaml".to_owned(),
                text: text.clone(),
            })
    } else {
        config
            .epp_plugins
            .as_ref()
            .map_or(EppConfig::Default, |text| EppConfig::Custom {
                file_name: "default-plugins.yaml".to_owned(),
                text: text.clone(),
            })
    };
    let mut extra_flags = config.epp_flags.clone();
    if let Some(text) = ms.annotations().get(EPP_FLAGS_ANNOTATION) {
        extra_flags.extend(config::parse_flags(text).map_err(ResolveError::EppFlags)?);
    }
    let epp_port = picker.map_or(DEFAULT_PORT, |p| p.port);
    let epp = EppInput {
        pod_identity: config.pod_identity,
        parent: parent.clone(),
        image: picker
            .and_then(|p| p.image.clone())
            .filter(|i| !i.is_empty())
            .unwrap_or_else(|| config.epp_image.clone()),
        replicas: picker.map_or(1, |p| p.replicas),
        port: epp_port,
        resources: picker.and_then(|p| p.resources.clone()),
        config: config_file,
        metrics_auth: config.metrics_endpoint_auth,
        tracing: config.tracing.enabled,
        otel: config.tracing.otel(),
        gke: config.provider == Provider::Gke,
        service_monitor: monitoring.is_some() && crds.monitoring,
        istio: config.provider == Provider::Istio && crds.istio,
        extra_flags,
    };
    let pool = crds.inference_pool.then(|| PoolInput {
        parent: parent.clone(),
        target_port: spec.engine.port,
        endpoint_picker_port: epp_port,
        failure_mode: picker.map(|p| match p.failure_mode {
            FailureMode::FailOpen => PoolFailureMode::FailOpen,
            FailureMode::FailClose => PoolFailureMode::FailClose,
        }),
    });
    let gateway = match &spec.http_route {
        Some(route) => Some((
            GatewayRef {
                name: route.gateway_ref.name.clone(),
                namespace: route
                    .gateway_ref
                    .namespace
                    .clone()
                    .filter(|n| !n.is_empty() && *n != namespace),
                section_name: None,
            },
            route.hostnames.clone(),
        )),
        None if !config.default_gateway_name.is_empty() => Some((
            GatewayRef {
                name: config.default_gateway_name.clone(),
                namespace: Some(config.default_gateway_namespace.clone())
                    .filter(|n| !n.is_empty() && *n != namespace),
                section_name: None,
            },
            Vec::new(),
        )),
        None => None,
    };
    let route_wanted = gateway.is_some();
    let route = gateway
        .filter(|_| crds.gateway_api)
        .map(|(gateway, hostnames)| PoolRouteInput {
            parent: parent.clone(),
            model_name: spec.model.name.clone(),
            header: None,
            gateway,
            hostnames,
            timeouts: Timeouts {
                request: Some(config.request_timeout.clone()).filter(|t| !t.is_empty()),
                backend_request: None,
            },
        });
    Ok(Resolved {
        parent,
        decode,
        prefill,
        epp,
        pool,
        route,
        route_wanted,
        monitoring,
        provider: config.provider,
        crds,
    })
}

fn role_input(
    ms: &ModelService,
    config: &OperatorConfig,
    parent: &Parent,
    role: Role,
    spec_role: &RoleSpec,
) -> Result<ModelDeploymentInput, ResolveError> {
    let spec = &ms.spec;
    let p = spec_role.effective_parallelism();
    // Role-level overrides over the shared engine: the role's args after the shared ones (vLLM
    // keeps the last value), the role's env after the shared env (the builder merges by name,
    // the later wins).
    let env = spec
        .engine
        .env
        .iter()
        .chain(spec_role.engine_env())
        .map(|v| {
            serde_json::to_value(v)
                .and_then(serde_json::from_value::<EnvVar>)
                .map_err(|e| ResolveError::Env {
                    name: v.name.clone(),
                    reason: e.to_string(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ModelDeploymentInput {
        pod_identity: config.pod_identity,
        parent: parent.clone(),
        role,
        model: ModelArtifact {
            name: spec.model.name.clone(),
            image: spec.model.image.clone(),
            mount_path: spec.model.effective_mount_path().to_owned(),
            image_pull_secrets: spec
                .model
                .image_pull_secrets
                .iter()
                .map(|s| s.name.clone())
                .collect(),
            size_limit: config.model_size_limit.clone(),
            plain_http: config.kit_plain_http,
        },
        kit_image: config.kit_image.clone(),
        engine: Engine {
            image: spec
                .engine
                .image
                .clone()
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| config.engine_image.clone()),
            // "" is unset (the API server would default it, and every apply would then
            // differ from what is stored).
            image_pull_policy: spec
                .engine
                .image_pull_policy
                .clone()
                .filter(|p| !p.is_empty()),
            args: spec
                .engine
                .args
                .iter()
                .chain(spec_role.engine_args())
                .cloned()
                .collect(),
            env,
            port: spec.engine.port,
            health_path: ENGINE_HEALTH_PATH.to_owned(),
        },
        accelerator: spec.accelerator.r#type,
        accelerator_resource_name: None,
        parallelism: Parallelism {
            tensor: p.tensor,
            data: p.data,
            data_local: p.data_local,
        },
        replicas: Some(spec_role.replicas),
        resources: spec_role.resources.clone(),
        node_selector: spec_role.node_selector.clone(),
        tolerations: spec_role.tolerations.clone(),
        annotations: spec_role.annotations.clone(),
        routing_proxy: spec.routing_proxy.as_ref().map(|rp| RoutingProxy {
            image: rp
                .image
                .clone()
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| config.routing_proxy_image.clone()),
            connector: rp.connector.clone(),
            target_port: rp.target_port,
            secure_proxy: rp.secure_proxy,
            zap_encoder: rp.zap_encoder.clone(),
            zap_log_level: rp.zap_log_level.clone(),
            prefiller_use_tls: rp.prefiller_use_tls,
            cert_path: rp.cert_path.clone(),
        }),
        shm_size: None,
        tracing: config.tracing.otel(),
    })
}

/// The PodMonitor endpoint of `spec.monitoring.podMonitor`, each empty field falling back to
/// the CRD default (`http`, `/metrics`, `30s`).
fn scrape_target(pm: &PodMonitorSpec) -> ScrapeTarget {
    let defaults = ScrapeTarget::default();
    let pick = |v: &str, d: String| if v.is_empty() { d } else { v.to_owned() };
    ScrapeTarget {
        port_name: pick(&pm.port_name, defaults.port_name),
        path: pick(&pm.path, defaults.path),
        interval: pick(&pm.interval, defaults.interval),
    }
}

/// Whether `ms` has (or is to get) the Endpoint Picker's cluster-scoped metrics-auth RBAC, and
/// so needs the finalizer ([`crate::finalizer`]): metrics auth is on, a cluster RBAC name can
/// be derived, and the last reconcile did not find that name held by another ModelService (its
/// status says so: `MetricsAuthReady` False with reason
/// [`super::compose::CLUSTER_RBAC_CONFLICT`]). An invalid spec changes nothing: whatever
/// exists keeps serving, and the finalizer stays with it.
pub fn wants_cluster_rbac(config: &OperatorConfig, ms: &ModelService) -> bool {
    if !config.metrics_endpoint_auth {
        return false;
    }
    if ms.validate().is_err() {
        return crate::finalizer::has_finalizer(ms);
    }
    let conflict = ms.status.as_ref().is_some_and(|s| {
        s.conditions.iter().any(|c| {
            c.type_ == super::compose::METRICS_AUTH_CONDITION
                && c.reason == super::compose::CLUSTER_RBAC_CONFLICT
        })
    });
    super::fetch::cluster_rbac_name(ms).is_some() && !conflict
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_service(engine: &serde_json::Value, annotations: &serde_json::Value) -> ModelService {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "model.otterscale.io/v1alpha1",
            "kind": "ModelService",
            "metadata": {"name": "ms", "namespace": "team-a", "annotations": annotations},
            "spec": {
                "model": {"name": "m", "image": "registry.example.com/m:v1"},
                "engine": engine,
                "accelerator": {"type": "nvidia"},
                "decode": {"replicas": 1}
            }
        }))
        .unwrap()
    }

    /// `imagePullPolicy: ""` is unset: sent as "" the API server would default it, and every
    /// apply would differ from what is stored (found by the bad-input suite).
    #[test]
    fn an_empty_pull_policy_is_left_to_the_api_server() {
        let config = OperatorConfig::default();
        let crds = OptionalCrds::all();
        let empty = model_service(
            &serde_json::json!({"imagePullPolicy": ""}),
            &serde_json::json!({}),
        );
        let r = resolve(&empty, &config, crds).unwrap();
        assert_eq!(r.decode.engine.image_pull_policy, None);
        let set = model_service(
            &serde_json::json!({"imagePullPolicy": "Always"}),
            &serde_json::json!({}),
        );
        let r = resolve(&set, &config, crds).unwrap();
        assert_eq!(r.decode.engine.image_pull_policy.as_deref(), Some("Always"));
    }

    /// A malformed EPP flags annotation fails with the annotation's field path, as spec
    /// violations name theirs (the status message must say which field to fix).
    #[test]
    fn a_malformed_epp_flags_annotation_names_its_field_path() {
        let ms = model_service(
            &serde_json::json!({}),
            &serde_json::json!({EPP_FLAGS_ANNOTATION: "--v=2\nnovalue"}),
        );
        let e = resolve(&ms, &OperatorConfig::default(), OptionalCrds::all()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("metadata.annotations[model.otterscale.io/epp-flags]: "),
            "{e}"
        );
    }
}
