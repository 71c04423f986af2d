//! The HTTP layer: hyper 1 over loopback TCP, routing of Kubernetes API paths to the verbs,
//! fault injection and request counting.
//!
//! Paths: `/api`, `/api/v1[/namespaces/<ns>]/<plural>[/<name>[/<sub>]]`, `/apis`,
//! `/apis/<g>`, `/apis/<g>/<v>[/namespaces/<ns>]/<plural>[/<name>[/<sub>]]`, `/version`,
//! `/healthz`, `/readyz`, `/livez`. `/openapi/v2` is an empty document, `/openapi/v3` 404.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch as tokio_watch;

use crate::delete::{self, DeleteOpts};
use crate::discovery;
use crate::error::ApiError;
use crate::faults::RequestInfo;
use crate::read::{self, ListOpts};
use crate::resources::ResourceDef;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::state::State;
use crate::watch::{self, WatchOpts};
use crate::write::{self, PatchKind, WriteOpts};

/// Response body.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

fn full(status: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed_unsync());
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// 404 for a path that names no resource (not for a missing object).
fn no_such_resource() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

fn json_response(status: u16, v: &Value) -> Response<Body> {
    full(status, "application/json", v.to_string())
}

fn error_response(e: &ApiError) -> Response<Body> {
    let mut r = json_response(e.code, &e.to_status());
    if let Some(s) = e.retry_after
        && let Ok(v) = s.to_string().parse()
    {
        r.headers_mut().insert(hyper::header::RETRY_AFTER, v);
    }
    r
}

/// Serve connections from `listener` until `shutdown` flips to true.
pub async fn serve(
    state: Arc<State>,
    listener: TcpListener,
    mut shutdown: tokio_watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        let state = Arc::clone(&state);
        let mut conn_shutdown = shutdown.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let svc = hyper::service::service_fn(move |req| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(handle(state, req).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = conn_shutdown.changed() => {}
            }
        });
    }
}

/// A parsed resource request.
#[derive(Debug)]
struct Target {
    def: ResourceDef,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

enum Route {
    Doc(Value),
    Resource(Box<Target>),
    NotFound,
}

fn route(state: &State, path: &str) -> Route {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let reg = state.registry();
    let (group, version, rest) = match segs.as_slice() {
        ["api"] => return Route::Doc(discovery::core_versions()),
        ["apis"] => return Route::Doc(discovery::group_list(&reg)),
        ["version"] => return Route::Doc(discovery::version()),
        ["apis", g] => return discovery::group(&reg, g).map_or(Route::NotFound, Route::Doc),
        ["api", v] => {
            return discovery::resource_list(&reg, "", v).map_or(Route::NotFound, Route::Doc);
        }
        ["apis", g, v] => {
            return discovery::resource_list(&reg, g, v).map_or(Route::NotFound, Route::Doc);
        }
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Route::NotFound,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, plural, tail @ ..] if !matches!(*plural, "status" | "finalize") => {
            (Some((*ns).to_owned()), [&[*plural][..], tail].concat())
        }
        _ => (None, rest.to_vec()),
    };
    let Some(plural) = rest.first() else {
        return Route::NotFound;
    };
    let Some(def) = reg.get(group, version, plural).cloned() else {
        return Route::NotFound;
    };
    if rest.len() > 3 || (namespace.is_some() && !def.namespaced) {
        return Route::NotFound;
    }
    Route::Resource(Box::new(Target {
        def,
        namespace,
        name: rest.get(1).map(|s| (*s).to_owned()),
        sub: rest.get(2).map(|s| (*s).to_owned()),
    }))
}

fn query_map(q: Option<&str>) -> HashMap<String, String> {
    q.map(form_urlencoded_parse).unwrap_or_default()
}

