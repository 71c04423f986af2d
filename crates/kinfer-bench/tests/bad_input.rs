//! Bad input (issue #11): a seeded generator of hostile ZerfooInferenceService specs (huge
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

use serde_json::{Value, json};
use support::{Zerfoo, spec};

/// SplitMix64: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }

    /// One of `typed` most of the time, one of `mistyped` (the wrong JSON type, which the
    /// schema refuses) one time in ten.
    fn pick_typed(&mut self, typed: &[Value], mistyped: &[Value]) -> Value {
        if self.below(10) == 0 {
            self.pick(mistyped)
        } else {
            self.pick(typed)
        }
    }
}

fn hostile_string(rng: &mut Rng) -> Value {
    rng.pick_typed(
        &[
            json!(""),
            json!("   "),
            json!("x".repeat(100_000)),
            json!("модель-模型-🚀-\u{202e}evil"),
            json!("nul\u{0}byte\nnewline\ttab"),
            json!("../../etc/passwd"),
            json!("{\"json\": [1, 2"),
            json!("$(rm -rf /)"),
            json!("UPPER_case.and:colons/slashes"),
        ],
        &[json!(42), json!(null), json!(["a"])],
    )
}

fn hostile_number(rng: &mut Rng) -> Value {
    rng.pick_typed(
        &[
            json!(-1),
            json!(0),
            json!(i32::MIN),
            json!(i32::MAX),
            json!(1_000_000),
            json!(i64::from(i32::MAX) + 1),
            json!(i64::MIN),
        ],
        &[json!(1.5), json!(1e300), json!("3"), json!(null)],
    )
}

fn hostile_quantity(rng: &mut Rng) -> Value {
    rng.pick_typed(
        &[
            json!(""),
            json!("-1"),
            json!("-4Gi"),
            json!("1e400"),
            json!("abc"),
            json!("999999999999999999999999999Ei"),
            json!("0.0000000001m"),
            json!("１Gi"),
            json!("16GB"),
            json!("1.5.5Gi"),
        ],
        &[json!(7), json!(-7), json!(true)],
    )
}

fn hostile_duration(rng: &mut Rng) -> Value {
    rng.pick_typed(
        &[
            json!(""),
            json!("-5s"),
            json!("0s"),
            json!("s"),
            json!("99999999999999999999h"),
            json!("1h2m3s4ms5us6ns"),
            json!("1.5.5s"),
            json!("１s"),
            json!("P1D"),
            json!("10"),
        ],
        &[json!(10), json!(null)],
    )
}

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
            0 => s["modelRef"] = hostile_string(rng),
            1 => s["replicas"] = hostile_number(rng),
            2 => {
                s["minReplicas"] = hostile_number(rng);
                s["maxReplicas"] = hostile_number(rng);
            }
            3 => resources(&mut s)["cpu"] = hostile_quantity(rng),
            4 => resources(&mut s)["memory"] = hostile_quantity(rng),
            5 => resources(&mut s)["gpuMemory"] = hostile_quantity(rng),
            6 => {
                s["healthCheck"] = json!({
                    "path": hostile_string(rng),
                    "interval": hostile_duration(rng),
                    "timeout": hostile_duration(rng),
                });
            }
            7 => {
                s["canary"] =
                    json!({ "modelRef": hostile_string(rng), "weight": hostile_number(rng) });
            }
            8 => {
                s["gatewayRef"] = json!({
                    "name": hostile_string(rng),
                    "namespace": hostile_string(rng),
                    "sectionName": hostile_string(rng),
                });
            }
            9 => s["resources"] = rng.pick(&[json!("4 CPUs"), json!({}), json!(null)]),
            10 => s["unknownField"] = hostile_string(rng),
            _ => {
                s["healthCheck"] = json!({ "path": "/healthz", "interval": hostile_duration(rng), "timeout": "5s" });
            }
        }
    }
    s
}

/// A name for case `i`: short, or as long as a DNS subdomain may be (253), or with dots.
fn hostile_name(rng: &mut Rng, i: usize) -> String {
    let base = format!("bad-{i:03}");
    match rng.below(4) {
        0 => format!("{base}-{}", "x".repeat(253 - base.len() - 1)),
        1 => format!("{base}-{}", "y".repeat(63 - base.len() - 1)),
        2 => format!("{base}.with.dots"),
        _ => base,
    }
}

fn seed() -> u64 {
    std::env::var("KINFER_BAD_INPUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0bad_1e55)
}

/// Why a stored object is acceptable as it stands: Ready, or refused with a named field.
fn settled(o: &Value) -> Result<(), String> {
    let generation = o["metadata"]["generation"].as_i64();
    if o["status"]["observedGeneration"].as_i64() != generation {
        return Err(format!(
            "status not at generation {generation:?}: {}",
            o["status"]
        ));
    }
    if o["status"]["ready"] == true {
        return Ok(());
    }
    let names_a_field = o["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            c["type"] == "ConfigValid"
                && c["status"] == "False"
                && c["message"].as_str().is_some_and(|m| m.contains("spec."))
        });
    if names_a_field {
        Ok(())
    } else {
        Err(format!(
            "neither Ready nor ConfigValid=False naming a spec field: {}",
            o["status"]
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_specs_never_panic_fail_with_a_field_and_spare_their_neighbours() {
    let seed = seed();
    let count = if std::env::var_os("KINFER_FULL_MATRIX").is_some_and(|v| v == "1") {
        400
    } else {
        40
    };
    let mut rng = Rng(seed);
    let mut z = Zerfoo::start().await;
    z.run_operator();
    let neighbours: Vec<String> = (0..3).map(|i| format!("good-{i}")).collect();
    z.create(&neighbours[0], &spec()).expect("valid neighbour");
    let mut stored = Vec::new();
    let mut refused = 0;
    for i in 0..count {
        let name = hostile_name(&mut rng, i);
        let s = hostile_spec(&mut rng);
        match z.create(&name, &s) {
            Ok(_) => stored.push((name, s)),
            Err(kinfer_testkit::Error::Api(e)) => {
                assert!(
                    (400..500).contains(&e.code),
                    "seed {seed}: {name} refused with {e}: {s}"
                );
                refused += 1;
                if std::env::var_os("KINFER_BAD_INPUT_VERBOSE").is_some() {
                    eprintln!("refused {}: {}", name.len(), e.message);
                }
            }
            Err(e) => panic!("seed {seed}: {name}: {e}"),
        }
    }
    z.create(&neighbours[1], &spec()).expect("valid neighbour");
    z.create(&neighbours[2], &spec()).expect("valid neighbour");
    eprintln!(
        "seed {seed}: {} stored, {refused} refused by the server",
        stored.len()
    );
    assert!(
        !stored.is_empty(),
        "seed {seed}: nothing reached the operator"
    );

    let timeout = Duration::from_mins(2);
    z.wait_until("every hostile object processed", timeout, |z| {
        z.converged_some(&neighbours)?;
        for (name, s) in &stored {
            let o = z.service(name).ok_or_else(|| format!("{name} vanished"))?;
            settled(&o).map_err(|e| format!("seed {seed}: {name}: {e}; spec {s}"))?;
        }
        Ok(())
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
