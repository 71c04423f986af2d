//! Invalid input: exit code 3 and a message naming the file, the document and the field.

use crate::{kinfer, temp_file};

const INVALID_INPUT: i32 = 3;

fn refused(name: &str, text: &str) -> String {
    let file = temp_file(name, text);
    let out = kinfer(&["render", "-f", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(INVALID_INPUT), "stderr: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "nothing is rendered for invalid input"
    );
    assert!(
        stderr.contains(file.to_str().unwrap()),
        "names the file: {stderr}"
    );
    stderr
}

const VALID: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ok\n";

#[test]
fn a_schema_violation_names_file_document_and_field() {
    let text = format!(
        "{VALID}---\napiVersion: zerfoo.feza.ai/v1\nkind: ZerfooInferenceService\nmetadata:\n  name: bad\nspec:\n  modelRef: m\n  canary:\n    modelRef: c\n    weight: 150\n"
    );
    let stderr = refused("schema.yaml", &text);
    assert!(stderr.contains("document 2"), "{stderr}");
    assert!(stderr.contains("spec.canary.weight"), "{stderr}");
}

#[test]
fn a_validate_rule_violation_names_the_field() {
    // minReplicas > maxReplicas passes the schema types but breaks the kind's rule.
    let text = "apiVersion: zerfoo.feza.ai/v1\nkind: ZerfooInferenceService\nmetadata:\n  name: bad\n  namespace: x\nspec:\n  modelRef: m\n  replicas: 2\n  minReplicas: 5\n  maxReplicas: 3\n";
    let stderr = refused("rule.yaml", text);
    assert!(stderr.contains("document 1"), "{stderr}");
    assert!(
        stderr.contains("spec.minReplicas") || stderr.contains("spec.replicas"),
        "{stderr}"
    );
}

#[test]
fn unknown_kinds_missing_names_and_broken_yaml_are_invalid_input() {
    let stderr = refused(
        "kind.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
    );
    assert!(stderr.contains(": kind:"), "{stderr}");
    let stderr = refused("name.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {}\n");
    assert!(stderr.contains("metadata.name"), "{stderr}");
    let stderr = refused("yaml.yaml", "apiVersion: v1\nkind: [unclosed\n");
    assert!(stderr.contains("not valid YAML"), "{stderr}");
}

#[test]
fn a_missing_file_is_invalid_input_and_a_bad_flag_a_usage_error() {
    let out = kinfer(&["render", "-f", "/nonexistent/kinfer.yaml"]);
    assert_eq!(out.status.code(), Some(INVALID_INPUT));
    let out = kinfer(&["render", "-f", "x.yaml", "--set-gpus", "MI300X"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_misspelled_field_is_invalid_input_at_its_path() {
    // The API server would prune `replica` silently and render a one-replica plan.
    let text = "apiVersion: zerfoo.feza.ai/v1\nkind: ZerfooInferenceService\nmetadata:\n  name: typo\nspec:\n  modelRef: m\n  replica: 3\n";
    let stderr = refused("unknown.yaml", text);
    assert!(stderr.contains("document 1"), "{stderr}");
    assert!(stderr.contains("spec.replica: unknown field"), "{stderr}");
    // Core kinds too: a misspelled `stringData` would leave the Secret empty.
    let stderr = refused(
        "unknown-core.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstrngData:\n  token: x\n",
    );
    assert!(
        stderr.contains("document 1 (Secret default/s): strngData: unknown field"),
        "{stderr}"
    );
}

#[test]
fn empty_documents_are_numbered_as_kubectl_numbers_them() {
    // The leading `---` pairs hold nothing (no document); the comment-only one counts.
    let text = format!(
        "---\n---\n{VALID}---\n# nothing but a comment\n---\napiVersion: zerfoo.feza.ai/v1\nkind: ZerfooInferenceService\nmetadata:\n  name: bad\nspec:\n  modelRef: m\n  canary:\n    modelRef: c\n    weight: 150\n"
    );
    let stderr = refused("empty-docs.yaml", &text);
    assert!(
        stderr.contains("document 3 (ZerfooInferenceService default/bad)"),
        "{stderr}"
    );
    assert!(stderr.contains("spec.canary.weight"), "{stderr}");
}

#[test]
fn an_object_defined_twice_names_both_documents() {
    let zis = |model: &str| {
        format!(
            "apiVersion: zerfoo.feza.ai/v1\nkind: ZerfooInferenceService\nmetadata:\n  name: twin\nspec:\n  modelRef: {model}\n"
        )
    };
    let text = format!("{}---\n{}", zis("m"), zis("n"));
    let stderr = refused("twice.yaml", &text);
    assert!(stderr.contains("document 2"), "{stderr}");
    assert!(stderr.contains("defined twice"), "{stderr}");
    assert!(
        stderr.contains("document 1 defines the same object differently"),
        "{stderr}"
    );
}

/// An identical repeat (each example file carries its Namespace) is one object: rendered
/// once, as `kubectl apply` leaves it.
#[test]
fn an_identical_repeat_is_one_object() {
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: twice\n";
    let zis = "apiVersion: zerfoo.feza.ai/v1\nkind: ZerfooInferenceService\nmetadata:\n  name: z\n  namespace: twice\nspec:\n  modelRef: m\n";
    let file = temp_file("repeat.yaml", &format!("{ns}---\n{zis}---\n{ns}"));
    let out = kinfer(&["render", "-f", file.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let namespaces = stdout
        .split("\n---\n")
        .filter(|d| d.contains("kind: Namespace") && d.contains("name: twice"))
        .count();
    assert_eq!(namespaces, 1, "{stdout}");
}
