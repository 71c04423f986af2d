//! Why an artifact's Job failed, and what its check-size Job measured (NOTES rows 22, 29).
//! Pure.
//!
//! Contract:
//! - [`failure`]: the pods' own status first (OOM kill: ResourceExhaustion `OOMKilled`; image
//!   pull errors as [`kinfer_state::inspect::classify_image_pull`] says), then the log tail
//!   ([`kinfer_state::inspect::classify_log_tail`]: `StorageFull` ResourceExhaustion,
//!   `SourceAuthFailure` Auth, `SourceNotFound` InvalidSpec, `Forbidden` Infrastructure), then
//!   timeouts (a stalled or timed-out transfer, or the Job's `DeadlineExceeded`:
//!   Infrastructure `DownloadTimeout`, retried), else InvalidSpec `DownloadFailed`. The message
//!   names the Job and quotes the last log line (at most 200 characters), [`redact`]ed: it
//!   lands in conditions and Events.
//! - [`running`]: a pod of a running Job whose status already has a categorised error (an
//!   image pull refused, an OOM kill) surfaces it before the Job gives up.
//! - [`size`]: the last non-empty log line is JSON `{"sizeBytes": N}` with 0 < N ≤ 1 PiB;
//!   anything else is InvalidSpec `InvalidModelSize`.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kinfer_state::inspect::{classify_log_tail, diagnose_pod};
use kinfer_state::{CategorizedError, ErrorCategory, Reason};
use kube::ResourceExt;

/// The largest size a check-size Job may report: 1 PiB.
pub const MAX_SIZE_BYTES: u64 = 1 << 50;

fn err(category: ErrorCategory, reason: &str, message: String) -> CategorizedError {
    CategorizedError::new(category, message).with_reason(Reason::custom(reason.to_owned()))
}

fn last_line(log: &str) -> String {
    let line = log
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    redact(line).chars().take(200).collect()
}

const REDACTED: &str = "<redacted>";

/// Keys whose values are secrets (`key=value`, `key: value`), lower case.
const SECRET_KEYS: [&str; 12] = [
    "token",
    "access_token",
    "hf_token",
    "password",
    "passwd",
    "secret",
    "api_key",
    "apikey",
    "signature",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
];

fn secret_key(key: &str) -> bool {
    let k = key
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_ascii_lowercase();
    SECRET_KEYS
        .iter()
        .any(|s| k == *s || k.ends_with(&format!("_{s}")))
}

fn redact_word(word: &str) -> String {
    // A URL's (or presigned request's) query string: everything after `?`.
    if let Some(q) = word.find('?')
        && (word.contains("://") || word.to_ascii_lowercase().contains("x-amz-"))
    {
        return format!("{}?{REDACTED}", &word[..q]);
    }
    // key=value pairs, `&`-separated.
    let mut out = word
        .split('&')
        .map(|part| match part.split_once('=') {
            Some((k, v)) if secret_key(k) && !v.is_empty() => format!("{k}={REDACTED}"),
            _ => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&");
    // Hugging Face tokens.
    let mut from = 0;
    while let Some(i) = out[from..].find("hf_").map(|i| i + from) {
        let tail = &out[i + 3..];
        let len = tail
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(tail.len());
        if len >= 8 {
            out = format!("{}hf_{REDACTED}{}", &out[..i], &tail[len..]);
        }
        from = i + 3;
    }
    out
}

/// `line` with what looks like a secret replaced by `<redacted>`: URL query strings
/// (presigned `X-Amz-*` URLs), `hf_…` tokens, the values of `token=`, `password=`, `secret=`,
/// `signature=`-like keys (also `key: value`), and the word after `Bearer`.
pub fn redact(line: &str) -> String {
    let mut out = Vec::new();
    let mut hide_next = false;
    for word in line.split(' ') {
        if hide_next && !word.is_empty() {
            out.push(REDACTED.to_owned());
            hide_next = false;
            continue;
        }
        let lower = word.to_ascii_lowercase();
        hide_next = lower == "bearer"
            || lower == "basic"
            || lower
                .strip_suffix(':')
                .is_some_and(|k| secret_key(k.trim_matches('"')));
        out.push(redact_word(word));
    }
    out.join(" ")
}

fn timed_out(job: &Job, log: &str) -> bool {
    let l = log.to_ascii_lowercase();
    let deadline = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Failed" && c.reason.as_deref() == Some("DeadlineExceeded"))
        });
    deadline
        || ["stalled", "stall timeout", "timed out", "read timeout"]
            .iter()
            .any(|n| l.contains(n))
}

