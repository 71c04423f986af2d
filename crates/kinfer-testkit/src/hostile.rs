//! Hostile values for the bad-input suites, in one place for every operator: a
//! small seeded generator (deterministic, so a failure names its seed and can be replayed)
//! and the kinds of hostile field values an API user can send: huge strings, unicode and
//! control characters, negative and enormous numbers, malformed quantities and durations,
//! names as long as a DNS subdomain may be, and (one time in ten) the wrong JSON type, which
//! the schema refuses. Each suite mutates its own valid spec with these.
//!
//! The suites' common frame is here too: [`feed`] creates the seeded cases ([`count`]: 40, or
//! 400 with `KINFER_FULL_MATRIX=1`) and checks every refusal names its cause, and
//! [`Fed::settled`] checks, per kind ([`Outcomes`]), that every stored one ended working or
//! failed with a condition naming the offending field. Failures name the seed.

use serde_json::{Value, json};

/// SplitMix64: small, seedable, good enough to pick mutations.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next_u64() % n as u64).unwrap_or(0)
    }

    /// One of `items` (not empty).
    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }

    /// One of `typed` most of the time, one of `mistyped` (the wrong JSON type, which the
    /// schema refuses) one time in ten.
    pub fn pick_typed(&mut self, typed: &[Value], mistyped: &[Value]) -> Value {
        if self.below(10) == 0 {
            self.pick(mistyped)
        } else {
            self.pick(typed)
        }
    }
}

/// A hostile string: empty, blank, 100,000 characters, unicode with a bidi override, control
/// characters, a path, broken JSON, a shell command, mixed case and punctuation.
pub fn string(rng: &mut Rng) -> Value {
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

/// A hostile integer: negative, zero, the 32- and 64-bit extremes, one past `i32::MAX`.
pub fn number(rng: &mut Rng) -> Value {
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

/// A hostile quantity string: empty, negative, out of range, malformed, full-width digits,
/// `GB` where Kubernetes spells `G`.
pub fn quantity(rng: &mut Rng) -> Value {
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
            json!("1.5e-2147483648"),
        ],
        &[json!(7), json!(-7), json!(true)],
    )
}

/// A hostile Go duration string: empty, negative, zero, no number, overflowing, ISO 8601,
/// no unit.
pub fn duration(rng: &mut Rng) -> Value {
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

/// A name for case `i`: short, or as long as a DNS subdomain may be (253), or with dots.
pub fn name(rng: &mut Rng, i: usize) -> String {
    let base = format!("bad-{i:03}");
    match rng.below(4) {
        0 => format!("{base}-{}", "x".repeat(253 - base.len() - 1)),
        1 => format!("{base}-{}", "y".repeat(63 - base.len() - 1)),
        2 => format!("{base}.with.dots"),
        _ => base,
    }
}

/// The seed: `KINFER_BAD_INPUT_SEED`, else a fixed one (the CI run is reproducible).
pub fn seed() -> u64 {
    std::env::var("KINFER_BAD_INPUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0bad_1e55)
}

/// How many hostile objects a suite feeds: 40 in CI, 400 with `KINFER_FULL_MATRIX=1`.
pub fn count() -> usize {
    if std::env::var_os("KINFER_FULL_MATRIX").is_some_and(|v| v == "1") {
        400
    } else {
        40
    }
}

/// One hostile object: its name and what the suite sends for it (a spec, or a whole object).
#[derive(Debug, Clone)]
pub struct Case {
    /// `metadata.name`.
    pub name: String,
    /// The spec or object, as the suite's `create` takes it.
    pub body: Value,
}

/// What [`feed`] left behind: the seed of the run, the cases the server stored (the operator
/// must settle each: [`Fed::settled`]) and how many it refused.
#[derive(Debug, Clone)]
pub struct Fed {
    /// The seed (every failure message names it, so the run can be replayed).
    pub seed: u64,
    /// The cases the server stored, in the order they were created.
    pub stored: Vec<Case>,
    /// How many the server refused (each with a cause: [`names_its_cause`]).
    pub refused: usize,
}

/// Feeds [`count`] hostile cases, made by `make` from the [`seed`]ed generator and the case's
/// index, through `create`. Each is refused with an answer naming its cause
/// ([`names_its_cause`]) or stored; any other answer panics with the seed and the case, and
/// so does a run where nothing was stored (nothing would reach the operator).
/// `KINFER_BAD_INPUT_VERBOSE` prints each refusal.
pub fn feed(
    mut make: impl FnMut(&mut Rng, usize) -> Case,
    mut create: impl FnMut(&Case) -> Result<Value, crate::Error>,
) -> Fed {
    let seed = seed();
    let mut rng = Rng(seed);
    let mut fed = Fed {
        seed,
        stored: Vec::new(),
        refused: 0,
    };
    for i in 0..count() {
        let case = make(&mut rng, i);
        let name = &case.name;
        match create(&case) {
            Ok(_) => fed.stored.push(case),
            Err(crate::Error::Api(e)) => {
                assert!(
                    names_its_cause(&e),
                    "seed {seed}: {name} refused with {e} ({:?}): {}",
                    e.details,
                    short(&case.body)
                );
                fed.refused += 1;
                if std::env::var_os("KINFER_BAD_INPUT_VERBOSE").is_some() {
                    eprintln!("refused {name}: {}", short(&Value::String(e.message)));
                }
            }
            Err(e) => panic!("seed {seed}: {name}: {e}: {}", short(&case.body)),
        }
    }
    eprintln!(
        "seed {seed}: {} stored, {} refused by the server",
        fed.stored.len(),
        fed.refused
    );
    assert!(
        !fed.stored.is_empty(),
        "seed {seed}: nothing reached the operator"
    );
    fed
}

impl Fed {
    /// `Ok` when every stored case, as `live` finds it now, is [`Outcomes::settled`]; else
    /// every one that is not (or is gone), with the seed and what was sent.
    pub fn settled(
        &self,
        outcomes: &Outcomes,
        live: impl Fn(&Case) -> Option<std::sync::Arc<Value>>,
    ) -> Result<(), String> {
        let unsettled: Vec<String> = self
            .stored
            .iter()
            .filter_map(|case| {
                let problem = match live(case) {
                    None => "vanished".to_owned(),
                    Some(o) => outcomes.settled(&o).err()?,
                };
                Some(format!(
                    "{} {}: {problem}; sent {}",
                    case.body["kind"].as_str().unwrap_or("object"),
                    case.name,
                    short(&case.body)
                ))
            })
            .collect();
        if unsettled.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "seed {}: {} unsettled:\n{}",
                self.seed,
                unsettled.len(),
                unsettled.join("\n")
            ))
        }
    }
}

