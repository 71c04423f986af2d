//! ModelService rules beyond the schema, each reported with its field path.
//!
//! Upstream validates nothing beyond its CRD (no CEL, no webhook), so every manifest its CRD
//! admits is one upstream accepts. [`Validate::validate`] therefore rejects only what cannot
//! work: objects the operator would build and the API server rejects, and pods that cannot start
//! or serve. Its rules are those NOTES.md names as missing validation, plus those failure
//! cases; each rule's source is given where it is checked. The schema's own bounds are checked
//! again, so an object that bypassed the API server (a unit test, a file on disk) gets the same
//! answer. [`Validate::warnings`] reports what upstream accepts and runs but is probably not
//! what the user meant, with the same field paths.
//!
//! Deliberately *not* errors:
//!
//! - `httpRoute` without `inferencePool`. The CRD text says the route "requires InferencePool to
//!   be set", but the operator creates the InferencePool whether or not `spec.inferencePool` is
//!   set, so the combination works upstream and is accepted here.
//! - `model.mountPath: ""`: upstream falls back to `/models` (NOTES.md section a,
//!   Model.MountPath).
//! - Duplicate names in `engine.env`, including the generated `TP_SIZE`, `DP_SIZE` and
//!   `DP_SIZE_LOCAL`: Kubernetes accepts them and keeps the last value, which is upstream's
//!   override path (NOTES.md section a, Engine.Env). They are warnings.
//! - `valueFrom.fileKeyRef`: it is in the upstream CRD; whether the target cluster supports it
//!   (Kubernetes 1.34+, feature gate `EnvFiles`) is the operator's decision, not the spec's.
//! - `podMonitor.interval` while `podMonitor.enabled` is false: no PodMonitor is built.
//! - `data` above a `dataLocal` of 1 where vLLM may run every rank in the pod (CPU; TPUs, whose
//!   chip count need not be `tensor`), and any `data`/`dataLocal` combination when `engine.args` sets
//!   the data-parallel flags itself: see [`data_parallelism`]. They are warnings.

use super::epp::{EPP_HEALTH_PORT, EPP_METRICS_PORT};
use super::roles::{ParallelismSpec, RoleSpec};
use super::spec::{AcceleratorType, ModelService, ModelServiceSpec};
use crate::names::is_dns1123_label;
use crate::validation::{FieldError, FieldErrors, Validate};

mod engine_env;
mod pod;

use engine_env::{env_rules, taken_ports};

/// The kit cache the model-unpack init container always mounts besides `model.mountPath`
/// (NOTES.md section b, rows 5 and 6).
const KIT_CACHE_PATH: &str = "/tmp/model-oci";
/// The registry credentials the model-unpack init container mounts only when
/// `model.imagePullSecrets` is non-empty (NOTES.md section b, row 5).
const DOCKER_CONFIG_PATH: &str = "/.docker";
/// Gateway API allows at most 16 host names on an HTTPRoute.
const MAX_HOSTNAMES: usize = 16;

impl Validate for ModelService {
    fn validate(&self) -> Result<(), FieldErrors> {
        self.spec.validate()
    }

    fn warnings(&self) -> Vec<FieldError> {
        self.spec.warnings()
    }
}

impl Validate for ModelServiceSpec {
    fn validate(&self) -> Result<(), FieldErrors> {
        check(self).errors.into_result()
    }

    fn warnings(&self) -> Vec<FieldError> {
        check(self).warnings.0
    }
}

/// What one pass over the rules found: violations, and warnings about accepted values.
#[derive(Default)]
struct Findings {
    errors: FieldErrors,
    warnings: FieldErrors,
}

/// Every rule, in field order; the same pass serves [`Validate::validate`] and
/// [`Validate::warnings`], so a rule decides in one place whether a case is an error or a
/// warning.
fn check(spec: &ModelServiceSpec) -> Findings {
    let mut found = Findings::default();
    model(spec, &mut found.errors);
    engine(spec, &mut found);
    role(spec, &spec.decode, "spec.decode", &mut found);
    if let Some(prefill) = &spec.prefill {
        role(spec, prefill, "spec.prefill", &mut found);
    }
    routing_proxy(spec, &mut found.errors);
    endpoint_picker(spec, &mut found.errors);
    http_route(spec, &mut found.errors);
    monitoring(spec, &mut found.errors);
    found
}

