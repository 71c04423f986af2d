//! Bad input for the AIM operator (the Zerfoo operator's suite is
//! `crates/kinfer-bench/tests/bad_input.rs`): a seeded generator of hostile AIMService specs
//! (huge strings, unicode and control characters, 253-character names, negative and enormous
//! numbers, malformed quantities and durations, duplicate env names, invalid JSON in
//! `AIM_ENGINE_ARGS`, hostile image references, model and template names, GPU models and
//! counts, wrong JSON types), with a hostile AIMServiceTemplate, AIMRuntimeConfig or AIMModel
//! every few specs, fed to the in-process operator over the world of [`support::world`] among
//! valid neighbour services.
//!
//! Each hostile object is either refused by the API server (a 4xx with a cause) or stored;
//! every stored one is processed (its status reaches its generation) and ends `Running` /
//! `Ready`, or `Failed` / `Degraded` / `NotAvailable` with a `False` condition whose message
//! names a `spec.` field (a runtime config, which has no phase: `Ready`, or a `False`
//! condition naming the field); the operator never panics (its task is alive at the end); the
//! valid neighbours run on the template a fault-free world chooses; and deleting everything
//! leaves nothing.
//!
//! `KINFER_BAD_INPUT_SEED` picks another sequence; `KINFER_FULL_MATRIX=1` feeds 400 specs
//! instead of 40. A failure prints the seed and the spec.
//!
//! Hostile image references are malformed (no registry is contacted) or the catalog model's
//! own image: a well-formed reference to an unreachable registry is an infrastructure wait,
//! not bad input. Hostile templates never name the catalog model, so they cannot become
//! candidates of the neighbours' selection.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::time::Duration;

use kinfer_testkit::hostile::{self, Case, Outcomes, Rng};
use serde_json::{Value, json};
use support::NS;
use support::world::{AIM, IMAGE, MODEL, World, aim_object, service_spec};

/// A hostile image reference: malformed in one way or another, or the catalog's own image.
fn image(rng: &mut Rng) -> Value {
    rng.pick_typed(
        &[
            json!(""),
            json!("UPPER/Case:Tag"),
            json!("a b c"),
            json!("ghcr.io/org/x@sha256:nothex"),
            json!(format!("ghcr.io/{}:1", "x".repeat(300))),
            json!("ghcr.io/org/x:tag:tag"),
            json!("://nohost"),
            json!("модель:1"),
            json!(IMAGE),
        ],
        &[json!(7), json!(["a"])],
    )
}

/// A hostile env list: duplicate names, hostile names and values, broken engine-args JSON.
fn env(rng: &mut Rng) -> Value {
    match rng.below(4) {
        0 => json!([{ "name": "A", "value": "1" }, { "name": "A", "value": "2" }]),
        1 => json!([{ "name": hostile::string(rng), "value": hostile::string(rng) }]),
        2 => json!([{ "name": "AIM_ENGINE_ARGS", "value": rng.pick(&[
            json!("{\"json\": [1, 2"), json!("[]"), json!("null"), json!("\"x\""),
            json!("{\"max_model_len\": -1}"), json!("{\"tensor_parallel_size\": 1e999}"),
        ]) }]),
        _ => {
            json!([{ "name": "X", "value": "v", "valueFrom": { "secretKeyRef": { "name": "s", "key": "k" } } }])
        }
    }
}

/// A hostile GPU requirement.
fn gpu(rng: &mut Rng) -> Value {
    let hostile = hostile::string(rng);
    json!({ "model": rng.pick(&[hostile, json!("MI300X"), json!("MI999Z")]),
            "requests": hostile::number(rng) })
}

/// The valid spec with one or two hostile mutations.
fn hostile_service(rng: &mut Rng) -> Value {
    let mut s = service_spec("Shared");
    for _ in 0..=rng.below(2) {
        match rng.below(16) {
            0 => s["model"] = json!({ "name": hostile::string(rng) }),
            1 => s["model"] = json!({ "image": image(rng) }),
            2 => {
                s["model"] = json!({ "custom": {
                    "baseImage": image(rng),
                    "hardware": { "gpu": gpu(rng) },
                    "modelSources": [{ "modelId": hostile::string(rng),
                                       "sourceUri": hostile::string(rng),
                                       "size": hostile::quantity(rng) }],
                } });
            }
            3 => s["replicas"] = hostile::number(rng),
            4 => {
                s["minReplicas"] = hostile::number(rng);
                s["maxReplicas"] = hostile::number(rng);
            }
            5 => {
                s["resources"] = json!({ "limits": {
                    "cpu": hostile::quantity(rng),
                    "memory": hostile::quantity(rng),
                    "amd.com/gpu": hostile::quantity(rng),
                } });
            }
            6 => s["env"] = env(rng),
            7 => s["template"] = json!({ "name": hostile::string(rng) }),
            8 => {
                s["overrides"] = json!({ "metric": hostile::string(rng),
                                          "precision": hostile::string(rng),
                                          "hardware": { "gpu": gpu(rng) } });
            }
            9 => {
                s["routing"] = json!({ "enabled": true,
                                        "pathTemplate": hostile::string(rng),
                                        "requestTimeout": hostile::duration(rng),
                                        "gatewayRef": { "name": hostile::string(rng) } });
            }
            10 => {
                s["minReplicas"] = json!(1);
                s["maxReplicas"] = json!(2);
                s["autoScaling"] = json!({ "metrics": [{ "type": "PodMetric", "podmetric": {
                    "metric": { "backend": "opentelemetry", "metricNames": [hostile::string(rng)],
                                "query": hostile::string(rng) },
                    "target": { "type": rng.pick(&[json!("Value"), json!("AverageValue"), json!("Utilization")]),
                                "value": hostile::quantity(rng),
                                "averageValue": hostile::quantity(rng),
                                "averageUtilization": hostile::number(rng) },
                } }] });
            }
            11 => s["runtimeConfigName"] = hostile::string(rng),
            12 => {
                s["storage"] = json!({ "defaultStorageClassName": hostile::string(rng),
                                        "pvcHeadroomPercent": hostile::number(rng) });
            }
            13 => {
                s["serviceAccountName"] = hostile::string(rng);
                s["imagePullSecrets"] = json!([{ "name": hostile::string(rng) }]);
            }
            14 => {
                let hostile = hostile::string(rng);
                s["caching"] =
                    json!({ "mode": rng.pick(&[json!("Dedicated"), json!("Never"), hostile]) });
            }
            _ => s["unknownField"] = hostile::string(rng),
        }
    }
    s
}

