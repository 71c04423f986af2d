//! Test support: fixtures, schema validation against the upstream CRDs and our generated
//! subset CRDs, core-kind round trips, metadata checks, snapshots.

use std::collections::HashMap;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use kinfer_builders::naming::{is_dns1123_subdomain, is_label_value};
use kinfer_crdcheck::{SchemaValidator, load_yaml_documents, shared_dir};
use kube::CustomResourceExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A resolved input from `tests/inputs/<name>.yaml`.
pub fn input<T: DeserializeOwned>(name: &str) -> T {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/inputs/{name}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

type Cache = Mutex<HashMap<String, Arc<SchemaValidator>>>;

/// The compiled validator of `upstream-crds/<path>` version `version`; `None` (skipped) when
/// the shared reference data is absent outside CI.
fn upstream(path: &str, version: &str) -> Option<Arc<SchemaValidator>> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let dir: PathBuf = shared_dir()?.join("upstream-crds").join(path);
    let key = format!("{path}@{version}");
    let cache = CACHE.get_or_init(Cache::default);
    if let Some(v) = cache.lock().expect("cache lock").get(&key) {
        return Some(Arc::clone(v));
    }
    let crd = load_yaml_documents(&dir)
        .into_iter()
        .next()
        .expect("one CRD document");
    let validator =
        Arc::new(SchemaValidator::from_crd(&crd, Some(version)).expect("schema compiles"));
    cache
        .lock()
        .expect("cache lock")
        .insert(key, Arc::clone(&validator));
    Some(validator)
}

/// Asserts `object` validates against the upstream CRD at `upstream-crds/<path>`.
pub fn assert_upstream_valid<T: Serialize>(object: &T, path: &str, version: &str) {
    let json = serde_json::to_value(object).expect("serialises");
    check_metadata(&json);
    let Some(validator) = upstream(path, version) else {
        return;
    };
    let errors = validator.errors(&json);
    assert!(errors.is_empty(), "{path} {version}: {errors:#?}\n{json:#}");
}

/// Asserts `object` validates against the CRD generated from its kinfer-api type and
/// round-trips through that type unchanged.
pub fn assert_ours_valid<K>(object: &K)
where
    K: CustomResourceExt + Serialize + DeserializeOwned + PartialEq + Debug,
{
    let crd = serde_json::to_value(K::crd()).expect("CRD serialises");
    let validator = SchemaValidator::from_crd(&crd, None).expect("our schema compiles");
    let json = serde_json::to_value(object).expect("serialises");
    let errors = validator.errors(&json);
    assert!(errors.is_empty(), "our {}: {errors:#?}", K::crd_name());
    let back: K = serde_json::from_value(json).expect("deserialises");
    assert_eq!(&back, object);
}

/// Asserts a core object is valid structurally, the rules the API server would enforce (and a
/// round trip through its own type cannot see): valid metadata, container port names (IANA
/// service names, at most 15 characters), extended-resource requests equal to limits, absolute
/// mount paths, unique volume names, and a workload's selector included in its pod labels.
pub fn assert_core_valid<T: Serialize>(object: &T) {
    let json = serde_json::to_value(object).expect("serialises");
    check_metadata(&json);
    check_pods(&json);
    if let (Some(selector), Some(labels)) = (
        json.pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object),
        json.pointer("/spec/template/metadata/labels")
            .and_then(Value::as_object),
    ) {
        for (k, v) in selector {
            assert_eq!(
                labels.get(k),
                Some(v),
                "selector {k}={v} not on the pod template"
            );
        }
    }
}