fn model(spec: &ModelServiceSpec, errors: &mut FieldErrors) {
    let model = &spec.model;
    // Schema bounds: name 1..253, image non-empty.
    if model.name.is_empty() || model.name.len() > 253 {
        errors.push("spec.model.name", "must be 1 to 253 characters");
    }
    if model.image.is_empty() {
        errors.push("spec.model.image", "must not be empty");
    }
    pod::image(Some(&model.image), "spec.model.image", errors);
    // The model volume is mounted at the mount path next to the init container's other mounts
    // (NOTES.md section b, rows 5 and 6); Kubernetes rejects duplicate mount paths in one
    // container, and vLLM takes the path as its model directory. "" is upstream's `/models`
    // (NOTES.md section a, Model.MountPath), so it passes as that. A trailing slash names the
    // same directory to the container runtime, so it is ignored in the comparison.
    let path = "spec.model.mountPath";
    let mount_path = model.effective_mount_path();
    let mount = mount_path.trim_end_matches('/');
    if !mount_path.starts_with('/') {
        errors.push(path, "must be an absolute path, such as /models");
    } else if mount.is_empty() {
        errors.push(path, "must not be the root directory; use e.g. /models");
    } else if mount == KIT_CACHE_PATH {
        errors.push(
            path,
            format!("{mount} is the model-unpack init container's kit cache; use e.g. /models"),
        );
    } else if mount == DOCKER_CONFIG_PATH && !model.image_pull_secrets.is_empty() {
        errors.push(
            path,
            format!(
                "{mount} is where the model-unpack init container mounts the registry credentials of imagePullSecrets; use e.g. /models"
            ),
        );
    }
    // Pull secrets become pod imagePullSecrets and the first a secret volume (NOTES.md
    // section a, Model.ImagePullSecrets); an empty name makes both invalid.
    for (i, secret) in model.image_pull_secrets.iter().enumerate() {
        if secret.name.is_empty() {
            errors.push(
                format!("spec.model.imagePullSecrets[{i}].name"),
                "must not be empty",
            );
        }
    }
}

fn engine(spec: &ModelServiceSpec, found: &mut Findings) {
    let engine = &spec.engine;
    pod::image(
        engine.image.as_deref(),
        "spec.engine.image",
        &mut found.errors,
    );
    pod::pull_policy(
        engine.image_pull_policy.as_deref(),
        "spec.engine.imagePullPolicy",
        &mut found.errors,
    );
    pod::args(&engine.args, "spec.engine.args", &mut found.errors);
    port(spec.engine.port, "spec.engine.port", &mut found.errors);
    env_rules(
        &spec.engine.env,
        "spec.engine.env",
        "in every role",
        &taken_ports(spec),
        found,
    );
}

fn role(spec: &ModelServiceSpec, role: &RoleSpec, path: &str, found: &mut Findings) {
    // Schema bound: replicas >= 0.
    if role.replicas < 0 {
        found
            .errors
            .push(format!("{path}.replicas"), "must not be negative");
    }
    // Copied into the role's pod template as they are.
    let errors = &mut found.errors;
    pod::node_selector(&role.node_selector, &format!("{path}.nodeSelector"), errors);
    pod::tolerations(&role.tolerations, &format!("{path}.tolerations"), errors);
    pod::annotations(&role.annotations, &format!("{path}.annotations"), errors);
    if let Some(resources) = &role.resources {
        let accelerator = spec.accelerator.r#type.resource_name();
        pod::resources(resources, accelerator, &format!("{path}.resources"), errors);
    }
    pod::args(role.engine_args(), &format!("{path}.engine.args"), errors);
    // Per-role env replaces spec.engine.env by name (the intended override, no warning);
    // within the role's own list the usual rules apply.
    env_rules(
        role.engine_env(),
        &format!("{path}.engine.env"),
        "in this role",
        &taken_ports(spec),
        found,
    );
    let Some(parallelism) = &role.parallelism else {
        return;
    };
    // Schema bounds: every degree >= 1.
    let mut in_bounds = true;
    for (field, value) in [
        ("tensor", parallelism.tensor),
        ("data", parallelism.data),
        ("dataLocal", parallelism.data_local),
    ] {
        if value < 1 {
            found
                .errors
                .push(format!("{path}.parallelism.{field}"), "must be at least 1");
            in_bounds = false;
        }
    }
    if in_bounds {
        data_parallelism(spec, role, parallelism, path, found);
    }
}

