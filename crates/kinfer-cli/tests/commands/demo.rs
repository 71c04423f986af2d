//! `kinfer demo` finishes and summarises every example.

use crate::ok;

#[test]
fn demo_renders_the_examples_and_summarises_them() {
    let out = ok(&["demo"]);
    for expected in [
        "ZerfooInferenceService zerfoo-demo/llama-canary",
        "ModelService llm-serving/qwen3-32b-pd",
        "AIMClusterModel llama-3-1-8b-instruct",
        "conditions:",
        "└─",
        "Full YAML: kinfer render -f",
        // The registry examples say why they are not Ready instead of reaching docker.io.
        "AIMClusterModelSource amd-aim  [not Ready: needs a registry, and render is offline]",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
}