fn form_urlencoded_parse(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn verb_of(method: &Method, t: &Target, q: &HashMap<String, String>) -> &'static str {
    let watch = q.get("watch").is_some_and(|w| w == "true" || w == "1");
    match (method.as_str(), t.name.is_some()) {
        ("GET", _) if watch => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "unknown",
    }
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let q = query_map(req.uri().query());
    let method = req.method().clone();
    // Every answer below is counted for this client too, so per-client totals add up.
    let client = client_of(req.headers());
    let target = match route(&state, &path) {
        Route::Doc(v) => {
            state
                .counters
                .record_client(&client, "discovery", &path, 200, None, None);
            return json_response(200, &v);
        }
        Route::NotFound if matches!(path.as_str(), "/healthz" | "/readyz" | "/livez") => {
            return full(200, "text/plain", "ok");
        }
        // An empty OpenAPI v2 document (the protobuf encoding of an empty message): clients
        // that validate against it find no schema and leave validation to the server.
        Route::NotFound if path == "/openapi/v2" => {
            state
                .counters
                .record_client(&client, "discovery", &path, 200, None, None);
            return full(
                200,
                "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                Bytes::new(),
            );
        }
        Route::NotFound => {
            let e = no_such_resource();
            state
                .counters
                .record_client(&client, "unknown", &path, 404, None, Some(&e.message));
            return error_response(&e);
        }
        Route::Resource(t) => t,
    };
    let verb = verb_of(&method, &target, &q);
    let resource = match &target.sub {
        Some(s) => format!("{}/{s}", target.def.plural),
        None => target.def.plural.clone(),
    };
    let request = RequestInfo {
        verb,
        resource: &resource,
        name: target.name.as_deref(),
        continued: q.get("continue").is_some_and(|c| !c.is_empty()),
    };
    let object = target.name.as_deref().map(|n| match &target.namespace {
        Some(ns) => format!("{ns}/{n}"),
        None => n.to_owned(),
    });
    let mut cut_after = None;
    if let Some(fault) = state.faults.take(&request) {
        if let Some(l) = fault.latency {
            tokio::time::sleep(l).await;
        }
        if let Some(code) = fault.status {
            state.counters.record_client(
                &client,
                verb,
                &resource,
                code,
                object.as_deref(),
                Some("injected fault"),
            );
            // The real server reports an expired watch inside a 200 stream, not as its status.
            if verb == "watch" && code == 410 {
                return watch_response(watch::expired("injected fault: 410"), None);
            }
            return error_response(&ApiError::injected(code, fault.retry_after));
        }
        cut_after = fault.cut_after;
    }
    let user_agent = req
        .headers()
        .get(hyper::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    // `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`: a read of the
    // metadata only (a Secret's data stays on the server), as the real server answers it.
    let metadata_only = verb == "get"
        && target.sub.is_none()
        && req
            .headers()
            .get(hyper::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("as=PartialObjectMetadata"));
    let content_type = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            let e = ApiError::bad_request(format!("reading the body: {e}"));
            state.counters.record_client(
                &client,
                verb,
                &resource,
                e.code,
                object.as_deref(),
                Some(&e.message),
            );
            return error_response(&e);
        }
    };
    // A bug must not take the connection (or the store lock) down with it: answer 500.
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dispatch(&state, verb, &target, &q, &body, &content_type, user_agent)
    }))
    .unwrap_or_else(|_| {
        Err(ApiError::new(
            500,
            "InternalError",
            "an error on the server has prevented the request from succeeding",
        ))
    });
    let mut message = None;
    let resp = match answer {
        Ok(Answer::Json(200, v)) if metadata_only => {
            state.counters.record_metadata_read(&resource);
            json_response(
                200,
                &serde_json::json!({
                    "apiVersion": "meta.k8s.io/v1",
                    "kind": "PartialObjectMetadata",
                    "metadata": v.get("metadata").cloned().unwrap_or_default(),
                }),
            )
        }
        Ok(Answer::Json(code, v)) => json_response(code, &v),
        Ok(Answer::Text(t)) => full(200, "text/plain", t),
        Ok(Answer::Watch(rx)) => watch_response(rx, cut_after),
        Err(e) => {
            let r = error_response(&e);
            message = Some(e.message);
            r
        }
    };
    state.counters.record_client(
        &client,
        verb,
        &resource,
        resp.status().as_u16(),
        object.as_deref(),
        message.as_deref(),
    );
    resp
}