/// A hostile namespace template (never of the catalog model).
fn hostile_template(rng: &mut Rng) -> Value {
    let model = hostile::string(rng);
    json!({
        "modelName": rng.pick(&[model, json!("no-such-model")]),
        "metric": hostile::string(rng),
        "precision": hostile::string(rng),
        "hardware": { "gpu": gpu(rng) },
        "env": env(rng),
    })
}

/// A hostile namespace runtime config.
fn hostile_runtime_config(rng: &mut Rng) -> Value {
    json!({
        "env": env(rng),
        "routing": { "enabled": true, "requestTimeout": hostile::duration(rng),
                     "pathTemplate": hostile::string(rng) },
        "storage": { "defaultStorageClassName": hostile::string(rng),
                     "pvcHeadroomPercent": hostile::number(rng) },
    })
}

/// A hostile namespace model (never the catalog's image).
fn hostile_model(rng: &mut Rng) -> Value {
    let mut image = image(rng);
    if image == json!(IMAGE) {
        image = json!("");
    }
    json!({
        "image": image,
        "imageMetadata": { "model": { "recommendedDeployments": [
            { "gpuModel": hostile::string(rng), "gpuCount": hostile::number(rng),
              "metric": hostile::string(rng), "precision": hostile::string(rng) },
        ] } },
        "env": env(rng),
    })
}

/// Object `i`: mostly services, every eighth a template, runtime config or model.
fn hostile_object(rng: &mut Rng, i: usize) -> Case {
    let name = hostile::name(rng, i);
    let body = match i % 8 {
        5 => aim_object("AIMServiceTemplate", &name, Some(NS), hostile_template(rng)),
        6 => aim_object(
            "AIMRuntimeConfig",
            &name,
            Some(NS),
            hostile_runtime_config(rng),
        ),
        7 => aim_object("AIMModel", &name, Some(NS), hostile_model(rng)),
        _ => aim_object("AIMService", &name, Some(NS), hostile_service(rng)),
    };
    Case { name, body }
}

/// An AIM object is settled working (`Running` / `Ready`; a kind without a phase: a `Ready`
/// condition `True`), or failed (`Failed` / `Degraded` / `NotAvailable`; a kind without a
/// phase: any state) with a `False` condition naming a `spec.` field.
const OUTCOMES: Outcomes = Outcomes {
    working: |o| match o["status"]["status"].as_str() {
        Some(s) => matches!(s, "Running" | "Ready"),
        None => o["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True"),
    },
    failed: |o| {
        o["status"]["status"]
            .as_str()
            .is_none_or(|s| matches!(s, "Failed" | "Degraded" | "NotAvailable"))
    },
    condition: None,
    fields: &["spec."],
};

/// The stored object of `case`, read in-process.
fn find(w: &World, case: &Case) -> Option<std::sync::Arc<Value>> {
    let plural = support::world::plural(case.body["kind"].as_str().unwrap_or_default());
    w.objects(AIM, &plural)
        .into_iter()
        .find(|x| x["metadata"]["name"] == case.name.as_str())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_specs_never_panic_fail_with_a_field_and_spare_their_neighbours() {
    let mut w = World::start().await;
    w.run_operator().await;
    let neighbours: Vec<String> = (0..3).map(|i| format!("good-{i}")).collect();
    w.service(&neighbours[0], &service_spec("Shared"))
        .expect("valid neighbour");
    let fed = hostile::feed(hostile_object, |case| w.create(&case.body));
    let seed = fed.seed;
    w.service(&neighbours[1], &service_spec("Dedicated"))
        .expect("valid neighbour");
    w.service(&neighbours[2], &service_spec("Shared"))
        .expect("valid neighbour");

    let timeout = Duration::from_mins(3);
    w.wait_until("every hostile object processed", timeout, |w| {
        w.catalog_ready()?;
        w.running(&neighbours)?;
        fed.settled(&OUTCOMES, |case| find(w, case))
    })
    .await;
    let selections = w.selections();
    for n in &neighbours {
        assert!(
            selections[n].contains("mi300x-lat-fp8"),
            "seed {seed}: neighbour {n} chose {} over the latency fp8 template of {MODEL}",
            selections[n]
        );
    }
    assert!(
        w.operator_alive(),
        "seed {seed}: the operator's task ended (a panic?)"
    );
    w.teardown(timeout).await;
    assert!(
        w.operator_alive(),
        "seed {seed}: the operator's task ended (a panic?)"
    );
}
