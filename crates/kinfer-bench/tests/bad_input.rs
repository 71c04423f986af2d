//! Bad input: a seeded generator of hostile ZerfooInferenceService specs (huge
//! strings, unicode and control characters, 253-character names, negative and enormous
//! numbers, malformed durations and quantities, wrong JSON types) fed to the in-process
//! operator among valid neighbours. Each hostile object is either refused by the API server
//! (schema: a 4xx with a cause) or stored; every stored one is processed (its status reaches
//! its generation) and ends Ready or with a `False` condition whose message names a `spec.`
//! field; the operator never panics; the valid neighbours converge with exactly their children.
//!
//! `KINFER_BAD_INPUT_SEED` picks another sequence; `KINFER_FULL_MATRIX=1` feeds 400 specs
//! instead of 40. A failure prints the seed and the spec.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::time::Duration;

use kinfer_testkit::hostile::{self, Case, Outcomes, Rng};
use serde_json::{Value, json};
use support::{Zerfoo, spec};

/// `spec.resources`, made an object again if an earlier mutation replaced it.
fn resources(s: &mut Value) -> &mut Value {
    if !s["resources"].is_object() {
        s["resources"] = json!({});
    }
    &mut s["resources"]
}

/// The valid spec with one or two hostile mutations.
fn hostile_spec(rng: &mut Rng) -> Value {
    let mut s = spec();
    for _ in 0..=rng.below(2) {
        match rng.below(12) {
            0 => s["modelRef"] = hostile::string(rng),
            1 => s["replicas"] = hostile::number(rng),
            2 => {
                s["minReplicas"] = hostile::number(rng);
                s["maxReplicas"] = hostile::number(rng);
            }
            3 => resources(&mut s)["cpu"] = hostile::quantity(rng),
            4 => resources(&mut s)["memory"] = hostile::quantity(rng),
            5 => resources(&mut s)["gpuMemory"] = hostile::quantity(rng),
            6 => {
                s["healthCheck"] = json!({
                    "path": hostile::string(rng),
                    "interval": hostile::duration(rng),
                    "timeout": hostile::duration(rng),
                });
            }
            7 => {
                s["canary"] =
                    json!({ "modelRef": hostile::string(rng), "weight": hostile::number(rng) });
            }
            8 => {
                s["gatewayRef"] = json!({
                    "name": hostile::string(rng),
                    "namespace": hostile::string(rng),
                    "sectionName": hostile::string(rng),
                });
            }
            9 => s["resources"] = rng.pick(&[json!("4 CPUs"), json!({}), json!(null)]),
            10 => s["unknownField"] = hostile::string(rng),
            _ => {
                s["healthCheck"] = json!({ "path": "/healthz", "interval": hostile::duration(rng), "timeout": "5s" });
            }
        }
    }
    s
}

/// A service is settled Ready, or with `ConfigValid` `False` naming a `spec.` field.
const OUTCOMES: Outcomes = Outcomes {
    working: |o| o["status"]["ready"] == true,
    failed: |_| true,
    condition: Some("ConfigValid"),
    fields: &["spec."],
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_specs_never_panic_fail_with_a_field_and_spare_their_neighbours() {
    let mut z = Zerfoo::start().await;
    z.run_operator();
    let neighbours: Vec<String> = (0..3).map(|i| format!("good-{i}")).collect();
    z.create(&neighbours[0], &spec()).expect("valid neighbour");
    let fed = hostile::feed(
        |rng, i| Case {
            name: hostile::name(rng, i),
            body: hostile_spec(rng),
        },
        |case| z.create(&case.name, &case.body),
    );
    let seed = fed.seed;
    z.create(&neighbours[1], &spec()).expect("valid neighbour");
    z.create(&neighbours[2], &spec()).expect("valid neighbour");

    let timeout = Duration::from_mins(2);
    z.wait_until("every hostile object processed", timeout, |z| {
        z.converged_some(&neighbours)?;
        fed.settled(&OUTCOMES, |case| z.service(&case.name))
    })
    .await;
    assert!(
        z.operator_alive(),
        "seed {seed}: the operator's task ended (a panic?)"
    );
    z.delete_all(timeout).await;
    assert!(
        z.operator_alive(),
        "seed {seed}: the operator's task ended (a panic?)"
    );
}