fn is_iana_svc_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 15
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Every object with a `containers` list, anywhere in `json` (pod specs, ServingRuntime and
/// InferenceService predictors).
pub fn pod_specs(json: &Value) -> Vec<&Value> {
    fn walk<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
        match v {
            Value::Object(m) => {
                if m.get("containers").is_some_and(Value::is_array) {
                    out.push(v);
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(json, &mut out);
    out
}

/// The containers (init containers included) of a pod spec.
pub fn containers(pod: &Value) -> Vec<&Value> {
    ["initContainers", "containers"]
        .iter()
        .filter_map(|k| pod[*k].as_array())
        .flatten()
        .collect()
}

fn check_pods(json: &Value) {
    for pod in pod_specs(json) {
        let mut volumes = std::collections::BTreeSet::new();
        for v in pod["volumes"].as_array().into_iter().flatten() {
            assert!(
                volumes.insert(v["name"].as_str().expect("volume name")),
                "duplicate volume"
            );
        }
        for c in containers(pod) {
            let cname = c["name"].as_str().expect("container name");
            for port in c["ports"].as_array().into_iter().flatten() {
                if let Some(name) = port["name"].as_str() {
                    assert!(is_iana_svc_name(name), "{cname}: port name {name}");
                }
            }
            for m in c["volumeMounts"].as_array().into_iter().flatten() {
                let path = m["mountPath"].as_str().expect("mount path");
                assert!(path.starts_with('/'), "{cname}: mount path {path}");
                let volume = m["name"].as_str().expect("mount volume");
                assert!(
                    volumes.is_empty() || volumes.contains(volume),
                    "{cname}: volume {volume}"
                );
            }
            let requests = c["resources"]["requests"].as_object();
            let limits = c["resources"]["limits"].as_object();
            for list in [requests, limits].into_iter().flatten() {
                for k in list.keys().filter(|k| k.contains('/')) {
                    assert_eq!(
                        requests.and_then(|r| r.get(k)),
                        limits.and_then(|l| l.get(k)),
                        "{cname}: extended resource {k} requests != limits"
                    );
                }
            }
        }
    }
}

/// Asserts every container of `object` runs under the restricted profile: no privilege
/// escalation, ALL capabilities dropped, non-root and RuntimeDefault seccomp (pod or
/// container level).
pub fn assert_restricted<T: Serialize>(object: &T) {
    let json = serde_json::to_value(object).expect("serialises");
    let pods = pod_specs(&json);
    assert!(!pods.is_empty(), "no pod spec");
    for pod in pods {
        let psc = &pod["securityContext"];
        for c in containers(pod) {
            let name = c["name"].as_str().unwrap_or("?");
            let sc = &c["securityContext"];
            assert_eq!(sc["allowPrivilegeEscalation"], false, "{name}");
            assert!(
                sc["capabilities"]["drop"]
                    .as_array()
                    .is_some_and(|d| d.iter().any(|x| x == "ALL")),
                "{name}: drops ALL"
            );
            assert!(
                sc["runAsNonRoot"] == true || psc["runAsNonRoot"] == true,
                "{name}: non-root"
            );
            assert!(
                sc["seccompProfile"]["type"] == "RuntimeDefault"
                    || psc["seccompProfile"]["type"] == "RuntimeDefault",
                "{name}: seccomp"
            );
        }
    }
}

/// Names are subdomains; label keys and values valid; no version label on anything.
fn check_metadata(json: &Value) {
    let meta = &json["metadata"];
    let name = meta["name"].as_str().expect("a name");
    assert!(is_dns1123_subdomain(name), "name {name}");
    let mut label_maps = vec![&meta["labels"]];
    for path in [
        "/spec/template/metadata/labels",
        "/spec/selector/matchLabels",
        "/spec/selector",
    ] {
        if let Some(v) = json.pointer(path) {
            label_maps.push(v);
        }
    }
    // `/spec/selector` is a label map on Services and a LabelSelector elsewhere.
    let maps = label_maps
        .into_iter()
        .filter_map(Value::as_object)
        .filter(|m| m.values().all(Value::is_string));
    for labels in maps {
        for (k, v) in labels {
            let v = v.as_str().unwrap_or("<not a string>");
            assert!(is_label_value(v), "label {k}={v}");
            assert!(!k.contains("version"), "version label {k} on {name}");
            let (prefix, key) = k.rsplit_once('/').unwrap_or(("", k));
            assert!(
                prefix.is_empty() || is_dns1123_subdomain(prefix),
                "label key {k}"
            );
            assert!(!key.is_empty() && key.len() <= 63, "label key {k}");
        }
    }
}

/// A YAML snapshot in `tests/snapshots/`.
#[macro_export]
macro_rules! snapshot {
    ($name:expr, $value:expr) => {{
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path("../snapshots");
        settings.set_prepend_module_to_snapshot(false);
        settings.bind(|| insta::assert_yaml_snapshot!($name, $value));
    }};
}
