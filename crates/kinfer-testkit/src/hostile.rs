//! Hostile values for the bad-input suites of issue #11, in one place for every operator: a
//! small seeded generator (deterministic, so a failure names its seed and can be replayed)
//! and the kinds of hostile field values an API user can send: huge strings, unicode and
//! control characters, negative and enormous numbers, malformed quantities and durations,
//! names as long as a DNS subdomain may be, and (one time in ten) the wrong JSON type, which
//! the schema refuses. Each suite mutates its own valid spec with these.

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