/// A pod error of a running Job, if any; see the module contract.
pub fn running(pods: &[Pod]) -> Option<CategorizedError> {
    pods.iter().find_map(|p| diagnose_pod(p).error)
}

/// Why Job `job` failed; see the module contract.
pub fn failure(job: &Job, pods: &[Pod], log: &str) -> CategorizedError {
    let name = job.name_any();
    if let Some(e) = running(pods) {
        return e;
    }
    let line = last_line(log);
    let quoted = if line.is_empty() {
        String::new()
    } else {
        format!(": {line}")
    };
    if let Some((category, reason)) = classify_log_tail(log) {
        return err(category, reason, format!("job {name} failed{quoted}"));
    }
    if timed_out(job, log) {
        return err(
            ErrorCategory::Infrastructure,
            "DownloadTimeout",
            format!("job {name} timed out{quoted}"),
        );
    }
    err(
        ErrorCategory::InvalidSpec,
        "DownloadFailed",
        format!("job {name} failed{quoted}"),
    )
}

/// The size a check-size Job reported; see the module contract.
pub fn size(log: &str) -> Result<u64, CategorizedError> {
    let line = last_line(log);
    let invalid = |why: String| err(ErrorCategory::InvalidSpec, "InvalidModelSize", why);
    let v: serde_json::Value = serde_json::from_str(&line)
        .map_err(|_| invalid(format!("the size check printed no size: {line:?}")))?;
    let bytes = v["sizeBytes"]
        .as_u64()
        .ok_or_else(|| invalid(format!("the size check printed no sizeBytes: {line:?}")))?;
    if bytes == 0 || bytes > MAX_SIZE_BYTES {
        return Err(invalid(format!(
            "the size check reported {bytes} bytes (expected 1 byte to 1 PiB)"
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod redact_tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_from_quoted_log_lines() {
        let cases = [
            (
                "GET https://bucket.s3.amazonaws.com/m.bin?X-Amz-Algorithm=AWS4&X-Amz-Signature=abc123 failed",
                "GET https://bucket.s3.amazonaws.com/m.bin?<redacted> failed",
            ),
            (
                "403 for url https://huggingface.co/api/models/org/m?token=s3cr3t",
                "403 for url https://huggingface.co/api/models/org/m?<redacted>",
            ),
            (
                "auth with hf_AbCdEfGhIjKlMnOp,hf_x,hf_QrStUvWxYz12 failed",
                "auth with hf_<redacted>,hf_x,hf_<redacted> failed",
            ),
            (
                "login token=abc password=hunter2 user=bob",
                "login token=<redacted> password=<redacted> user=bob",
            ),
            (
                "X-Amz-Credential=AKIA/2026 X-Amz-Security-Token=zzz",
                "X-Amz-Credential=<redacted> X-Amz-Security-Token=<redacted>",
            ),
            (
                "header Authorization: Bearer eyJhbGciOi rejected",
                "header Authorization: Bearer <redacted> rejected",
            ),
            ("password: hunter2", "password: <redacted>"),
            (
                "OSError: [Errno 28] No space left on device",
                "OSError: [Errno 28] No space left on device",
            ),
        ];
        for (line, want) in cases {
            assert_eq!(redact(line), want, "{line}");
        }
        // What reaches the condition message is redacted too.
        let log = "fetching\nerror: 401 https://h/m?X-Amz-Signature=deadbeef\n";
        let e = failure(&Job::default(), &[], log);
        assert!(!e.message.contains("deadbeef"), "{}", e.message);
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::JobStatus;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus, PodStatus,
    };
    use kube::api::ObjectMeta;

    use super::*;

    fn job(reason: Option<&str>) -> Job {
        Job {
            metadata: ObjectMeta {
                name: Some("a-download-1".into()),
                ..ObjectMeta::default()
            },
            status: Some(JobStatus {
                conditions: Some(vec![k8s_openapi::api::batch::v1::JobCondition {
                    type_: "Failed".into(),
                    status: "True".into(),
                    reason: reason.map(str::to_owned),
                    ..Default::default()
                }]),
                ..JobStatus::default()
            }),
            ..Job::default()
        }
    }

    fn pod(state: ContainerState) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus {
                phase: Some("Failed".into()),
                container_statuses: Some(vec![ContainerStatus {
                    name: "download".into(),
                    state: Some(state),
                    ..ContainerStatus::default()
                }]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    fn class(e: &CategorizedError) -> (ErrorCategory, String) {
        (e.category, e.reason.to_string())
    }

    #[test]
    fn failure_classes() {
        let j = job(Some("BackoffLimitExceeded"));
        let cases = [
            (
                "OSError: [Errno 28] No space left on device",
                ErrorCategory::ResourceExhaustion,
                "StorageFull",
            ),
            (
                "huggingface_hub.errors.GatedRepoError: Cannot access gated repo for url",
                ErrorCategory::Auth,
                "SourceAuthFailure",
            ),
            (
                "RepositoryNotFoundError: 404 Client Error. Repository Not Found",
                ErrorCategory::InvalidSpec,
                "SourceNotFound",
            ),
            (
                "download stalled: no progress for 120s",
                ErrorCategory::Infrastructure,
                "DownloadTimeout",
            ),
            (
                "exit status 3",
                ErrorCategory::InvalidSpec,
                "DownloadFailed",
            ),
        ];
        for (log, category, reason) in cases {
            let e = failure(&j, &[], &format!("starting\n{log}\n"));
            assert_eq!(class(&e), (category, reason.to_owned()), "{log}");
            assert!(e.message.contains(log), "{}", e.message);
        }
        let deadline = failure(&job(Some("DeadlineExceeded")), &[], "");
        assert_eq!(class(&deadline).1, "DownloadTimeout");
    }

    #[test]
    fn pod_status_wins_over_the_log() {
        let oom = pod(ContainerState {
            terminated: Some(ContainerStateTerminated {
                reason: Some("OOMKilled".into()),
                exit_code: 137,
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        });
        let e = failure(&job(None), &[oom], "No space left on device");
        assert_eq!(
            class(&e),
            (ErrorCategory::ResourceExhaustion, "OOMKilled".into())
        );
        let pull = pod(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some("ImagePullBackOff".into()),
                message: Some("pull access denied: 401 Unauthorized".into()),
            }),
            ..ContainerState::default()
        });
        assert_eq!(
            running(&[pull]).map(|e| e.category),
            Some(ErrorCategory::Auth)
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(
            size("checking\n{\"url\":\"hf://a/b\",\"sizeBytes\":2147483648}\n").unwrap(),
            1 << 31
        );
        for bad in [
            "",
            "not json",
            "{\"sizeBytes\":0}",
            "{\"sizeBytes\":-1}",
            &format!("{{\"sizeBytes\":{}}}", MAX_SIZE_BYTES + 1),
        ] {
            let e = size(bad).unwrap_err();
            assert_eq!(
                class(&e),
                (ErrorCategory::InvalidSpec, "InvalidModelSize".into()),
                "{bad}"
            );
        }
    }
}