/// A refusal that says why: a 422 with a non-empty field in every cause (schema, names,
/// labels), or a 400 with a message (a value of the wrong JSON type).
pub fn names_its_cause(e: &crate::ApiError) -> bool {
    match e.code {
        422 => e.details.as_ref().is_some_and(|d| {
            d["causes"].as_array().is_some_and(|causes| {
                !causes.is_empty()
                    && causes
                        .iter()
                        .all(|c| c["field"].as_str().is_some_and(|f| !f.is_empty()))
            })
        }),
        400 => !e.message.is_empty(),
        _ => false,
    }
}

/// How a kind shows what became of a hostile object, for [`Outcomes::settled`]: working as
/// asked, or failed with a `False` condition whose message names the offending field.
#[derive(Debug, Clone, Copy)]
pub struct Outcomes {
    /// Whether the object works as asked (Ready, Running).
    pub working: fn(&Value) -> bool,
    /// Whether the object is in a failed state, where the naming condition counts (`|_| true`
    /// for a kind whose conditions alone tell).
    pub failed: fn(&Value) -> bool,
    /// The type of the condition that names the field; `None`: any condition.
    pub condition: Option<&'static str>,
    /// What the condition's message names: field path prefixes such as `spec.`.
    pub fields: &'static [&'static str],
}

impl Outcomes {
    /// `Ok` when `o` is processed at its generation and either [`Self::working`], or
    /// [`Self::failed`] with a `False` [`Self::condition`] whose message contains one of
    /// [`Self::fields`]; else why not.
    pub fn settled(&self, o: &Value) -> Result<(), String> {
        let generation = o["metadata"]["generation"].as_i64();
        if generation.is_none() || o["status"]["observedGeneration"].as_i64() != generation {
            return Err(format!(
                "status not at generation {generation:?}: {}",
                o["status"]
            ));
        }
        if (self.working)(o) {
            return Ok(());
        }
        let names_a_field = o["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| {
                self.condition.is_none_or(|t| c["type"] == t)
                    && c["status"] == "False"
                    && c["message"]
                        .as_str()
                        .is_some_and(|m| self.fields.iter().any(|f| m.contains(f)))
            });
        if (self.failed)(o) && names_a_field {
            Ok(())
        } else {
            Err(format!(
                "neither working nor failed with a False {} condition naming {:?}: {}",
                self.condition.unwrap_or("(any)"),
                self.fields,
                o["status"]
            ))
        }
    }
}

