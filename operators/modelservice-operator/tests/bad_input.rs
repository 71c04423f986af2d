//! Bad input for the ModelService operator: a seeded generator mutates a valid
//! ModelService with hostile values ([`kinfer_testkit::hostile`]) in every field family of
//! the spec (model, engine image/args/env/port, accelerator, replicas, parallelism, resources,
//! node selectors, tolerations, pod annotations, per-role overrides, prefill and routing proxy,
//! InferencePool/Endpoint Picker, HTTPRoute, monitoring, metadata labels and annotations) and
//! feeds the objects to the in-process operator between valid neighbours.
//!
//! Each hostile object is either refused by the API server (a 4xx from the schema or the name
//! and label rules) or stored; every stored one is processed (its status reaches its
//! generation) and ends Ready, with children a real API server would accept (checked here by
//! [`pod_template_errors`], since the test cluster does not validate built-in kinds), or with
//! `ConfigValid` `False` whose message names the offending field (`spec.…`, or
//! `metadata.annotations[…]` for the operator's annotation). No panic happens anywhere in the
//! process, the operator's task is alive at the end, the valid neighbours converge with exactly
//! the children their spec builds, and deleting everything leaves nothing: no child, no cluster
//! RBAC, no ModelService held by its finalizer.
//!
//! `KINFER_BAD_INPUT_SEED` picks another sequence; `KINFER_FULL_MATRIX=1` feeds 400 specs
//! instead of 40. A failure prints the seed and the spec.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::owned::{self, controllers};
use common::real_server::pod_template_errors;
use common::{Harness, minimal};
use kinfer_api::modelservice::ModelService;
use kinfer_testkit::hostile::{self, Case, Outcomes, Rng, short};
use modelservice_operator::reconciler::{build, resolve};
use modelservice_operator::{OperatorConfig, OptionalCrds};
use serde_json::{Value, json};

const NS: &str = "team-a";
const GROUP: &str = "model.otterscale.io";
const PLURAL: &str = "modelservices";
const BOUND: Duration = Duration::from_mins(2);

/// One of the items, each evaluated first (so items may draw from `rng` themselves).
macro_rules! pick {
    ($rng:expr, $($item:expr),+ $(,)?) => {{
        let items = vec![$($item),+];
        $rng.pick(&items)
    }};
}

/// A hostile map key: label-key-shaped or not.
fn key(rng: &mut Rng) -> String {
    pick!(
        rng,
        String::new(),
        "UPPER/Case".to_owned(),
        "a/b/c".to_owned(),
        "x".repeat(64),
        format!("{}/name", "d".repeat(254)),
        "модель".to_owned(),
        "-leading".to_owned(),
        "example.com/ok".to_owned(),
        "sidecar.istio.io/inject".to_owned(),
        "space key".to_owned(),
    )
}

