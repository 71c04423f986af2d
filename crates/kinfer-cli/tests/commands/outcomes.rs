//! Exit codes of a render that ran: the `default` Namespace as input, an input in an error
//! state, and a `--timeout` too short for anything.

use crate::{kinfer, ok, temp_file, yaml_documents};

#[test]
fn the_default_namespace_is_applied_over_not_defined_twice() {
    let file = temp_file(
        "default-ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: default\n  labels:\n    team: a\n---\napiVersion: zerfoo.feza.ai/v1\nkind: ZerfooInferenceService\nmetadata:\n  name: z\nspec:\n  modelRef: m\n  replicas: 1\n",
    );
    let out = ok(&["render", "-f", file.to_str().unwrap()]);
    let objects = yaml_documents(&out);
    let ns = objects
        .iter()
        .find(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == "default")
        .expect("the default Namespace is printed as an input");
    assert_eq!(
        ns["metadata"]["labels"]["team"], "a",
        "the input's labels were applied"
    );
    assert!(
        objects
            .iter()
            .any(|o| o["kind"] == "Deployment" && o["metadata"]["namespace"] == "default")
    );
}

#[test]
fn an_input_in_an_error_state_exits_5_with_its_reason() {
    let file = temp_file(
        "error-state.yaml",
        "apiVersion: aim.eai.amd.com/v1alpha1\nkind: AIMService\nmetadata:\n  name: lost\n  namespace: x\nspec:\n  model:\n    name: no-such-model\n  replicas: 1\n",
    );
    let out = kinfer(&["render", "-f", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("AIMService x/lost: ModelNotFound"),
        "{stderr}"
    );
    let objects = yaml_documents(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        objects.len(),
        1,
        "the plan (the input with its status) is still printed"
    );
    assert_eq!(objects[0]["status"]["status"], "Failed");
}

#[test]
fn timeout_bounds_the_cluster_start_too() {
    let file = temp_file(
        "timeout.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: t\n",
    );
    let out = kinfer(&["render", "-f", file.to_str().unwrap(), "--timeout", "1ms"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("did not finish"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing was rendered");
}