/// `data` against `dataLocal`, from what upstream generates and what vLLM then does.
///
/// Upstream passes `--data-parallel-size <data>` and `--data-parallel-size-local <dataLocal>`
/// only when each is above 1, and requests `tensor × dataLocal` accelerators per pod (NOTES.md
/// section a, Parallelism; section b, rows 3 and 4). vLLM (`EngineArgs.create_parallel_config`)
/// defaults the local size to the global one when the flag is absent, and refuses a local size
/// above the global one. So, per pod:
///
/// - `data == dataLocal`: every rank in the pod, with its accelerators. Fine.
/// - `dataLocal > data`: vLLM exits at start-up. Error.
/// - `data > dataLocal > 1`: vLLM waits for `data − dataLocal` ranks in other pods, which the
///   operator has no machinery for (no LeaderWorkerSet, no `--data-parallel-address`; NOTES.md
///   section g, item 6), so the pod never serves. Error.
/// - `data > dataLocal == 1`: no local flag, so vLLM runs all `data` ranks in the pod, each on
///   `tensor` devices, while the pod requests only `tensor`. On GPU and Gaudi device plugins
///   the pod sees only the devices it requested, and ranks beyond the first find none: error,
///   telling the user to set `dataLocal`. On CPU nothing is requested and the ranks share the
///   pod: a warning. For TPUs the chip count is not `tensor` to begin with (NOTES.md section a,
///   RoleSpec.Resources), so it may work: a warning.
///
/// `engine.args` (shared or the role's) come after the generated flags and vLLM keeps the last
/// value, so when they set the data-parallel layout themselves any of the above is only a
/// warning.
fn data_parallelism(
    spec: &ModelServiceSpec,
    role: &RoleSpec,
    parallelism: &ParallelismSpec,
    path: &str,
    found: &mut Findings,
) {
    let ParallelismSpec {
        tensor,
        data,
        data_local: local,
    } = *parallelism;
    if data == local {
        return;
    }
    let (field, message, fatal) = if local > data {
        (
            "dataLocal",
            format!(
                "must not exceed data ({data}): vLLM refuses --data-parallel-size-local above --data-parallel-size; set data to {local} to run {local} ranks in each pod, or dataLocal to {data}"
            ),
            true,
        )
    } else if local > 1 {
        (
            "data",
            format!(
                "must equal dataLocal ({local}): the other {} ranks would have to run in other pods, which this operator does not set up (no LeaderWorkerSet, no --data-parallel-address), so vLLM waits for them and never serves; set data to {local}, or dataLocal to {data}",
                data - local
            ),
            true,
        )
    } else {
        let accelerator = spec.accelerator.r#type;
        let all_ranks = format!(
            "is 1 while data is {data}, so no --data-parallel-size-local is passed and vLLM runs all {data} ranks in each pod"
        );
        match accelerator.resource_name() {
            None => (
                "dataLocal",
                format!("{all_ranks}; set dataLocal to {data} to say so"),
                false,
            ),
            Some(resource) => {
                let needed = i64::from(tensor) * i64::from(data);
                (
                    "dataLocal",
                    format!(
                        "{all_ranks}, needing tensor × data = {needed} {resource}, but each pod requests tensor × dataLocal = {tensor}; set dataLocal to {data}"
                    ),
                    accelerator != AcceleratorType::Google,
                )
            }
        }
    };
    let path = format!("{path}.parallelism.{field}");
    if args_set_data_parallelism(&spec.engine.args) || args_set_data_parallelism(role.engine_args())
    {
        found.warnings.push(
            path,
            format!(
                "{message} (not enforced: spec.engine.args or this role's engine.args set data-parallel flags, which override the generated ones)"
            ),
        );
    } else if fatal {
        found.errors.push(path, message);
    } else {
        found.warnings.push(path, message);
    }
}

