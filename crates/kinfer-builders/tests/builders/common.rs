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

/// Asserts a core object round-trips through its k8s-openapi type unchanged (nothing set
/// that the type would drop) and has valid metadata.
pub fn assert_core_valid<T>(object: &T)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let json = serde_json::to_value(object).expect("serialises");
    check_metadata(&json);
    let text = serde_json::to_string(&json).expect("renders");
    let back: T = serde_json::from_str(&text).expect("deserialises");
    assert_eq!(&back, object);
    assert_eq!(serde_json::to_value(&back).expect("serialises"), json);
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