/// `v` with every string longer than 80 characters cut (failure messages stay readable; the
/// seed replays the full value).
pub fn short(v: &Value) -> Value {
    match v {
        Value::String(s) if s.chars().count() > 80 => {
            let head: String = s.chars().take(40).collect();
            json!(format!("{head}…({} chars)", s.chars().count()))
        }
        Value::Array(a) => Value::Array(a.iter().map(short).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), short(v))).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApiError;

    const READY_OR_CONFIG: Outcomes = Outcomes {
        working: |o| o["status"]["ready"] == true,
        failed: |_| true,
        condition: Some("ConfigValid"),
        fields: &["spec.", "metadata.annotations["],
    };

    fn object(status: &Value) -> Value {
        json!({ "metadata": { "name": "x", "generation": 2 }, "status": status })
    }

    fn refused(message: &str) -> Value {
        json!({ "observedGeneration": 2, "conditions": [
            { "type": "ConfigValid", "status": "False", "message": message },
        ] })
    }

    #[test]
    fn settled_wants_the_generation_then_working_or_a_condition_naming_a_field() {
        let o = READY_OR_CONFIG;
        assert!(o.settled(&object(&json!({ "ready": true }))).is_err());
        assert!(
            o.settled(&json!({ "metadata": {}, "status": { "ready": true } }))
                .is_err()
        );
        assert!(
            o.settled(&object(&json!({ "observedGeneration": 2, "ready": true })))
                .is_ok()
        );
        assert!(o.settled(&object(&refused("spec.replicas: -1"))).is_ok());
        assert!(
            o.settled(&object(&refused("metadata.annotations[x]: bad")))
                .is_ok()
        );
        assert!(o.settled(&object(&refused("something is wrong"))).is_err());
        let other_type = json!({ "observedGeneration": 2, "conditions": [
            { "type": "Ready", "status": "False", "message": "spec.replicas" },
        ] });
        assert!(o.settled(&object(&other_type)).is_err());
        let any_type = Outcomes {
            condition: None,
            ..o
        };
        assert!(any_type.settled(&object(&other_type)).is_ok());
        let never_failed = Outcomes {
            failed: |_| false,
            ..o
        };
        assert!(
            never_failed
                .settled(&object(&refused("spec.replicas")))
                .is_err()
        );
    }

    #[test]
    fn a_refusal_names_its_cause_with_fields_or_a_message() {
        let mut e = ApiError::new(422, "Invalid", "bad");
        assert!(!names_its_cause(&e), "422 without causes");
        e.details = Some(json!({ "causes": [{ "field": "spec.replicas" }] }));
        assert!(names_its_cause(&e));
        e.details = Some(json!({ "causes": [{ "field": "spec.replicas" }, { "field": "" }] }));
        assert!(!names_its_cause(&e), "a cause without a field");
        assert!(names_its_cause(&ApiError::new(
            400,
            "BadRequest",
            "wrong type"
        )));
        assert!(!names_its_cause(&ApiError::new(400, "BadRequest", "")));
        assert!(!names_its_cause(&ApiError::new(409, "Conflict", "exists")));
    }

    #[test]
    fn feed_keeps_the_stored_counts_the_refused_and_reports_the_unsettled() {
        let fed = feed(
            |rng, i| Case {
                name: name(rng, i),
                body: json!({ "kind": "Thing", "i": i }),
            },
            |case| {
                if case.body["i"].as_u64().is_some_and(|i| i % 2 == 0) {
                    Ok(case.body.clone())
                } else {
                    Err(ApiError::new(400, "BadRequest", "wrong type").into())
                }
            },
        );
        assert_eq!(fed.stored.len(), count() / 2);
        assert_eq!(fed.refused, count() / 2);
        let ready = Outcomes {
            working: |o| o["status"]["ready"] == true,
            ..READY_OR_CONFIG
        };
        let settled = object(&json!({ "observedGeneration": 2, "ready": true }));
        assert_eq!(
            fed.settled(&ready, |_| Some(std::sync::Arc::new(settled.clone()))),
            Ok(())
        );
        let err = fed
            .settled(&ready, |c| {
                (c.name != fed.stored[0].name).then(|| std::sync::Arc::new(settled.clone()))
            })
            .unwrap_err();
        assert!(
            err.contains(&format!("seed {}: 1 unsettled", fed.seed))
                && err.contains(&format!("Thing {}: vanished", fed.stored[0].name)),
            "{err}"
        );
    }

    #[test]
    #[should_panic(expected = "refused with 409 Conflict")]
    fn feed_panics_on_a_refusal_without_a_cause() {
        feed(
            |rng, i| Case {
                name: name(rng, i),
                body: json!({}),
            },
            |_| Err(ApiError::new(409, "Conflict", "exists").into()),
        );
    }

    #[test]
    fn short_cuts_long_strings_only() {
        let v = json!({ "a": ["x".repeat(100), "ok"], "n": 1 });
        assert_eq!(
            short(&v),
            json!({ "a": [format!("{}…(100 chars)", "x".repeat(40)), "ok"], "n": 1 })
        );
    }
}
