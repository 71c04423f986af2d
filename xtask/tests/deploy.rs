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
    let root = root();
    let installed = Command::new("bash")
        .arg(root.join("scripts/install-test-deps.sh"))
        .arg("kubectl")
        .status()
        .expect("install script runs");
    assert!(
        installed.success(),
        "kubectl is missing and could not be installed"
    );
    let output = Command::new("kubectl")
        .args(["kustomize", "deploy/default"])
        .current_dir(&root)
        .output()
        .expect("kubectl runs");
    assert!(
        output.status.success(),
        "kubectl kustomize deploy/default failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("kustomize output is YAML");
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

#[test]
fn default_installs_every_crd_and_all_three_operators() {
    let docs = kustomize_default();
    let mut crds: Vec<&str> = of_kind(&docs, "CustomResourceDefinition")
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .collect();
    crds.sort_unstable();
    let mut expected: Vec<String> = kinfer_api::crds::all()
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    expected.sort();
    assert_eq!(crds, expected);
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
fn rbac_has_no_wildcards_and_no_escalation_verbs() {
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
                    !["escalate", "bind", "impersonate"].contains(&verb.as_str().unwrap_or("")),
                    "{name}: {verb}"
                );
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
    // Leases are granted only in each operator's own namespace.
    for role in of_kind(&docs, "ClusterRole") {
        let text = role.to_string();
        assert!(
            !text.contains("leases"),
            "{}: cluster-wide leases",
            role["metadata"]["name"]
        );
    }
}
