//! `kinfer explain template`: candidates, the verdict on each, and the choice.

use crate::{examples, kinfer, ok};

#[test]
fn explains_an_override_driven_choice() {
    let dir = examples().join("aim/serving");
    let out = ok(&[
        "explain",
        "template",
        "-f",
        dir.to_str().unwrap(),
        "--service",
        "aim-serving/llama-batch",
        "--set-gpus",
        "MI300X=8",
    ]);
    assert!(out.contains("Resolved"), "{out}");
    assert!(out.contains("TEMPLATE"), "{out}");
    assert!(out.contains("chosen"), "{out}");
    assert!(out.contains("ServiceOverridesNotMatched"), "{out}");
}

#[test]
fn without_gpus_every_template_is_not_available() {
    let dir = examples().join("aim/serving");
    let out = ok(&[
        "explain",
        "template",
        "-f",
        dir.to_str().unwrap(),
        "--service",
        "aim-serving/llama-chat",
    ]);
    assert!(out.contains("Cluster GPUs: none"), "{out}");
    assert!(out.contains("NotAvailable"), "{out}");
}

#[test]
fn an_unknown_service_is_an_error() {
    let dir = examples().join("aim/serving");
    let out = kinfer(&[
        "explain",
        "template",
        "-f",
        dir.to_str().unwrap(),
        "--service",
        "aim-serving/nope",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no AIMService aim-serving/nope"));
}
