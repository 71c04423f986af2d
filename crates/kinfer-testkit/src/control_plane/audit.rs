//! The API server's audit log, read back: one [`Request`] per request the server answered, so
//! tests can count requests per user, verb and resource.
//!
//! The control plane logs every request at the `Metadata` level (no bodies, so no Secret
//! values), as JSON lines, without the `RequestReceived` stage: a request appears once with
//! `ResponseComplete` (or `Panic`), a watch also once with `ResponseStarted` while it is open.
//! [`AuditLog::requests`] keeps one entry per `auditID`.
//!
//! May: read the log file. May not: write it or talk to the server.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::Error;

/// The audit policy the control plane starts with.
pub const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
";

/// One request, as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The effective user: the impersonated one where the client impersonated.
    pub user: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, ...
    pub verb: String,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource (plural), empty for non-resource URLs.
    pub resource: String,
    /// The subresource (`status`, `log`, ...), empty for the main resource.
    pub subresource: String,
    /// The namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// The object's name, where the request named one.
    pub name: String,
    /// The HTTP status code (0 while a watch is still open).
    pub code: u16,
    /// The request URI (path and query).
    pub uri: String,
    /// The client's user agent.
    pub user_agent: String,
}

/// The audit log file of one control plane.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    #[serde(rename = "auditID", default)]
    audit_id: String,
    #[serde(default)]
    stage: String,
    #[serde(default)]
    verb: String,
    #[serde(default)]
    request_uri: String,
    #[serde(default)]
    user_agent: String,
    #[serde(default)]
    user: UserInfo,
    #[serde(default)]
    impersonated_user: Option<UserInfo>,
    #[serde(default)]
    object_ref: Option<ObjectRef>,
    #[serde(default)]
    response_status: Option<ResponseStatus>,
}

#[derive(Deserialize, Default)]
struct UserInfo {
    #[serde(default)]
    username: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ObjectRef {
    #[serde(default)]
    resource: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    api_group: String,
    #[serde(default)]
    subresource: String,
}

#[derive(Deserialize, Default)]
struct ResponseStatus {
    #[serde(default)]
    code: u16,
}

impl AuditLog {
    /// The log at `path`.
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
        }
    }

    /// Where the log is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every request logged so far, in log order, once each (a watch that has ended appears
    /// with its final code). A line cut short by a concurrent write is passed over.
    pub fn requests(&self) -> Result<Vec<Request>, Error> {
        let text = std::fs::read_to_string(&self.path)?;
        let mut seen = BTreeSet::new();
        let mut out: Vec<Request> = Vec::new();
        let mut index = std::collections::HashMap::new();
        for line in text.lines() {
            let Ok(event) = serde_json::from_str::<Event>(line) else {
                continue;
            };
            let request = event.request();
            if seen.insert(event.audit_id.clone()) {
                index.insert(event.audit_id, out.len());
                out.push(request);
            } else if (event.stage == "ResponseComplete" || event.stage == "Panic")
                && let Some(&i) = index.get(&event.audit_id)
            {
                out[i] = request;
            }
        }
        Ok(out)
    }

    /// How many requests `user` made with `verb` on `resource` (any group, namespace and
    /// subresource `""`); `resource` `"pods/log"` names a subresource.
    pub fn count(&self, user: &str, verb: &str, resource: &str) -> Result<usize, Error> {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        Ok(self
            .requests()?
            .iter()
            .filter(|r| {
                r.user == user
                    && r.verb == verb
                    && r.resource == resource
                    && r.subresource == subresource
            })
            .count())
    }
}

impl Event {
    fn request(&self) -> Request {
        let user = self
            .impersonated_user
            .as_ref()
            .map_or(&self.user.username, |u| &u.username)
            .clone();
        let o = self.object_ref.as_ref();
        let field = |f: fn(&ObjectRef) -> &String| o.map(f).cloned().unwrap_or_default();
        Request {
            user,
            verb: self.verb.clone(),
            group: field(|o| &o.api_group),
            resource: field(|o| &o.resource),
            subresource: field(|o| &o.subresource),
            namespace: field(|o| &o.namespace),
            name: field(|o| &o.name),
            code: self.response_status.as_ref().map_or(0, |s| s.code),
            uri: self.request_uri.clone(),
            user_agent: self.user_agent.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_request_per_audit_id_with_the_impersonated_user() {
        let dir = std::env::temp_dir().join(format!("kinfer-audit-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.log");
        let lines = [
            r#"{"auditID":"a","stage":"ResponseStarted","verb":"watch","requestURI":"/api/v1/pods?watch=1","user":{"username":"admin"},"objectRef":{"resource":"pods","apiVersion":"v1"}}"#,
            r#"{"auditID":"b","stage":"ResponseComplete","verb":"get","requestURI":"/api/v1/namespaces/n/pods/p/log","user":{"username":"admin"},"impersonatedUser":{"username":"system:serviceaccount:n:op"},"objectRef":{"resource":"pods","namespace":"n","name":"p","subresource":"log"},"responseStatus":{"code":200}}"#,
            r#"{"auditID":"a","stage":"ResponseComplete","verb":"watch","requestURI":"/api/v1/pods?watch=1","user":{"username":"admin"},"objectRef":{"resource":"pods"},"responseStatus":{"code":200}}"#,
            r#"{"auditID":"c","stage":"Respon"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let log = AuditLog::new(&path);
        let requests = log.requests().unwrap();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].verb, "watch");
        assert_eq!(
            requests[0].code, 200,
            "the completed watch replaces its start"
        );
        assert_eq!(requests[1].user, "system:serviceaccount:n:op");
        assert_eq!(
            log.count("system:serviceaccount:n:op", "get", "pods/log")
                .unwrap(),
            1
        );
        assert_eq!(log.count("admin", "get", "pods").unwrap(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