/// Whether `engine.args` sets vLLM's data-parallel layout itself: a `--data-parallel-*` flag
/// (vLLM also accepts underscores), a `-dp*` short form, multi-node or headless mode, or a
/// `--config` file that may hold any of them.
fn args_set_data_parallelism(args: &[String]) -> bool {
    args.iter().any(|arg| {
        let name = arg.split('=').next().unwrap_or_default().replace('_', "-");
        name.starts_with("--data-parallel")
            || name.starts_with("-dp")
            || matches!(
                name.as_str(),
                "--headless" | "--nnodes" | "--node-rank" | "--config"
            )
    })
}

fn routing_proxy(spec: &ModelServiceSpec, errors: &mut FieldErrors) {
    let Some(proxy) = &spec.routing_proxy else {
        // The CRD documents the proxy as "required when Prefill is set" but nothing enforces
        // it, so decode pods silently serve without disaggregation: NOTES.md section a,
        // RoutingProxy, and section g, items 7 and 18.
        if spec.prefill.is_some() {
            errors.push("spec.routingProxy", "is required when spec.prefill is set");
        }
        return;
    };
    pod::image(proxy.image.as_deref(), "spec.routingProxy.image", errors);
    // An empty connector is passed as `--connector ""` (NOTES.md section g, item 7).
    if proxy.connector.trim().is_empty() {
        errors.push("spec.routingProxy.connector", "must not be empty");
    }
    port(proxy.target_port, "spec.routingProxy.targetPort", errors);
    // The sidecar listens on engine.port and vLLM on targetPort in the same pod (NOTES.md
    // section b, rows 3 and 7).
    if proxy.target_port == spec.engine.port {
        errors.push(
            "spec.routingProxy.targetPort",
            format!(
                "must differ from spec.engine.port ({}), where the routing proxy listens",
                spec.engine.port
            ),
        );
    }
}

fn endpoint_picker(spec: &ModelServiceSpec, errors: &mut FieldErrors) {
    let Some(pool) = &spec.inference_pool else {
        return;
    };
    let picker = &pool.endpoint_picker;
    let path = "spec.inferencePool.endpointPicker";
    pod::image(picker.image.as_deref(), &format!("{path}.image"), errors);
    if let Some(resources) = &picker.resources {
        pod::resources(resources, None, &format!("{path}.resources"), errors);
    }
    // Schema bound: replicas >= 0.
    if picker.replicas < 0 {
        errors.push(
            "spec.inferencePool.endpointPicker.replicas",
            "must not be negative",
        );
    }
    let path = "spec.inferencePool.endpointPicker.port";
    port(picker.port, path, errors);
    // The EPP container also has the fixed ports grpc-health 9003 and http-metrics 9090
    // (NOTES.md section c).
    if picker.port == EPP_HEALTH_PORT || picker.port == EPP_METRICS_PORT {
        errors.push(
            path,
            format!(
                "must differ from the Endpoint Picker's health ({EPP_HEALTH_PORT}) and metrics ({EPP_METRICS_PORT}) ports"
            ),
        );
    }
}

/// Gateway API field formats the HTTPRoute the operator builds must satisfy.
fn http_route(spec: &ModelServiceSpec, errors: &mut FieldErrors) {
    let Some(route) = &spec.http_route else {
        return;
    };
    let gateway = &route.gateway_ref;
    // Schema bound: name non-empty; Gateway API's ObjectName: at most 253 characters.
    if gateway.name.is_empty() || gateway.name.len() > 253 {
        errors.push(
            "spec.httpRoute.gatewayRef.name",
            "must be 1 to 253 characters",
        );
    }
    if let Some(namespace) = gateway.namespace.as_deref()
        && !namespace.is_empty()
        && !is_dns1123_label(namespace)
    {
        errors.push(
            "spec.httpRoute.gatewayRef.namespace",
            "must be a lowercase RFC 1123 label of at most 63 characters",
        );
    }
    if route.hostnames.len() > MAX_HOSTNAMES {
        errors.push(
            "spec.httpRoute.hostnames",
            format!("must have at most {MAX_HOSTNAMES} items"),
        );
    }
    for (i, hostname) in route.hostnames.iter().enumerate() {
        if !is_hostname(hostname) {
            errors.push(
                format!("spec.httpRoute.hostnames[{i}]"),
                "must be a lowercase DNS name, optionally prefixed by \"*.\"",
            );
        }
    }
}

