//! Unit tests of `cache.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn scope(c: &str) -> Scope {
    Scope {
        host: "h".into(),
        repository: "r".into(),
        credentials: crate::Credentials::Bearer(c.into()).fingerprint(),
    }
}

#[test]
fn tags_expire_digests_do_not() {
    let clock = ManualClock::new();
    let mut c = InspectionCache::<u32>::new(8, Duration::from_mins(1));
    let s = scope("anon");
    c.store_tag(&s, "v1", "sha256:a", clock.now());
    c.store_digest(&s, "sha256:a", 7, clock.now());
    clock.advance(Duration::from_secs(59));
    let hit = c.lookup_tag(&s, "v1", clock.now()).unwrap();
    assert_eq!((hit.digest.as_str(), hit.fresh), ("sha256:a", true));
    clock.advance(Duration::from_secs(1));
    assert!(!c.lookup_tag(&s, "v1", clock.now()).unwrap().fresh);
    assert_eq!(c.lookup_tag(&s, "v2", clock.now()), None);
    clock.advance(Duration::from_hours(1));
    assert_eq!(c.by_digest(&s, "sha256:a"), Some(7));
    assert_eq!(c.by_digest(&scope("other-creds"), "sha256:a"), None);
}

#[test]
fn least_recently_used_is_evicted() {
    let now = Instant::now();
    let mut c = InspectionCache::<u32>::new(2, Duration::from_secs(1));
    let s = scope("a");
    c.store_digest(&s, "d1", 1, now);
    c.store_digest(&s, "d2", 2, now);
    assert_eq!(c.by_digest(&s, "d1"), Some(1));
    c.store_digest(&s, "d3", 3, now);
    assert_eq!(c.by_digest(&s, "d2"), None);
    assert_eq!(c.by_digest(&s, "d1"), Some(1));
    assert_eq!(c.sizes(), (0, 2));
}

#[test]
fn scope_debug_hides_the_fingerprint() {
    let s = scope("hunter2");
    let text = format!("{s:?}");
    assert!(text.contains("<redacted>"), "{text}");
    let crate::auth::Fingerprint::Keyed(bytes) = &s.credentials else {
        panic!("bearer credentials have a keyed fingerprint");
    };
    assert!(!text.contains(&hex::encode(bytes)), "{text}");
    assert!(!text.contains(&hex::encode(&bytes[..4])), "{text}");
}