/// Who sent a request, for the per-client counters: the impersonated user (a kubeconfig's
/// `as:`), else the `User-Agent`, else `unknown`.
fn client_of(headers: &hyper::HeaderMap) -> String {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    header("impersonate-user")
        .or_else(|| header("user-agent"))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A 200 watch stream of the chunks `rx` yields; with `cut_after`, the stream ends then (an
/// injected cut: dropping the receiver also ends the watch task).
fn watch_response(
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    cut_after: Option<Duration>,
) -> Response<Body> {
    use futures::StreamExt;
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    let cut = async move {
        match cut_after {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let stream = stream.take_until(cut);
    let mut r = Response::new(BodyExt::boxed_unsync(StreamBody::new(stream)));
    if let Ok(v) = "application/json".parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

enum Answer {
    Json(u16, Value),
    Text(String),
    Watch(tokio::sync::mpsc::Receiver<Bytes>),
}

fn parse_body(body: &[u8], content_type: &str) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Ok(Value::Null);
    }
    if content_type.contains("yaml") {
        // Clients (kube-rs, kubectl) send apply patches as JSON, which is also YAML.
        if let Ok(v) = serde_json::from_slice(body) {
            return Ok(v);
        }
        let text = std::str::from_utf8(body).map_err(|e| ApiError::bad_request(e.to_string()))?;
        return serde_saphyr::from_str::<Value>(text)
            .map_err(|e| ApiError::bad_request(format!("invalid YAML: {e}")));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid JSON: {e}")))
}

fn dispatch(
    state: &Arc<State>,
    verb: &str,
    t: &Target,
    q: &HashMap<String, String>,
    body: &[u8],
    content_type: &str,
    user_agent: String,
) -> Result<Answer, ApiError> {
    let def = &t.def;
    let ns = t.namespace.clone().unwrap_or_default();
    let name = t.name.clone().unwrap_or_default();
    let sub = t.sub.as_deref();
    if let Some(s) = sub
        && s != "status"
        && !def.extra_subresources.iter().any(|x| x == s)
    {
        return Err(no_such_resource());
    }
    if sub == Some("status") && !def.status_subresource {
        return Err(no_such_resource());
    }
    if def.namespaced && t.namespace.is_none() && !matches!(verb, "list" | "watch") {
        return Err(no_such_resource());
    }
    let labels = LabelSelector::parse(q.get("labelSelector").map_or("", String::as_str))?;
    let fields = FieldSelector::parse(q.get("fieldSelector").map_or("", String::as_str))?;
    let wopts = WriteOpts {
        field_manager: q.get("fieldManager").cloned(),
        force: q.get("force").is_some_and(|f| f == "true"),
        dry_run: q.get("dryRun").is_some_and(|d| !d.is_empty()),
        user_agent,
    };
    if sub == Some(crate::scale::SCALE) {
        return scale(state, verb, t, &ns, &name, body, content_type, &wopts);
    }
    match verb {
        "get" if sub == Some("log") => {
            read::get(state, def, &ns, &name)?;
            Ok(Answer::Text(state.simulator.pod_log(state, &ns, &name)))
        }
        "get" => Ok(Answer::Json(200, read::get(state, def, &ns, &name)?)),
        "list" => {
            let opts = ListOpts {
                labels,
                fields,
                limit: q.get("limit").and_then(|l| l.parse().ok()),
                continue_token: q.get("continue").cloned(),
            };
            Ok(Answer::Json(
                200,
                read::list(state, def, t.namespace.as_deref(), &opts)?,
            ))
        }
        "watch" => {
            let mut fields = fields;
            if let Some(n) = &t.name {
                fields = FieldSelector::parse(&format!("metadata.name={n}"))?;
            }
            let opts = WatchOpts {
                namespace: t.namespace.clone(),
                labels,
                fields,
                resource_version: q.get("resourceVersion").cloned(),
                bookmarks: q.get("allowWatchBookmarks").is_some_and(|b| b == "true"),
                send_initial_events: q.get("sendInitialEvents").is_some_and(|b| b == "true"),
                timeout: q
                    .get("timeoutSeconds")
                    .and_then(|s| s.parse().ok())
                    .map(Duration::from_secs),
            };
            Ok(Answer::Watch(watch::start(
                Arc::clone(state),
                def.clone(),
                opts,
            )))
        }
        "create" if t.name.is_some() => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
        "create" => {
            let v = parse_body(body, content_type)?;
            let dry = wopts.dry_run;
            let created = write::create(state, def, &ns, v, &wopts)?;
            Ok(Answer::Json(
                if dry { 200 } else { 201 },
                read::present(def, created),
            ))
        }
        "update" => {
            let v = parse_body(body, content_type)?;
            Ok(Answer::Json(
                200,
                read::present(def, write::update(state, def, &ns, &name, sub, v, &wopts)?),
            ))
        }
        "patch" => {
            let kind = patch_kind(content_type)?;
            let v = parse_body(
                body,
                if kind == PatchKind::Apply {
                    "yaml"
                } else {
                    "json"
                },
            )?;
            let at = write::At {
                def,
                ns: &ns,
                name: &name,
                sub,
            };
            let out = write::patch(state, &at, kind, &v, &wopts)?;
            let code = if out.created { 201 } else { 200 };
            Ok(Answer::Json(code, read::present(def, out.object)))
        }
        "delete" => {
            let opts = delete_opts(q, body)?;
            let d = delete::delete(state, def, &ns, &name, &opts)?;
            Ok(Answer::Json(
                if d.pending { 202 } else { 200 },
                read::present(def, d.object),
            ))
        }
        "deletecollection" => {
            let opts = delete_opts(q, body)?;
            let all = read::list(
                state,
                def,
                t.namespace.as_deref(),
                &ListOpts {
                    labels,
                    fields,
                    ..ListOpts::default()
                },
            )?;
            let mut items = Vec::new();
            for o in all["items"].as_array().into_iter().flatten() {
                let n = o["metadata"]["name"].as_str().unwrap_or_default();
                let ons = o["metadata"]["namespace"].as_str().unwrap_or_default();
                if let Ok(d) = delete::delete(state, def, ons, n, &opts) {
                    items.push(read::present(def, d.object));
                }
            }
            let mut list = all;
            list["items"] = Value::Array(items);
            Ok(Answer::Json(200, list))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// `/scale` of a scalable workload ([`crate::scale`]).
#[allow(clippy::too_many_arguments)] // the request's parts, as `dispatch` has them
fn scale(
    state: &State,
    verb: &str,
    t: &Target,
    ns: &str,
    name: &str,
    body: &[u8],
    content_type: &str,
    wopts: &WriteOpts,
) -> Result<Answer, ApiError> {
    use crate::scale;
    match verb {
        "get" => Ok(Answer::Json(200, scale::get(state, &t.def, ns, name)?)),
        "update" => {
            let v = parse_body(body, content_type)?;
            Ok(Answer::Json(
                200,
                scale::update(state, &t.def, ns, name, &v, wopts)?,
            ))
        }
        "patch" => {
            let kind = patch_kind(content_type)?;
            let v = parse_body(body, "json")?;
            Ok(Answer::Json(
                200,
                scale::patch(state, &t.def, ns, name, kind, &v, wopts)?,
            ))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// The patch kind of a Content-Type; 415 for an unknown one.
fn patch_kind(content_type: &str) -> Result<PatchKind, ApiError> {
    match content_type.split(';').next().unwrap_or_default().trim() {
        "application/merge-patch+json" => Ok(PatchKind::Merge),
        "application/json-patch+json" => Ok(PatchKind::Json),
        "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
        "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(PatchKind::Apply),
        other => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format: {other}"),
        )),
    }
}

fn delete_opts(q: &HashMap<String, String>, body: &[u8]) -> Result<DeleteOpts, ApiError> {
    let mut o = DeleteOpts {
        propagation: q.get("propagationPolicy").cloned(),
        dry_run: q.get("dryRun").is_some_and(|d| !d.is_empty()),
        ..DeleteOpts::default()
    };
    if !body.is_empty() {
        o = o.with_body(&parse_body(body, "json")?);
    }
    Ok(o)
}