/// The PodMonitor interval must be a Prometheus duration, or the PodMonitor is rejected and,
/// upstream, the whole reconcile fails (NOTES.md section g, item 11). Empty means the operator's
/// `30s` fallback. Checked only when `podMonitor.enabled` is true: with `podMonitor` present and
/// `enabled` false upstream builds no PodMonitor, so the interval is never used; with `podMonitor`
/// absent the PodMonitors get the defaults (NOTES.md section a, Monitoring.PodMonitor.Enabled).
fn monitoring(spec: &ModelServiceSpec, errors: &mut FieldErrors) {
    let Some(pod_monitor) = spec
        .monitoring
        .as_ref()
        .and_then(|m| m.pod_monitor.as_ref())
        .filter(|pm| pm.enabled)
    else {
        return;
    };
    let interval = &pod_monitor.interval;
    if !interval.is_empty() && !is_prometheus_duration(interval) {
        errors.push(
            "spec.monitoring.podMonitor.interval",
            format!("{interval:?} is not a Prometheus duration such as \"30s\" or \"1m30s\""),
        );
    }
}

fn port(value: i32, path: &str, errors: &mut FieldErrors) {
    if !(1..=65535).contains(&value) {
        errors.push(path, "must be between 1 and 65535");
    }
}

/// A Gateway API `Hostname`: `^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`,
/// at most 253 characters.
fn is_hostname(value: &str) -> bool {
    let name = value.strip_prefix("*.").unwrap_or(value);
    (1..=253).contains(&value.len()) && name.split('.').all(is_dns1123_label)
}

/// A Prometheus duration as the Prometheus Operator CRDs accept it:
/// `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`,
/// non-empty.
fn is_prometheus_duration(value: &str) -> bool {
    const UNITS: [&str; 7] = ["y", "w", "d", "h", "m", "s", "ms"];
    if value == "0" {
        return true;
    }
    if value.is_empty() {
        return false;
    }
    let mut rest = value;
    let mut next_unit = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let Some(index) = UNITS[next_unit..].iter().position(|u| *u == unit) else {
            return false;
        };
        next_unit += index + 1;
        rest = &rest[unit_len..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{args_set_data_parallelism, is_dns1123_label, is_hostname, is_prometheus_duration};

    #[test]
    fn data_parallel_overrides_in_engine_args() {
        for set in [
            &["--data-parallel-size=2"][..],
            &["--data-parallel-size-local", "2"],
            &["--data_parallel_size", "2"],
            &["-dp", "2"],
            &["-dpl=2"],
            &["--headless"],
            &["--config", "/etc/vllm.yaml"],
        ] {
            let args: Vec<String> = set.iter().map(|a| (*a).to_owned()).collect();
            assert!(args_set_data_parallelism(&args), "{set:?}");
        }
        for unset in [
            &[][..],
            &["--tensor-parallel-size", "2"],
            &["--max-model-len=8192", "--enable-chunked-prefill"],
        ] {
            let args: Vec<String> = unset.iter().map(|a| (*a).to_owned()).collect();
            assert!(!args_set_data_parallelism(&args), "{unset:?}");
        }
    }

    #[test]
    fn prometheus_durations() {
        for good in [
            "0",
            "30s",
            "1m30s",
            "1h",
            "500ms",
            "1d12h",
            "1y2w3d4h5m6s7ms",
        ] {
            assert!(is_prometheus_duration(good), "{good}");
        }
        for bad in [
            "", "s", "30", "1.5s", "30s1m", "1m1m", "1x", "-1s", "1ms1s", "1ms2",
        ] {
            assert!(!is_prometheus_duration(bad), "{bad}");
        }
    }

    #[test]
    fn host_names_and_labels() {
        for good in ["models.example.com", "*.example.com", "a", "a-1.b"] {
            assert!(is_hostname(good), "{good}");
        }
        for bad in [
            "",
            "Models.example.com",
            "*",
            "a..b",
            "-a.b",
            "a.b-",
            "*.*.a",
            "a_b",
        ] {
            assert!(!is_hostname(bad), "{bad}");
        }
        assert!(is_dns1123_label("gateway-system"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(!is_dns1123_label("Gateway"));
    }
}