/// A hostile string as a plain string (the schema's wrong types are generated elsewhere).
fn text(rng: &mut Rng) -> String {
    match hostile::string(rng) {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// Hostile env: duplicate names, generated names, bad names, value and valueFrom together.
fn env(rng: &mut Rng) -> Value {
    let name = pick!(
        rng,
        json!("DUP"),
        json!("TP_SIZE"),
        json!(""),
        json!("has=equals"),
        json!("имя"),
        json!("VLLM_NIXL_SIDE_CHANNEL_PORT"),
        json!(42),
    );
    json!([
        {"name": "DUP", "value": hostile::string(rng)},
        {"name": name, "value": hostile::string(rng)},
        {"name": "DUP", "value": "second"},
        pick!(rng,
            json!({"name": "FROM", "value": "x", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}),
            json!({"name": "FROM", "valueFrom": {}}),
            json!({"name": "FROM", "valueFrom": {"fieldRef": {"fieldPath": hostile::string(rng)}}}),
            json!({"name": "OK", "value": "1"}),
        ),
    ])
}

/// Hostile vLLM args, including JSON-valued flags whose JSON is broken.
fn args(rng: &mut Rng) -> Value {
    let json_flag = pick!(
        rng,
        "--kv-transfer-config",
        "--compilation-config",
        "--hf-overrides",
        "--speculative-config",
        "--override-generation-config",
    );
    let value = pick!(
        rng,
        json!("{\"json\": [1, 2"),
        json!("[1, 2"),
        json!("{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}"),
        json!("3"),
        hostile::string(rng),
    );
    pick!(
        rng,
        json!([json_flag, value]),
        json!([format!("{json_flag}={}", value.as_str().unwrap_or("{"))]),
        json!([hostile::string(rng), hostile::string(rng)]),
        json!(hostile::string(rng)),
    )
}

/// Hostile resources: quantities, resource names, requests above limits.
fn resources(rng: &mut Rng) -> Value {
    let name = pick!(
        rng,
        json!("cpu"),
        json!("memory"),
        json!("nvidia.com/gpu"),
        json!("Bad Name"),
        json!("example.com/widget"),
    );
    pick!(
        rng,
        json!({"limits": {name.as_str().unwrap(): hostile::quantity(rng)}}),
        json!({"requests": {"cpu": hostile::quantity(rng), "memory": hostile::quantity(rng)}}),
        json!({"requests": {"cpu": "8"}, "limits": {"cpu": "2"}}),
        json!({"requests": {"memory": "1Ei"}, "limits": {"memory": "1Ki"}}),
        json!({"limits": {"nvidia.com/gpu": hostile::quantity(rng)}}),
        json!({"claims": [{"name": hostile::string(rng)}]}),
        json!("4 CPUs"),
    )
}

/// Hostile tolerations.
fn tolerations(rng: &mut Rng) -> Value {
    pick!(
        rng,
        json!([{"key": key(rng), "operator": "Equal", "value": "v", "effect": "NoSchedule"}]),
        json!([{"key": "k", "operator": hostile::string(rng)}]),
        json!([{"key": "k", "operator": "Exists", "value": "v"}]),
        json!([{"operator": "Equal", "value": "v"}]),
        json!([{"key": "k", "effect": hostile::string(rng)}]),
        json!([{"key": "k", "effect": "NoSchedule", "tolerationSeconds": hostile::number(rng)}]),
        json!([{"key": "k", "operator": "Equal", "value": text(rng)}]),
    )
}

/// A hostile map of `key` to hostile strings.
fn string_map(rng: &mut Rng) -> Value {
    let mut m = serde_json::Map::new();
    for _ in 0..=rng.below(2) {
        m.insert(key(rng), hostile::string(rng));
    }
    Value::Object(m)
}

/// The valid ModelService `name` with one or two hostile mutations.
fn hostile_object(rng: &mut Rng, name: &str) -> Value {
    let mut o = minimal(name, NS);
    for _ in 0..=rng.below(2) {
        let s = &mut o["spec"];
        let role = pick!(rng, "decode", "prefill");
        if role == "prefill" && !s["prefill"].is_object() {
            s["prefill"] = json!({"replicas": 1});
            s["routingProxy"] = json!({});
        }
        match rng.below(24) {
            0 => s["model"]["name"] = hostile::string(rng),
            1 => s["model"]["image"] = hostile::string(rng),
            2 => s["model"]["mountPath"] = hostile::string(rng),
            3 => s["model"]["imagePullSecrets"] = json!([{"name": hostile::string(rng)}]),
            4 => s["engine"]["image"] = hostile::string(rng),
            5 => s["engine"]["imagePullPolicy"] = hostile::string(rng),
            6 => s["engine"]["port"] = hostile::number(rng),
            7 => s["engine"]["args"] = args(rng),
            8 => s["engine"]["env"] = env(rng),
            9 => {
                s["accelerator"]["type"] = pick!(
                    rng,
                    json!("amd"),
                    json!("cpu"),
                    json!("google"),
                    json!("NVIDIA"),
                    hostile::string(rng),
                );
            }
            10 => s[role]["replicas"] = hostile::number(rng),
            11 => {
                s[role]["parallelism"] = json!({
                    "tensor": hostile::number(rng),
                    "data": hostile::number(rng),
                    "dataLocal": hostile::number(rng),
                });
            }
            12 => s[role]["resources"] = resources(rng),
            13 => s[role]["nodeSelector"] = string_map(rng),
            14 => s[role]["tolerations"] = tolerations(rng),
            15 => s[role]["annotations"] = string_map(rng),
            16 => s[role]["engine"] = json!({"args": args(rng), "env": env(rng)}),
            17 => {
                s["routingProxy"] = json!({
                    "image": hostile::string(rng),
                    "connector": hostile::string(rng),
                    "targetPort": hostile::number(rng),
                    "zapLogLevel": hostile::string(rng),
                    "certPath": hostile::string(rng),
                });
            }
            18 => {
                s["inferencePool"] = json!({"endpointPicker": {
                    "image": hostile::string(rng),
                    "replicas": hostile::number(rng),
                    "port": hostile::number(rng),
                    "failureMode": pick!(rng, json!("FailClose"), hostile::string(rng)),
                }});
            }
            19 => {
                s["inferencePool"] = json!({"endpointPicker": {"resources": resources(rng)}});
            }
            20 => {
                s["httpRoute"] = json!({
                    "gatewayRef": {"name": hostile::string(rng), "namespace": hostile::string(rng)},
                    "hostnames": pick!(rng,
                        json!([hostile::string(rng)]),
                        json!(["ok.example.com", "*.example.com"]),
                        json!((0..20).map(|i| format!("h{i}.example.com")).collect::<Vec<_>>()),
                    ),
                });
            }
            21 => {
                s["monitoring"] = json!({"podMonitor": {
                    "enabled": pick!(rng, json!(true), json!(false), hostile::string(rng)),
                    "interval": hostile::duration(rng),
                    "path": hostile::string(rng),
                    "portName": hostile::string(rng),
                }});
            }
            22 => {
                let meta = pick!(rng, "labels", "annotations");
                o["metadata"][meta] = string_map(rng);
            }
            _ => {
                o["metadata"]["annotations"] = json!({
                    modelservice_operator::reconciler::EPP_FLAGS_ANNOTATION: pick!(rng,
                        json!("novalue"),
                        json!("=x"),
                        json!("--v=2\n--zap-log-level=$(rm -rf /)"),
                        hostile::string(rng),
                    ),
                });
            }
        }
    }
    o
}

/// A ModelService is settled Ready, or with `ConfigValid` `False` naming the field
/// (`spec.…`, or `metadata.annotations[…]` for the operator's annotation).
const OUTCOMES: Outcomes = Outcomes {
    working: |o| o["status"]["phase"] == "Ready",
    failed: |_| true,
    condition: Some("ConfigValid"),
    fields: &["spec.", "metadata.annotations["],
};

/// Problems of the Deployments `uid` owns, as a real API server would see them.
fn children_errors(h: &Harness, uid: &str) -> Vec<String> {
    h.cluster
        .objects("apps", "deployments")
        .iter()
        .filter(|d| controllers(d).iter().any(|r| r["uid"] == uid))
        .flat_map(|d| {
            pod_template_errors(d)
                .into_iter()
                .map(|e| format!("{}: {e}", d["metadata"]["name"]))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The children the spec of `o` builds, as `(group, plural, name)`.
fn expected_children(o: &Value) -> BTreeSet<(String, String, String)> {
    let ms: ModelService = serde_json::from_value(o.clone()).expect("stored ModelService");
    let resolved = resolve::resolve(&ms, &OperatorConfig::default(), OptionalCrds::all())
        .expect("a valid neighbour resolves");
    build::build(&resolved, true)
        .expect("a valid neighbour builds")
        .owned
        .into_iter()
        .map(|d| {
            (
                d.kind.resource.group,
                d.kind.resource.plural,
                d.object.metadata.name.unwrap_or_default(),
            )
        })
        .collect()
}

/// The stored ModelService `name`.
fn stored(h: &Harness, name: &str) -> Option<Arc<Value>> {
    h.cluster
        .objects(GROUP, PLURAL)
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
}

/// Each neighbour Ready at its generation, owning exactly the children its spec builds.
fn neighbours_converged(h: &Harness, neighbours: &[String]) -> Result<(), String> {
    for name in neighbours {
        let o = stored(h, name).ok_or_else(|| format!("{name} missing"))?;
        if o["status"]["phase"] != "Ready"
            || o["status"]["observedGeneration"] != o["metadata"]["generation"]
        {
            return Err(format!("neighbour {name}: {}", o["status"]));
        }
        let uid = o["metadata"]["uid"].as_str().unwrap_or_default();
        let have = owned::owned_by(&h.cluster, NS, uid)?;
        let want = expected_children(&o);
        if have != want {
            return Err(format!(
                "neighbour {name}: owns {have:?}, its spec builds {want:?}"
            ));
        }
    }
    Ok(())
}

/// Counts every panic in the process (any thread, caught or not), after the default report.
fn count_panics() -> Arc<AtomicUsize> {
    let panics = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&panics);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        counter.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    panics
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_model_services_never_panic_fail_with_a_field_and_spare_their_neighbours() {
    let panics = count_panics();
    let h = Harness::start().await;
    let neighbours: Vec<String> = (0..3).map(|i| format!("good-{i}")).collect();
    let create = |o: Value| {
        h.cluster
            .create_object("model.otterscale.io/v1alpha1", PLURAL, NS, o)
    };
    create(minimal(&neighbours[0], NS)).expect("valid neighbour");
    let fed = hostile::feed(
        |rng, i| {
            let name = hostile::name(rng, i);
            let body = hostile_object(rng, &name);
            Case { name, body }
        },
        |case| create(case.body.clone()),
    );
    let seed = fed.seed;
    let kept = &fed.stored;
    for n in &neighbours[1..] {
        create(minimal(n, NS)).expect("valid neighbour");
    }

    h.until("every hostile object processed", BOUND, |h| {
        neighbours_converged(h, &neighbours)?;
        fed.settled(&OUTCOMES, |case| stored(h, &case.name))
    })
    .await;
    // A Ready object's children pass a real API server's pod validation; an object refused
    // by the operator (invalid from its creation) owns nothing at all.
    let bad_children: Vec<String> = kept
        .iter()
        .filter_map(|Case { name, body }| {
            let o = stored(&h, name)?;
            let uid = o["metadata"]["uid"].as_str().unwrap_or_default();
            let errors = if (OUTCOMES.working)(&o) {
                children_errors(&h, uid)
            } else {
                match owned::owned_by(&h.cluster, NS, uid) {
                    Ok(owned) => owned
                        .into_iter()
                        .map(|c| format!("refused, yet owns {c:?}"))
                        .collect(),
                    Err(e) => vec![e],
                }
            };
            (!errors.is_empty()).then(|| format!("{name}: {errors:?}; object {}", short(body)))
        })
        .collect();
    assert!(
        bad_children.is_empty(),
        "seed {seed}: children built from invalid values:\n{}",
        bad_children.join("\n")
    );
    let ready = kept
        .iter()
        .filter(|c| stored(&h, &c.name).is_some_and(|o| (OUTCOMES.working)(&o)))
        .count();
    eprintln!(
        "seed {seed}: {} stored ({ready} Ready, {} refused by the operator), {} refused by the server",
        kept.len(),
        kept.len() - ready,
        fed.refused
    );
    assert!(h.operator_alive(), "seed {seed}: the operator's task ended");

    let api: kube::Api<ModelService> = kube::Api::namespaced(h.client.clone(), NS);
    for name in kept.iter().map(|c| &c.name).chain(&neighbours) {
        api.delete(name, &kube::api::DeleteParams::default())
            .await
            .expect("delete");
    }
    h.until("deletion", BOUND, |h| owned::gone(&h.cluster))
        .await;
    assert!(h.operator_alive(), "seed {seed}: the operator's task ended");
    assert_eq!(
        panics.load(Ordering::SeqCst),
        0,
        "seed {seed}: something panicked (see the report above)"
    );
}
