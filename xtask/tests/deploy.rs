//! `deploy/default` builds with `kubectl kustomize` and installs what a platform team expects:
//! every CRD we generate, and each operator with least-privilege RBAC and restricted pod security.

#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `kubectl kustomize deploy/default`, installing kubectl first when it is missing.
fn kustomize_default() -> Vec<Value> {
    kustomize("default")
}

/// Installs `tool` with `scripts/install-test-deps.sh` when it is missing.
fn install(tool: &str) {
    let installed = Command::new("bash")
        .arg(root().join("scripts/install-test-deps.sh"))
        .arg(tool)
        .status()
        .expect("install script runs");
    assert!(
        installed.success(),
        "{tool} is missing and could not be installed"
    );
}

/// Runs `kubectl kustomize deploy/<dir>`, installing kubectl first when it is missing.
fn kustomize(dir: &str) -> Vec<Value> {
    kustomize_path(&root().join("deploy").join(dir))
}

/// Runs `kubectl kustomize <dir>`.
fn kustomize_path(dir: &Path) -> Vec<Value> {
    install("kubectl");
    let output = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl runs");
    assert!(
        output.status.success(),
        "kubectl kustomize {} failed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("kustomize output is YAML");
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

/// The sorted names of the CRDs among `docs`.
fn crd_names(docs: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = of_kind(docs, "CustomResourceDefinition")
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str().map(str::to_owned))
        .collect();
    names.sort_unstable();
    names
}

/// The sorted names of the CRDs kinfer generates that `keep` keeps.
fn generated_crds(
    keep: impl Fn(
        &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    ) -> bool,
) -> Vec<String> {
    let mut names: Vec<String> = kinfer_api::crds::all()
        .into_iter()
        .filter(|c| keep(c))
        .filter_map(|c| c.metadata.name)
        .collect();
    names.sort_unstable();
    names
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

#[test]
fn default_installs_every_crd_and_all_three_operators() {
    let docs = kustomize_default();
    assert_eq!(crd_names(&docs), generated_crds(|_| true));
    let deployments: Vec<&str> = of_kind(&docs, "Deployment")
        .iter()
        .filter_map(|d| d["metadata"]["name"].as_str())
        .collect();
    for operator in ["aim-operator", "modelservice-operator", "zerfoo-operator"] {
        assert!(
            deployments.contains(&operator),
            "{operator} missing: {deployments:?}"
        );
    }
}

/// Each operator's directory installs it alone: its own CRDs (all of its API group, no other),
/// its Deployment with the image `cargo xtask image` builds by default
/// (`ghcr.io/kinfer/<binary>:<workspace version>`), and its user roles.
#[test]
fn each_operator_installs_alone_with_its_crds_and_image() {
    for (dir, group) in [
        ("aim-operator", "aim.eai.amd.com"),
        ("modelservice-operator", "model.otterscale.io"),
        ("zerfoo-operator", "zerfoo.feza.ai"),
    ] {
        let docs = kustomize(dir);
        assert_eq!(
            crd_names(&docs),
            generated_crds(|c| c.spec.group == group),
            "{dir}"
        );
        let deployments = of_kind(&docs, "Deployment");
        assert_eq!(deployments.len(), 1, "{dir}");
        assert_eq!(deployments[0]["metadata"]["name"], dir);
        let image = format!("ghcr.io/kinfer/{dir}:{}", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            deployments[0]["spec"]["template"]["spec"]["containers"][0]["image"],
            image.as_str(),
            "{dir}"
        );
        let aggregated: Vec<&Value> = of_kind(&docs, "ClusterRole")
            .into_iter()
            .filter(|r| {
                r["metadata"]["labels"].as_object().is_some_and(|l| {
                    l.keys()
                        .any(|k| k.starts_with("rbac.authorization.k8s.io/aggregate-to-"))
                })
            })
            .collect();
        assert_eq!(aggregated.len(), 2, "{dir}: an edit and a view role");
        let reader = format!("{dir}-metrics-reader");
        let readers: Vec<&Value> = of_kind(&docs, "ClusterRole")
            .into_iter()
            .filter(|r| r["metadata"]["name"] == reader.as_str())
            .collect();
        assert_eq!(readers.len(), 1, "{dir}: the metrics reader role");
        assert_eq!(
            readers[0]["rules"],
            serde_json::json!([{ "nonResourceURLs": ["/metrics"], "verbs": ["get"] }]),
            "{dir}"
        );
        for role in aggregated {
            for rule in role["rules"].as_array().expect("rules") {
                assert_eq!(rule["apiGroups"], serde_json::json!([group]), "{dir}");
            }
        }
    }
}

#[test]
fn managers_run_under_restricted_pod_security_with_probes_and_limits() {
    let docs = kustomize_default();
    for deployment in of_kind(&docs, "Deployment") {
        let name = &deployment["metadata"]["name"];
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{name}");
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
            "{name}"
        );
        for container in pod["containers"].as_array().expect("containers") {
            let sc = &container["securityContext"];
            assert_eq!(sc["allowPrivilegeEscalation"], false, "{name}");
            assert_eq!(sc["readOnlyRootFilesystem"], true, "{name}");
            assert_eq!(
                sc["capabilities"]["drop"],
                serde_json::json!(["ALL"]),
                "{name}"
            );
            assert_eq!(
                container["livenessProbe"]["httpGet"]["path"], "/healthz",
                "{name}"
            );
            assert_eq!(
                container["readinessProbe"]["httpGet"]["path"], "/readyz",
                "{name}"
            );
            for bound in ["requests", "limits"] {
                for resource in ["cpu", "memory"] {
                    assert!(
                        container["resources"][bound][resource].is_string(),
                        "{name}: {bound}.{resource} unset"
                    );
                }
            }
        }
        let namespace = deployment["metadata"]["namespace"]
            .as_str()
            .expect("namespaced");
        let ns = of_kind(&docs, "Namespace")
            .into_iter()
            .find(|n| n["metadata"]["name"] == namespace)
            .unwrap_or_else(|| panic!("{name}: namespace {namespace} not installed"));
        assert_eq!(
            ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
            "restricted"
        );
    }
}

#[test]
fn rbac_has_no_wildcards_and_binds_only_shipped_roles_by_name() {
    let docs = kustomize_default();
    let roles = of_kind(&docs, "ClusterRole")
        .into_iter()
        .chain(of_kind(&docs, "Role"));
    for role in roles {
        let name = &role["metadata"]["name"];
        for rule in role["rules"].as_array().expect("rules") {
            for key in ["apiGroups", "resources", "verbs", "nonResourceURLs"] {
                let values = rule[key].as_array().cloned().unwrap_or_default();
                assert!(
                    !values.contains(&Value::from("*")),
                    "{name}: wildcard {key}"
                );
            }
            for verb in rule["verbs"].as_array().expect("verbs") {
                assert!(
                    !["escalate", "impersonate"].contains(&verb.as_str().unwrap_or("")),
                    "{name}: {verb}"
                );
                if verb == "bind" {
                    // Only by name, only ClusterRoles the install ships (the ModelService
                    // operator binds the Endpoint Picker's; its admission policy fences how).
                    assert_eq!(
                        rule["resources"],
                        serde_json::json!(["clusterroles"]),
                        "{name}"
                    );
                    let names = rule["resourceNames"].as_array().expect("bind by name");
                    for bound in names {
                        assert!(
                            of_kind(&docs, "ClusterRole")
                                .iter()
                                .any(|r| r["metadata"]["name"] == *bound),
                            "{name}: binds {bound}, which the install does not ship"
                        );
                    }
                }
            }
            let resources = rule["resources"].as_array().cloned().unwrap_or_default();
            let verbs = rule["verbs"].as_array().cloned().unwrap_or_default();
            if resources.contains(&Value::from("secrets")) {
                assert!(
                    name == "modelservice-operator" || !verbs.contains(&Value::from("create")),
                    "{name}: only the ModelService operator creates Secrets (the EPP token)"
                );
            }
        }
    }
    // Leases are granted only in each operator's own namespace, and to an Endpoint Picker in
    // its own: the one ClusterRole holding them is bound by no ClusterRoleBinding (the operator
    // binds it per namespace, with a RoleBinding).
    for role in of_kind(&docs, "ClusterRole") {
        let name = &role["metadata"]["name"];
        if !role.to_string().contains("leases") {
            continue;
        }
        assert_eq!(
            name, "kinfer-modelservice-epp-leader-election",
            "cluster-wide leases"
        );
        assert!(
            !of_kind(&docs, "ClusterRoleBinding")
                .iter()
                .any(|b| b["roleRef"]["name"] == *name),
            "{name} is bound cluster-wide"
        );
    }
}

/// `deploy/default` with the `deploy/monitoring` component, as a user's overlay includes it.
fn kustomize_monitored() -> Vec<Value> {
    let overlay = std::env::temp_dir().join(format!("kinfer-monitored-{}", std::process::id()));
    std::fs::create_dir_all(&overlay).expect("overlay dir");
    let overlay = overlay.canonicalize().expect("overlay dir");
    let deploy = root().join("deploy").canonicalize().expect("deploy/");
    // kustomize takes only relative paths: from the overlay up to `/`, then down to deploy/.
    let up = "../".repeat(overlay.components().count() - 1);
    let deploy = format!(
        "{up}{}",
        deploy.strip_prefix("/").expect("absolute").display()
    );
    std::fs::write(
        overlay.join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - {deploy}/default\ncomponents:\n  - {deploy}/monitoring\n"
        ),
    )
    .expect("overlay");
    kustomize_path(&overlay)
}

