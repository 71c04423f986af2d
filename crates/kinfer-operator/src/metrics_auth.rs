//! Who may read `/metrics`: the API server decides, as for controller-runtime's secure
//! metrics.
//!
//! Contract: [`MetricsAuth::check`] takes a request's `Authorization` header. Without a
//! bearer token the answer is [`Access::Unauthenticated`] (401). The token is reviewed with a
//! `TokenReview` (`authentication.k8s.io/v1`, the API server's default audiences); one the API
//! server does not authenticate is 401. The user it names (name, uid, groups, extra) is then
//! checked with a `SubjectAccessReview` (`authorization.k8s.io/v1`) for `get` on the
//! non-resource URL `/metrics`, what each install's `<operator>-metrics-reader` ClusterRole
//! grants:
//! allowed is [`Access::Allowed`], denied [`Access::Forbidden`] (403). A review that fails
//! (the API server unreachable, the operator's RBAC lacking `create` on `tokenreviews` or
//! `subjectaccessreviews`) is [`Access::Unavailable`] (500), never an allowance. Decisions are
//! cached by the token's SHA-256 (never the token itself) for [`ALLOW_TTL`] when allowed and
//! [`DENY_TTL`] when not, at most [`CACHE_ENTRIES`] entries (expired ones are dropped first,
//! then all), so a scrape every few seconds costs two reviews a minute; failures are not
//! cached. Tokens, and the review's messages, are never logged or echoed to the client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};
use sha2::{Digest, Sha256};

/// How long an allowed token is trusted without a new review.
pub const ALLOW_TTL: Duration = Duration::from_mins(1);
/// How long a refused token is refused without a new review.
pub const DENY_TTL: Duration = Duration::from_secs(10);
/// The most decisions kept.
pub const CACHE_ENTRIES: usize = 4096;
/// The non-resource URL a scraper needs `get` on.
pub const METRICS_PATH: &str = "/metrics";
/// The longest bearer token reviewed (a service account token is about 1 KiB).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// What a request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The token's user may `get` `/metrics`.
    Allowed,
    /// No bearer token, or one the API server does not authenticate: 401.
    Unauthenticated,
    /// The user may not `get` `/metrics`: 403.
    Forbidden,
    /// A review failed: 500, not cached.
    Unavailable,
}

/// The cached decisions, by token digest; see the module contract.
#[derive(Debug, Default)]
struct Decisions(Mutex<HashMap<[u8; 32], (Access, Instant)>>);

impl Decisions {
    fn get(&self, key: &[u8; 32], now: Instant) -> Option<Access> {
        let map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(key)
            .and_then(|(access, until)| (*until > now).then_some(*access))
    }

    fn put(&self, key: [u8; 32], access: Access, now: Instant) {
        let ttl = if access == Access::Allowed {
            ALLOW_TTL
        } else {
            DENY_TTL
        };
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.len() >= CACHE_ENTRIES {
            map.retain(|_, (_, until)| *until > now);
            if map.len() >= CACHE_ENTRIES {
                map.clear();
            }
        }
        map.insert(key, (access, now + ttl));
    }
}

/// Reviews scrapers' tokens with the API server; see the module contract.
#[derive(Clone)]
pub struct MetricsAuth {
    client: Client,
    cache: Arc<Decisions>,
}

impl std::fmt::Debug for MetricsAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsAuth").finish_non_exhaustive()
    }
}

/// The bearer token of an `Authorization` header value, if it carries one.
pub fn bearer(header: Option<&[u8]>) -> Option<&str> {
    let value = std::str::from_utf8(header?).ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && token.len() <= MAX_TOKEN_BYTES)
        .then_some(token)
}

impl MetricsAuth {
    /// Reviews through `client` (the operator's own identity).
    pub fn new(client: Client) -> Self {
        Self {
            client,
            cache: Arc::default(),
        }
    }

    /// What the request with this `Authorization` header may do.
    pub async fn check(&self, authorization: Option<&[u8]>) -> Access {
        let Some(token) = bearer(authorization) else {
            return Access::Unauthenticated;
        };
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = Instant::now();
        if let Some(access) = self.cache.get(&key, now) {
            return access;
        }
        let access = self.review(token).await;
        if access != Access::Unavailable {
            self.cache.put(key, access, now);
        }
        access
    }

    async fn review(&self, token: &str) -> Access {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let reviewed = match Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %reason(&e), "reviewing a metrics scraper's token failed");
                return Access::Unavailable;
            }
        };
        let status = reviewed.status.unwrap_or_default();
        let Some(user) = status.user.filter(|_| status.authenticated == Some(true)) else {
            return Access::Unauthenticated;
        };
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                uid: user.uid,
                groups: user.groups,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(METRICS_PATH.to_owned()),
                    verb: Some("get".to_owned()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        match Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await
        {
            Ok(r) if r.status.as_ref().is_some_and(|s| s.allowed) => Access::Allowed,
            Ok(_) => Access::Forbidden,
            Err(e) => {
                tracing::warn!(error = %reason(&e), "authorizing a metrics scraper failed");
                Access::Unavailable
            }
        }
    }
}

/// A review error for the log: the API server's status (never the request, which holds the
/// token).
fn reason(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} ({})", s.message, s.code),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bearer_token_is_taken() {
        assert_eq!(bearer(Some(b"Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some(b"bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some(b"Basic abc")), None);
        assert_eq!(bearer(Some(b"Bearer ")), None);
        assert_eq!(bearer(Some(b"Bearer")), None);
        assert_eq!(bearer(None), None);
        assert_eq!(bearer(Some(&[0xff, 0xfe])), None);
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
        assert_eq!(bearer(Some(long.as_bytes())), None);
    }

    #[test]
    fn decisions_expire_by_outcome_and_stay_bounded() {
        let d = Decisions::default();
        let t0 = Instant::now();
        d.put([1; 32], Access::Allowed, t0);
        d.put([2; 32], Access::Forbidden, t0);
        let later = t0 + DENY_TTL;
        assert_eq!(d.get(&[1; 32], later), Some(Access::Allowed));
        assert_eq!(
            d.get(&[2; 32], later),
            None,
            "a refusal is reviewed again sooner"
        );
        assert_eq!(d.get(&[1; 32], t0 + ALLOW_TTL), None);
        for i in 0..=CACHE_ENTRIES {
            let mut key = [0; 32];
            key[..8].copy_from_slice(&(i as u64).to_le_bytes());
            d.put(key, Access::Allowed, t0);
        }
        let len = d.0.lock().unwrap().len();
        assert!(len <= CACHE_ENTRIES, "{len} entries");
    }
}