/// Each operator's metrics Service is scraped by a ServiceMonitor beside it; the alerts and the
/// Grafana dashboard come along.
#[test]
fn the_monitoring_component_scrapes_every_operator() {
    let docs = kustomize_monitored();
    let monitors = of_kind(&docs, "ServiceMonitor");
    assert_eq!(monitors.len(), 3);
    for monitor in monitors {
        let ns = &monitor["metadata"]["namespace"];
        let selector = monitor["spec"]["selector"]["matchLabels"]
            .as_object()
            .expect("matchLabels");
        let port = &monitor["spec"]["endpoints"][0]["port"];
        assert_eq!(monitor["spec"]["endpoints"][0]["scheme"], "https", "{ns}");
        let selected: Vec<&Value> = of_kind(&docs, "Service")
            .into_iter()
            .filter(|s| {
                &s["metadata"]["namespace"] == ns
                    && selector
                        .iter()
                        .all(|(k, v)| &s["metadata"]["labels"][k] == v)
            })
            .collect();
        assert_eq!(selected.len(), 1, "{ns}: one metrics Service");
        assert!(
            selected[0]["spec"]["ports"]
                .as_array()
                .expect("ports")
                .iter()
                .any(|p| &p["name"] == port),
            "{ns}: the Service has the port {port}"
        );
    }
    assert_eq!(of_kind(&docs, "PrometheusRule").len(), 1);
    let dashboards: Vec<&Value> = of_kind(&docs, "ConfigMap")
        .into_iter()
        .filter(|c| c["metadata"]["labels"]["grafana_dashboard"] == "1")
        .collect();
    assert_eq!(dashboards.len(), 1);
    let json = dashboards[0]["data"]["kinfer-operators.json"]
        .as_str()
        .expect("the dashboard");
    let dashboard: Value = serde_json::from_str(json).expect("dashboard JSON");
    assert!(dashboard["panels"].as_array().is_some_and(|p| p.len() >= 6));
}

/// `promtool check rules` accepts the alerts (a PrometheusRule's `spec` is a rules file).
#[test]
fn the_alerts_pass_promtool() {
    install("promtool");
    let rule: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(root().join("deploy/monitoring/prometheus_rule.yaml"))
            .expect("rule file"),
    )
    .expect("YAML");
    let file = std::env::temp_dir().join(format!("kinfer-rules-{}.json", std::process::id()));
    // JSON is YAML: promtool reads it as a rules file.
    std::fs::write(&file, rule["spec"].to_string()).expect("rules");
    let out = Command::new("promtool")
        .args(["check", "rules"])
        .arg(&file)
        .output()
        .expect("promtool runs");
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("SUCCESS: 7 rules found"));
}
